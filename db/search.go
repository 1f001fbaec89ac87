package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"entgo.io/ent/dialect"

	"personnel/ent"
)

// SearchTable names the SQLite full-text index of a hierarchy table.
func SearchTable(table string) string { return table + "_search" }

// SearchMinRunes is the shortest search the trigram index can answer;
// shorter ones scan the folded column instead.
const SearchMinRunes = 3

// CountTable holds, on SQLite, the number of records of each hierarchy
// table.
const CountTable = "personnel_record_count"

// ensureSearchIndexes gives every hierarchy table on SQLite what SQLite
// cannot answer quickly from the table alone: a trigram full-text index
// over the folded code and name, which answers substring searches without
// scanning, and the table's row count, which COUNT(*) finds only by
// walking a whole index. Triggers keep both in step with the table inside
// the writing transaction, whoever writes. Each is (re)built from the
// table when it is new or its definition changed.
//
// PostgreSQL answers substring searches from trigram indexes instead (see
// ensureTrigramIndexes), and counts with COUNT(*) as MySQL does.
func (d *DB) ensureSearchIndexes(ctx context.Context) error {
	if d.Postgres() {
		return d.ensureTrigramIndexes(ctx)
	}
	if d.Dialect != dialect.SQLite {
		return nil
	}
	return d.InTx(ctx, func(tx *ent.Client) error {
		if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+CountTable+"` (`table_name` TEXT NOT NULL PRIMARY KEY, `records` INTEGER NOT NULL)"); err != nil {
			return err
		}
		for _, c := range ent.ResourceTables() {
			if err := ensureSearchIndex(ctx, tx, c); err != nil {
				return fmt.Errorf("search index of %s: %w", c.Table, err)
			}
			if err := ensureCount(ctx, tx, c.Table); err != nil {
				return fmt.Errorf("record count of %s: %w", c.Table, err)
			}
		}
		return nil
	})
}

