package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"

	"entgo.io/ent/dialect"

	"personnel/ent"
)

// The number of records of each resource table, kept so that an
// unfiltered list does not count the table. SQLite keeps it with triggers
// (ensureCountTriggers, below). MySQL and MariaDB (and any database without them) keep
// it here, by the service, in the same transaction as every insert and
// delete: countSlots rows per table in personnel_count_slot, each write
// adding to one chosen at random, so that concurrent writers seldom queue
// on one row lock; the count is their sum.
//
// A count kept by the service goes wrong if anything else writes the
// table, in particular replicas of a version that did not keep counts,
// still running during a rolling upgrade. So a count is used only once it
// is trusted: at once for a table this version created, and for a table
// that existed before counts were kept, after `personnel recount` (which
// the README says to run once the last replica of the earlier version is
// gone). Every start recounts, under the slots' row locks, and mends a
// count that has drifted.

// countSlots is how many rows share a table's count.
const countSlots = 8

// CountTable holds, on SQLite, the number of records of each resource
// table.
const CountTable = "personnel_record_count"

// KeepsCounts reports whether the service must keep counts itself: on
// every database but SQLite, whose triggers keep them.
func (d *DB) KeepsCounts() bool { return d.Dialect != dialect.SQLite }

// Execer runs a statement: an Ent client or transaction, or (for bulk
// loads that bypass Ent) an adapter over the driver's own transaction. The
// statements that keep derived data in step with a write take one, so
// they run in the write's transaction whichever way it was opened.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error)
}

// addToCount adds delta to slot of the count of table, in tx, the
// transaction of the insert or delete it counts. On SQLite it does
// nothing: triggers keep the count there.
func (d *DB) addToCount(ctx context.Context, tx Execer, table string, delta, slot int) error {
	if !d.KeepsCounts() || delta == 0 {
		return nil
	}
	s := d.SQL().Raw("UPDATE ").Ident("personnel_count_slot").Raw(" SET ").Ident("records").Raw(" = ").Ident("records").Raw(" + ").Param().
		Raw(" WHERE ").Ident("table_name").Raw(" = ").Param().Raw(" AND ").Ident("slot").Raw(" = ").Param()
	_, err := tx.ExecContext(ctx, s.String(), delta, table, slot)
	return err
}

// Counted adds sign (1 or -1) to what is kept of the count of the records
// ids of table, just inserted or deleted in tx: the count of the table and
// that of each record's block of ids (idblocks.go), and it numbers the
// write (changes.go). All take the same slot, the blocks' first, so that
// two concurrent creates, which add to the same block, either meet at the
// first or at none.
func (d *DB) Counted(ctx context.Context, tx Execer, table string, ids []int, sign int) error {
	if len(ids) == 0 {
		return nil
	}
	slot := rand.IntN(countSlots)
	if err := d.countIDs(ctx, tx, table, ids, sign, slot%d.slots()); err != nil {
		return err
	}
	if err := d.addToCount(ctx, tx, table, sign*len(ids), slot); err != nil {
		return err
	}
	return d.changed(ctx, tx, table, slot)
}

// StoredCount returns the count of table, and false when there is none to
// trust yet (the caller then counts the table).
func (d *DB) StoredCount(ctx context.Context, table string) (int, bool, error) {
	var n, trusted, slots int64
	var err error
	if d.KeepsCounts() {
		s := d.SQL().Raw("SELECT COALESCE(SUM(").Ident("records").Raw("), 0), COALESCE(MIN(").Ident("trusted").Raw("), 0), COUNT(*) FROM ").
			Ident("personnel_count_slot").Raw(" WHERE ").Ident("table_name").Raw(" = ").Param()
		err = QueryRow(ctx, d.read, s.String(), []any{table}, &n, &trusted, &slots)
	} else {
		slots, trusted = countSlots, 1
		err = QueryRow(ctx, d.read, "SELECT `records` FROM `"+CountTable+"` WHERE `table_name` = ?", []any{table}, &n)
	}
	if err != nil {
		return 0, false, err
	}
	return int(n), slots == countSlots && trusted == 1, nil
}

// KeptCount writes a scalar subquery that gives the count kept for table,
// trusted or not (0 when there is none), so that a statement can read it
// beside what it counts itself, in one round trip: the search planner
// weighs it.
func (d *DB) KeptCount(s *SQL, table string) *SQL {
	if d.KeepsCounts() {
		return s.Raw("(SELECT COALESCE(SUM(").Ident("records").Raw("), 0) FROM ").Ident("personnel_count_slot").
			Raw(" WHERE ").Ident("table_name").Raw(" = ").Arg(table).Raw(")")
	}
	return s.Raw("(SELECT COALESCE(MAX(").Ident("records").Raw("), 0) FROM ").Ident(CountTable).
		Raw(" WHERE ").Ident("table_name").Raw(" = ").Arg(table).Raw(")")
}

