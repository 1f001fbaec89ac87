package db

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"personnel/ent"
)

// The count of a subtree is kept beside its closure, so that a page of
// descendants does not count the closure's range (5,096 index entries for
// a subtree of that size, most of the request on MySQL and PostgreSQL):
//
//	<table>_below (ancestor, slot, records), PRIMARY KEY (ancestor, slot)
//
// The records below a record are the sum of its rows. A write adds to one
// slot, chosen at random, of each ancestor it changes (subtreeSlots of
// them on MySQL and PostgreSQL, so that concurrent creates below one root
// seldom queue on one row lock, as personnel_count_slot does for a
// table's count; one on SQLite, whose writer is serialised), by an upsert
// in ancestor order, late in the write's transaction, since every write
// below a root locks that root's row until it commits:
//
//   - a create adds 1 to each ancestor its closure rows name, just linked
//     from the table (so right whatever the rest of the closure says);
//   - a move, holding its subtree's locks (MoveClosure), takes the
//     subtree's size from the ancestors it leaves and adds it to those it
//     joins;
//   - a delete, the record locked and without children, takes 1 from each
//     ancestor and drops the record's own rows.
//
// A rebuild needs no lock: for a batch of records, one statement reads
// each one's descendants in the closure less the sum of its rows, and that
// difference is then added to a slot. The statement reads both from one
// snapshot (READ COMMITTED gives each statement its own; SQLite has one
// writer), in which a concurrent write, whose closure rows and counts
// commit together, is either whole or absent; what a write adds after the
// snapshot is added on top of the difference, in any order. The rebuild
// runs after the closure's, which it counts.

// SubtreeCountStructure names a hierarchy's kept subtree counts among its
// table's derived structures.
const SubtreeCountStructure = "subtree count"

// subtreeSlots is how many rows may share the count of one subtree.
const subtreeSlots = 8

// SubtreeCountTable names the table of the kept subtree counts of table.
func SubtreeCountTable(table string) string { return shortName(table + "_below") }

var subtreeCountKind = &structureKind{
	of: func(t ent.ResourceTable) []Structure {
		if t.Parent == "" {
			return nil
		}
		return []Structure{{Name: SubtreeCountStructure}}
	},
	create:  createSubtreeCounts,
	rebuild: rebuildSubtreeCounts,
}

// createSubtreeCounts creates the count table of s when it is missing, and
// reports whether it was. It has no foreign key: inserting a count would
// then share-lock the ancestor's record, which a move of that ancestor
// holds while it waits for the records below (MoveClosure), a deadlock.
// A delete drops the record's counts itself.
func createSubtreeCounts(ctx context.Context, d *DB, s Structure) (bool, error) {
	c := SubtreeCountTable(s.Table.Table)
	exists, err := d.exists(ctx, c, "")
	if err != nil || exists {
		return false, err
	}
	idType, options := d.sideTable()
	table := d.SQL().Raw("CREATE TABLE ").Ident(c).Raw(" (").Ident("ancestor").Raw(" " + idType + " NOT NULL, ").
		Ident("slot").Raw(" INTEGER NOT NULL, ").Ident("records").Raw(" BIGINT NOT NULL, ").
		Raw("PRIMARY KEY (").Ident("ancestor").Raw(", ").Ident("slot").Raw("))" + options)
	if _, err := d.write.ExecContext(ctx, table.String()); err != nil {
		return false, fmt.Errorf("%s: %w", table.String(), err)
	}
	return true, nil
}

// slots is how many rows share one subtree or block count: one on SQLite,
// whose writer is serialised.
func (d *DB) slots() int {
	if d.SQLite() {
		return 1
	}
	return subtreeSlots
}

// slot picks the row of a count that a write adds to.
func (d *DB) slot() int { return rand.IntN(d.slots()) }

// addToCounts ends s, an INSERT INTO the count table c of (key, slot,
// records), with the clause that adds records to a row already there.
func (d *DB) addToCounts(s *SQL, c, key string) *SQL {
	if d.MySQL() {
		return s.Raw(" ON DUPLICATE KEY UPDATE ").Ident("records").Raw(" = ").Ident("records").Raw(" + VALUES(").Ident("records").Raw(")")
	}
	return s.Raw(" ON CONFLICT (").Ident(key).Raw(", ").Ident("slot").Raw(") DO UPDATE SET ").Ident("records").Raw(" = ").
		Col(c, "records").Raw(" + ").Col("excluded", "records")
}

// CountBelow adds sign (1 or -1) to the subtree count of every ancestor of
// each record ids of table, in tx, as the records' closure rows name them:
// after linking new records (+1), or before deleting a locked record
// without children (-1, with DropCounts).
func (d *DB) CountBelow(ctx context.Context, tx Execer, table string, ids []int, sign int) error {
	c := SubtreeCountTable(table)
	slot := d.slot()
	return d.chunks(ids, func(ids []int) error {
		s := d.SQL().Raw("INSERT INTO ").Ident(c).Raw(" (").Ident("ancestor").Raw(", ").Ident("slot").Raw(", ").Ident("records").
			Raw(") SELECT ").Ident("ancestor").Raw(", ").Arg(slot).Raw(", COUNT(*) * ").Arg(sign).Raw(" FROM ").Ident(ClosureTable(table)).
			Raw(" WHERE ")
		d.inIDs(s, "descendant", ids).Raw(" AND ").Ident("depth").Raw(" > 0 GROUP BY ").Ident("ancestor").
			Raw(" ORDER BY ").Ident("ancestor")
		d.addToCounts(s, c, "ancestor")
		_, err := tx.ExecContext(ctx, s.String(), s.Args...)
		return err
	})
}

