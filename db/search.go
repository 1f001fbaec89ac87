package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"

	"entgo.io/ent/dialect"

	"personnel/ent"
)

// SearchTable names the SQLite full-text index of a hierarchy table.
func SearchTable(table string) string { return table + "_search" }

// SearchMinRunes is the shortest search the trigram index can answer;
// shorter ones scan the folded column instead.
const SearchMinRunes = 3

// ensureSearchIndexes gives every hierarchy table on SQLite a trigram
// full-text index over its folded code and name, which answers substring
// searches without scanning the table. Triggers keep the index in step
// with the table inside the writing transaction, whoever writes. The
// index is (re)built from the table when it is new or its definition
// changed.
func (d *DB) ensureSearchIndexes(ctx context.Context) error {
	if d.Dialect != dialect.SQLite {
		return nil
	}
	return d.InTx(ctx, func(tx *ent.Client) error {
		for _, c := range ent.HierarchyTables() {
			if err := ensureSearchIndex(ctx, tx, c); err != nil {
				return fmt.Errorf("search index of %s: %w", c.Table, err)
			}
		}
		return nil
	})
}

func ensureSearchIndex(ctx context.Context, tx *ent.Client, c ent.HierarchyColumns) error {
	q := func(ident string) string { return "`" + ident + "`" }
	fts, t := SearchTable(c.Table), c.Table
	cols := q(c.CodeFold) + ", " + q(c.NameFold)
	create := "CREATE VIRTUAL TABLE " + q(fts) + " USING fts5(" + cols + ", content=" + q(t) +
		", content_rowid=" + q(c.ID) + ", tokenize='trigram case_sensitive 1')"
	newRow := "INSERT INTO " + q(fts) + "(rowid, " + cols + ") VALUES (new." + q(c.ID) + ", new." + q(c.CodeFold) + ", new." + q(c.NameFold) + ");"
	oldRow := "INSERT INTO " + q(fts) + "(" + q(fts) + ", rowid, " + cols + ") VALUES ('delete', old." + q(c.ID) + ", old." + q(c.CodeFold) + ", old." + q(c.NameFold) + ");"
	triggers := []string{
		"CREATE TRIGGER " + q(fts+"_insert") + " AFTER INSERT ON " + q(t) + " BEGIN " + newRow + " END",
		"CREATE TRIGGER " + q(fts+"_delete") + " AFTER DELETE ON " + q(t) + " BEGIN " + oldRow + " END",
		"CREATE TRIGGER " + q(fts+"_update") + " AFTER UPDATE OF " + cols + " ON " + q(t) + " BEGIN " + oldRow + " " + newRow + " END",
	}
	var existing string
	rows, err := tx.QueryContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", fts)
	if err != nil {
		return err
	}
	if rows.Next() {
		err = rows.Scan(&existing)
	}
	rows.Close()
	if err != nil && !errors.Is(err, stdsql.ErrNoRows) {
		return err
	}
	if existing == create {
		return nil
	}
	stmts := []string{
		"DROP TRIGGER IF EXISTS " + q(fts+"_insert"),
		"DROP TRIGGER IF EXISTS " + q(fts+"_delete"),
		"DROP TRIGGER IF EXISTS " + q(fts+"_update"),
		"DROP TABLE IF EXISTS " + q(fts),
		create,
	}
	stmts = append(stmts, triggers...)
	stmts = append(stmts, "INSERT INTO "+q(fts)+"("+q(fts)+") VALUES ('rebuild')")
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}