// existingTables returns the resource tables that exist, before a
// migration creates the missing ones.
func (d *DB) existingTables(ctx context.Context) (map[string]bool, error) {
	have := map[string]bool{}
	if !d.KeepsCounts() {
		return have, nil
	}
	schemaOf := "DATABASE()"
	if d.Dialect == dialect.Postgres {
		schemaOf = "current_schema()"
	}
	rows, err := d.write.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = "+schemaOf)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}

// reconcileCounts recounts every resource table under its slots' row
// locks (so no write counts meanwhile) and mends a count that drifted.
// Slots are made for a table that has none: trusted when this migration
// created the table (existed says it did not exist before), untrusted
// otherwise. trust marks every count trusted (personnel recount).
func (d *DB) reconcileCounts(ctx context.Context, existed map[string]bool, trust bool) error {
	if !d.KeepsCounts() {
		return nil
	}
	for _, t := range ent.ResourceTables() {
		err := d.InTx(ctx, func(tx *ent.Client) error {
			lock := d.SQL().Raw("SELECT ").Ident("records").Raw(", ").Ident("trusted").Raw(" FROM ").Ident("personnel_count_slot").
				Raw(" WHERE ").Ident("table_name").Raw(" = ").Param().Raw(" FOR UPDATE")
			rows, err := tx.QueryContext(ctx, lock.String(), t.Table)
			if err != nil {
				return err
			}
			var slots int
			var sum, minTrusted int64 = 0, 1
			for rows.Next() {
				var records, trusted int64
				if err := rows.Scan(&records, &trusted); err != nil {
					rows.Close()
					return err
				}
				slots, sum, minTrusted = slots+1, sum+records, min(minTrusted, trusted)
			}
			// A lock the rows could not get (a deadlock, a timeout) ends
			// the rows with an error, which Close does not return.
			if err := errors.Join(rows.Err(), rows.Close()); err != nil {
				return err
			}
			var n int64
			if err := QueryRow(ctx, tx, d.SQL().Raw("SELECT COUNT(*) FROM ").Ident(t.Table).String(), nil, &n); err != nil {
				return err
			}
			trusted := minTrusted
			switch {
			case slots == 0:
				trusted = 0
				if !existed[t.Table] {
					trusted = 1
				}
			case slots == countSlots && sum == n && (minTrusted == 1 || !trust):
				return nil
			case minTrusted == 1 && sum != n:
				slog.Warn("a stored record count had drifted (was the table written by another program?); recounted",
					"table", t.Table, "stored", sum, "records", n)
			}
			if trust {
				trusted = 1
			}
			del := d.SQL().Raw("DELETE FROM ").Ident("personnel_count_slot").Raw(" WHERE ").Ident("table_name").Raw(" = ").Param()
			if _, err := tx.ExecContext(ctx, del.String(), t.Table); err != nil {
				return err
			}
			ins := d.SQL().Raw("INSERT INTO ").Ident("personnel_count_slot").Raw(" (").Ident("table_name").Raw(", ").Ident("slot").Raw(", ").
				Ident("records").Raw(", ").Ident("trusted").Raw(") VALUES ")
			var args []any
			ins.List(countSlots, func(i int) {
				ins.Raw("(").Param().Raw(", ").Param().Raw(", ").Param().Raw(", ").Param().Raw(")")
				records := int64(0)
				if i == 0 {
					records = n
				}
				args = append(args, t.Table, i, records, trusted)
			})
			_, err = tx.ExecContext(ctx, ins.String(), args...)
			return err
		})
		if err != nil {
			return fmt.Errorf("record count of %s: %w", t.Table, err)
		}
	}
	return nil
}

// Recount counts every resource table again and trusts the counts from
// then on: what an operator runs once no replica of a version that did not
// keep counts is left (README, "Upgrading").
func (d *DB) Recount(ctx context.Context) error {
	return d.reconcileCounts(ctx, nil, true)
}

// QueryRow runs a one-row query on c and scans the row into dest; no row
// is sql.ErrNoRows. Unlike database/sql's QueryRow it takes an Ent
// client, a transaction's included, and goes through its statement cache.
func QueryRow(ctx context.Context, c *ent.Client, query string, args []any, dest ...any) error {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return stdsql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

// ensureCountTriggers keeps, on SQLite, the row count of every resource
// table by triggers, which COUNT(*) finds only by walking a whole index.
// The triggers keep it in step inside the writing transaction, whoever
// writes; a count is made again from the table when its triggers are new
// or their definition changed.
func (d *DB) ensureCountTriggers(ctx context.Context) error {
	if !d.SQLite() {
		return nil
	}
	return d.InTx(ctx, func(tx *ent.Client) error {
		if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS `"+CountTable+"` (`table_name` TEXT NOT NULL PRIMARY KEY, `records` INTEGER NOT NULL)"); err != nil {
			return err
		}
		for _, c := range ent.ResourceTables() {
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
// exist on SQLite: tables first, then the rest, each group by name.
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