// ensureCount keeps the record count of table by triggers, recounting
// when the triggers are new or missing.
func ensureCount(ctx context.Context, tx *ent.Client, table string) error {
	name := table + "_count"
	triggers := []string{
		"CREATE TRIGGER " + q(name+"_delete") + " AFTER DELETE ON " + q(table) +
			" BEGIN UPDATE " + q(CountTable) + " SET `records` = `records` - 1 WHERE `table_name` = '" + table + "'; END",
		"CREATE TRIGGER " + q(name+"_insert") + " AFTER INSERT ON " + q(table) +
			" BEGIN UPDATE " + q(CountTable) + " SET `records` = `records` + 1 WHERE `table_name` = '" + table + "'; END",
	}
	have, err := schemaSQL(ctx, tx, name+"_delete", name+"_insert")
	if err != nil {
		return err
	}
	if slices.Equal(have, triggers) {
		return nil
	}
	stmts := []string{"DROP TRIGGER IF EXISTS " + q(name+"_delete"), "DROP TRIGGER IF EXISTS " + q(name+"_insert")}
	stmts = append(stmts, triggers...)
	stmts = append(stmts, "INSERT OR REPLACE INTO "+q(CountTable)+" (`table_name`, `records`) SELECT '"+table+"', COUNT(*) FROM "+q(table))
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// q quotes an identifier for SQLite, the only database these statements
// are for.
func q(ident string) string { return (&SQL{}).Ident(ident).String() }

// schemaSQL returns the definitions of the named schema objects that
// exist: tables first, then the rest, each group by name.
func schemaSQL(ctx context.Context, tx *ent.Client, names ...string) ([]string, error) {
	args := make([]any, len(names))
	marks := make([]string, len(names))
	for i, n := range names {
		args[i], marks[i] = n, "?"
	}
	rows, err := tx.QueryContext(ctx, "SELECT sql FROM sqlite_master WHERE name IN ("+strings.Join(marks, ", ")+") ORDER BY type DESC, name", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var have []string
	for rows.Next() {
		var sql stdsql.NullString
		if err := rows.Scan(&sql); err != nil {
			return nil, err
		}
		have = append(have, sql.String)
	}
	return have, rows.Err()
}

func ensureSearchIndex(ctx context.Context, tx *ent.Client, c ent.ResourceTable) error {
	fts, t := SearchTable(c.Table), c.Table
	quoted := func(prefix string) string {
		cols := make([]string, len(c.Search))
		for i, col := range c.Search {
			cols[i] = prefix + q(col)
		}
		return strings.Join(cols, ", ")
	}
	cols := quoted("")
	create := "CREATE VIRTUAL TABLE " + q(fts) + " USING fts5(" + cols + ", content=" + q(t) +
		", content_rowid=" + q(c.ID) + ", tokenize='trigram case_sensitive 1')"
	newRow := "INSERT INTO " + q(fts) + "(rowid, " + cols + ") VALUES (new." + q(c.ID) + ", " + quoted("new.") + ");"
	oldRow := "INSERT INTO " + q(fts) + "(" + q(fts) + ", rowid, " + cols + ") VALUES ('delete', old." + q(c.ID) + ", " + quoted("old.") + ");"
	triggers := []string{
		"CREATE TRIGGER " + q(fts+"_insert") + " AFTER INSERT ON " + q(t) + " BEGIN " + newRow + " END",
		"CREATE TRIGGER " + q(fts+"_delete") + " AFTER DELETE ON " + q(t) + " BEGIN " + oldRow + " END",
		"CREATE TRIGGER " + q(fts+"_update") + " AFTER UPDATE OF " + cols + " ON " + q(t) + " BEGIN " + oldRow + " " + newRow + " END",
	}
	// The index is current when the table and all three triggers exist as
	// defined here; anything else (a new resource, renamed fields, triggers
	// dropped by an interrupted bulk load) rebuilds it.
	have, err := schemaSQL(ctx, tx, fts, fts+"_delete", fts+"_insert", fts+"_update")
	if err != nil {
		return err
	}
	// Ordered as the query orders them: the table, then the triggers by name.
	if slices.Equal(have, []string{create, triggers[1], triggers[0], triggers[2]}) {
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

// BulkLoad runs load, which inserts many records into table, as fast as
// SQLite allows: with a large page cache on the writer, and without the
// table's search index triggers, its index being rebuilt once at the end.
// Other tables keep their triggers, so their indexes are not rebuilt. An
// interrupted load leaves the triggers missing, which the next migration
// notices and repairs. On PostgreSQL it vacuums and analyzes the database
// afterwards, as autovacuum would some time later: until then the planner
// knows nothing of the new rows (it planned the recursive hierarchy
// queries with scans several times slower than their index plans), and
// index-only scans, which deep pages and counts rely on, visit the table
// for every entry whose page is not yet marked all-visible (a deep page
// at 1,000,000 records took 14 ms instead of 6.6 ms). On MySQL it just
// runs load.
func (d *DB) BulkLoad(ctx context.Context, table string, load func() error) error {
	if d.Postgres() {
		if err := load(); err != nil {
			return err
		}
		// Not in a transaction: VACUUM refuses to run in one.
		_, err := d.Write().ExecContext(ctx, "VACUUM (ANALYZE)")
		return err
	}
	if d.Dialect != dialect.SQLite {
		return load()
	}
	if !slices.ContainsFunc(ent.ResourceTables(), func(c ent.ResourceTable) bool { return c.Table == table }) {
		return fmt.Errorf("bulk load: no resource table %q", table)
	}
	w := d.Write()
	if _, err := w.ExecContext(ctx, "PRAGMA cache_size = -65536"); err != nil {
		return err
	}
	defer w.ExecContext(context.WithoutCancel(ctx), "PRAGMA cache_size = -2000")
	err := d.InTx(ctx, func(tx *ent.Client) error {
		fts := SearchTable(table)
		for _, t := range []string{"_insert", "_delete", "_update"} {
			if _, err := tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS `"+fts+t+"`"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	loadErr := load()
	if err := d.ensureSearchIndexes(context.WithoutCancel(ctx)); err != nil {
		return errors.Join(loadErr, fmt.Errorf("rebuilding the search index: %w", err))
	}
	return loadErr
}