// DropCounts deletes, in tx, the subtree counts of the record id of table,
// which is being deleted (it has no records below it, so they sum to 0).
func (d *DB) DropCounts(ctx context.Context, tx Execer, table string, id int) error {
	s := d.SQL().Raw("DELETE FROM ").Ident(SubtreeCountTable(table)).Raw(" WHERE ").Ident("ancestor").Raw(" = ").Arg(id)
	_, err := tx.ExecContext(ctx, s.String(), s.Args...)
	return err
}

// moveCounts takes size from the subtree counts of the ancestors in from
// that are not in to, and adds it to those of to not in from.
func (d *DB) moveCounts(ctx context.Context, tx Execer, table string, from, to []int, size int) error {
	delta := map[int]int{}
	for _, a := range from {
		delta[a] -= size
	}
	for _, a := range to {
		delta[a] += size
	}
	return d.addCounts(ctx, tx, table, delta)
}

// addCounts adds delta[a] to the subtree count of each record a of table,
// in tx.
func (d *DB) addCounts(ctx context.Context, tx Execer, table string, delta map[int]int) error {
	return d.addToCountTable(ctx, tx, SubtreeCountTable(table), "ancestor", delta, d.slot())
}

// addToCountTable adds delta[k] to slot of the count of each k in the
// count table c of (key, slot, records), in tx, in key order: the order of
// every other upsert, so that two writes never wait on each other's rows.
func (d *DB) addToCountTable(ctx context.Context, tx Execer, c, key string, delta map[int]int, slot int) error {
	var keys []int
	for k, n := range delta {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for start := 0; start < len(keys); start += closureChunk {
		part := keys[start:min(start+closureChunk, len(keys))]
		s := d.SQL().Raw("INSERT INTO ").Ident(c).Raw(" (").Ident(key).Raw(", ").Ident("slot").Raw(", ").Ident("records").Raw(") VALUES ")
		s.List(len(part), func(i int) {
			s.Raw("(").Arg(part[i]).Raw(", ").Arg(slot).Raw(", ").Arg(delta[part[i]]).Raw(")")
		})
		d.addToCounts(s, c, key)
		if _, err := tx.ExecContext(ctx, s.String(), s.Args...); err != nil {
			return err
		}
	}
	return nil
}

// rebuildSubtreeCounts makes the subtree counts of s match its closure, a
// batch of records at a time: one statement reads, for each record, its
// descendants in the closure less the sum of its counts, and the
// difference is then added to its counts (see the top of this file for
// why concurrent writes need no lock).
func rebuildSubtreeCounts(ctx context.Context, d *DB, s Structure) (int, error) {
	t := s.Table
	c, cl := SubtreeCountTable(t.Table), ClosureTable(t.Table)
	sel := d.SQL().Raw("SELECT ").Ident(t.ID).Raw(" FROM ").Ident(t.Table).Raw(" WHERE ").Ident(t.ID).Raw(" > ").Param().
		Raw(" ORDER BY ").Ident(t.ID).Raw(" LIMIT ").Param().String()
	total, after := 0, 0
	for {
		ids, err := queryInts(ctx, d.write, sel, after, rebuildBatch)
		if err != nil || len(ids) == 0 {
			return total, err
		}
		diff := d.SQL().Raw("SELECT ").Ident("id").Raw(", ").Ident("diff").Raw(" FROM (SELECT ").Col("r", t.ID).Raw(" AS ").Ident("id").
			Raw(", (SELECT COUNT(*) FROM ").Ident(cl).Raw(" AS ").Ident("cl").Raw(" WHERE ").Col("cl", "ancestor").Raw(" = ").Col("r", t.ID).
			Raw(" AND ").Col("cl", "depth").Raw(" > 0) - (SELECT COALESCE(SUM(").Col("b", "records").Raw("), 0) FROM ").Ident(c).
			Raw(" AS ").Ident("b").Raw(" WHERE ").Col("b", "ancestor").Raw(" = ").Col("r", t.ID).Raw(") AS ").Ident("diff").
			Raw(" FROM ").Ident(t.Table).Raw(" AS ").Ident("r").Raw(" WHERE ").Col("r", t.ID)
		d.inList(diff, ids).Raw(") AS ").Ident("d").Raw(" WHERE ").Ident("diff").Raw(" <> 0")
		// One transaction, so that on SQLite no write comes between the
		// two statements (elsewhere it would do no harm).
		err = d.InTx(ctx, func(tx *ent.Client) error {
			delta := map[int]int{}
			err := queryRows(ctx, tx, diff.String(), func(scan func(dest ...any) error) error {
				var id, n int
				err := scan(&id, &n)
				delta[id] = n
				return err
			}, diff.Args...)
			if err != nil {
				return err
			}
			return d.addCounts(ctx, tx, t.Table, delta)
		})
		if err != nil {
			return total, err
		}
		total += len(ids)
		after = ids[len(ids)-1]
	}
}
