package db

import (
	"context"
	"fmt"
	"math/rand/v2"

	"personnel/ent"
)

// The change number of a resource table counts the writes it has
// committed: every insert, update and delete adds 1 to it, in its own
// transaction,
//
//	<table>_changes (slot, changes), PRIMARY KEY (slot)
//
// as the sum of changeSlots rows, each write adding to one chosen at
// random, so that concurrent writers seldom queue on one row lock (one row
// on SQLite, whose writers are serialised anyway).
//
// A replica may then keep what it computed from the table (the count of a
// search: resource/countcache.go) beside the change number it read in the
// same statement, and use it again while the change number a later
// statement reads is the same: slots only grow, and snapshots only gain
// commits, so two snapshots whose sums agree hold the same writes, in
// whichever order they were taken. Nothing kept that way can be stale,
// whichever replica wrote. The number never goes back: a rebuild (reindex)
// adds to it, so that what any replica kept before is never used again.
//
// Like the other derived structures it is trusted only once every writer
// keeps it (derived.go): a replica of an earlier version, during a rolling
// upgrade, writes the table without adding to it.

// ChangeStructure names the change number of a resource table among its
// derived structures.
const ChangeStructure = "change number"

var changeKind = &structureKind{
	of: func(t ent.ResourceTable) []Structure {
		return []Structure{{Name: ChangeStructure}}
	},
	create:  createChanges,
	rebuild: rebuildChanges,
}

// changeSlots is how many rows share a table's change number: more than
// share its count, since every update adds to it too, and holds its
// slot's row lock until it commits. A read sums them all, a range of the
// primary key.
const changeSlots = 64

// ChangeTable names the table of the change number of table.
func ChangeTable(table string) string { return shortName(table + "_changes") }

// createChanges creates the change number table of s, with its slots, when
// it is missing, and reports whether it was. It issues nothing when the
// table exists: a reindex runs it while writes go on, and on SQLite a new
// statement on the one write connection would wait for the writer.
func createChanges(ctx context.Context, d *DB, s Structure) (bool, error) {
	c := ChangeTable(s.Table.Table)
	exists, err := d.exists(ctx, c, "")
	if err != nil || exists {
		return false, err
	}
	_, options := d.sideTable()
	table := d.SQL().Raw("CREATE TABLE ").Ident(c).Raw(" (").Ident("slot").Raw(" INTEGER NOT NULL PRIMARY KEY, ").
		Ident("changes").Raw(" BIGINT NOT NULL)" + options)
	rows := d.SQL().Raw("INSERT INTO ").Ident(c).Raw(" (").Ident("slot").Raw(", ").Ident("changes").Raw(") VALUES ")
	rows.List(changeSlots, func(i int) { rows.Raw("(").Arg(i).Raw(", 0)") })
	for _, st := range []*SQL{table, rows} {
		if _, err := d.write.ExecContext(ctx, st.String(), st.Args...); err != nil {
			return false, fmt.Errorf("%s: %w", st.String(), err)
		}
	}
	return true, nil
}

// rebuildChanges adds 1 to every slot of the change number of s: there is
// nothing to count again, but what replicas kept while writes went
// unnumbered (behind the service's back, or by an earlier version) must
// not be used again.
func rebuildChanges(ctx context.Context, d *DB, s Structure) (int, error) {
	st := d.SQL().Raw("UPDATE ").Ident(ChangeTable(s.Table.Table)).Raw(" SET ").Ident("changes").Raw(" = ").Ident("changes").Raw(" + 1")
	// Through a transaction of the store's, as every write that runs
	// beside the service's own (on SQLite, its writer's).
	return 0, d.InTx(ctx, func(tx *ent.Client) error {
		_, err := tx.ExecContext(ctx, st.String())
		return err
	})
}

// changed adds 1 to slot of the change number of table, in tx, the
// transaction of the write it numbers (to slot 0 on SQLite, whose writers
// are serialised).
func (d *DB) changed(ctx context.Context, tx Execer, table string, slot int) error {
	if d.SQLite() {
		slot = 0
	}
	st := d.SQL().Raw("UPDATE ").Ident(ChangeTable(table)).Raw(" SET ").Ident("changes").Raw(" = ").Ident("changes").Raw(" + 1 WHERE ").
		Ident("slot").Raw(" = ").Arg(slot % changeSlots)
	res, err := tx.ExecContext(ctx, st.String(), st.Args...)
	if err != nil {
		return err
	}
	// A write left unnumbered would let kept counts outlive it: refuse it.
	if n, err := res.RowsAffected(); err == nil && n != 1 {
		return fmt.Errorf("change number of %s: slot %d missing", table, slot%changeSlots)
	}
	return nil
}

// Updated numbers an update of records of table, in tx, its transaction.
// Inserts and deletes are numbered by Counted.
func (d *DB) Updated(ctx context.Context, tx Execer, table string) error {
	return d.changed(ctx, tx, table, rand.IntN(changeSlots))
}

// ChangeNumber writes a scalar subquery that gives the change number of
// table, so that a statement reads it beside what it computes, from the
// same snapshot.
func (d *DB) ChangeNumber(s *SQL, table string) *SQL {
	return s.Raw("(SELECT COALESCE(SUM(").Ident("changes").Raw("), 0) FROM ").Ident(ChangeTable(table)).Raw(")")
}
