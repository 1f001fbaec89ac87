package db

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"personnel/ent"
)

// A deep page in id order (page 5,000 of 10 steps over 49,990 records) is
// found without stepping over every record before it: the records of each
// block of idBlock ids are counted beside the table,
//
//	<table>_blocks (block, slot, records), PRIMARY KEY (block, slot)
//
// so that the page's offset is first looked for among the block counts (a
// few rows per 4,096 records) and then stepped over within its block
// only. A block's count is the sum of its rows; a write adds to one slot
// chosen at random, as subtree counts do (subtree.go), since every create
// adds to the newest block: a create adds 1 to its id's block, a delete
// takes 1, bulk loads add a batch at a time, in block order and in the
// write's transaction. Ids never change, so no other write touches them.
//
// A page read from the blocks checks, in the statement that reads it, that
// the records before its block are still as many as the blocks said
// (RecordsBefore), so a write between the two statements cannot shift it.
//
// A rebuild needs no lock, for the reason the subtree counts' needs none:
// one statement reads, from one snapshot, each block's records in the
// table less its kept count, in which a write (whose row and count commit
// together) is whole or absent; the difference is then added, and what a
// write adds after the snapshot lands on top of it.

// IDBlockStructure names the block counts of a resource table among its
// derived structures.
const IDBlockStructure = "id blocks"

// idBlock is how many ids one block count covers: a page is looked for
// among the blocks before its own (their rows are read in order), then
// stepped to over at most idBlock records.
const idBlock = 4096

// idBlockBatch is how many blocks one statement of a rebuild counts.
const idBlockBatch = 16

// IDBlockTable names the table of the block counts of table.
func IDBlockTable(table string) string { return shortName(table + "_blocks") }

var idBlockKind = &structureKind{
	of: func(t ent.ResourceTable) []Structure {
		return []Structure{{Name: IDBlockStructure}}
	},
	create:  createIDBlocks,
	rebuild: rebuildIDBlocks,
}

// createIDBlocks creates the block count table of s when it is missing,
// and reports whether it was.
func createIDBlocks(ctx context.Context, d *DB, s Structure) (bool, error) {
	c := IDBlockTable(s.Table.Table)
	exists, err := d.exists(ctx, c, "")
	if err != nil || exists {
		return false, err
	}
	_, options := d.sideTable()
	table := d.SQL().Raw("CREATE TABLE ").Ident(c).Raw(" (").Ident("block").Raw(" BIGINT NOT NULL, ").
		Ident("slot").Raw(" INTEGER NOT NULL, ").Ident("records").Raw(" BIGINT NOT NULL, ").
		Raw("PRIMARY KEY (").Ident("block").Raw(", ").Ident("slot").Raw("))" + options)
	if _, err := d.write.ExecContext(ctx, table.String()); err != nil {
		return false, fmt.Errorf("%s: %w", table.String(), err)
	}
	return true, nil
}

// countIDs adds sign (1 or -1) to slot of the block count of each of ids,
// records of table just inserted (1) or deleted (-1), in tx, their
// transaction (through Counted, which keeps the table's count too).
func (d *DB) countIDs(ctx context.Context, tx Execer, table string, ids []int, sign, slot int) error {
	delta := map[int]int{}
	for _, id := range ids {
		delta[id/idBlock] += sign
	}
	return d.addToBlocks(ctx, tx, table, delta, slot)
}

// addToBlocks adds delta[b] to slot of the count of each block b of
// table, in tx.
func (d *DB) addToBlocks(ctx context.Context, tx Execer, table string, delta map[int]int, slot int) error {
	return d.addToCountTable(ctx, tx, IDBlockTable(table), "block", delta, slot)
}

// BlockOfOffset finds, from the block counts of table, the block that
// holds the record at offset (from 0) in id order (in descending order
// when desc). It returns the id the records from that block on start at
// (in descending order: end before), how many records come before it,
// and false when the counts cannot answer: not trusted yet, or the offset
// past the last record.
func (d *DB) BlockOfOffset(ctx context.Context, table string, offset int, desc bool) (from, before int, ok bool, err error) {
	if !d.Trusted(ctx, table, IDBlockStructure) {
		return 0, 0, false, nil
	}
	s := d.SQL().Raw("SELECT ").Ident("block").Raw(", SUM(").Ident("records").Raw(") FROM ").Ident(IDBlockTable(table)).
		Raw(" GROUP BY ").Ident("block").Raw(" ORDER BY ").Ident("block")
	if desc {
		s.Raw(" DESC")
	}
	errFound := errors.New("found")
	err = queryRows(ctx, d.read, s.String(), func(scan func(dest ...any) error) error {
		var block, n int
		if err := scan(&block, &n); err != nil {
			return err
		}
		if before+n > offset {
			from = block * idBlock
			if desc {
				from += idBlock
			}
			return errFound
		}
		before += n
		return nil
	})
	if errors.Is(err, errFound) {
		return from, before, true, nil
	}
	return 0, 0, false, err
}

// RecordsBefore writes a scalar subquery that gives, from the block
// counts of table, how many records have ids below from (above or at it,
// when desc): for a statement that reads a page found by BlockOfOffset to
// check in its own snapshot that the count it started from still holds.
func (d *DB) RecordsBefore(s *SQL, table string, from int, desc bool) *SQL {
	s.Raw("(SELECT COALESCE(SUM(").Ident("records").Raw("), 0) FROM ").Ident(IDBlockTable(table)).Raw(" WHERE ").Ident("block")
	if desc {
		return s.Raw(" >= ").Arg(from / idBlock).Raw(")")
	}
	return s.Raw(" < ").Arg(from / idBlock).Raw(")")
}

// rebuildIDBlocks makes the block counts of s match its table, idBlockBatch
// blocks at a time: one statement reads each block's records less its kept
// count, and the difference is then added (see the top of this file for
// why concurrent writes need no lock).
func rebuildIDBlocks(ctx context.Context, d *DB, s Structure) (int, error) {
	t := s.Table
	c := IDBlockTable(t.Table)
	div := " / " + strconv.Itoa(idBlock)
	if d.MySQL() {
		div = " DIV " + strconv.Itoa(idBlock)
	}
	// The first block from a block on that has records or a count.
	next := d.SQL().Raw("SELECT COALESCE(MIN(").Ident("b").Raw("), -1) FROM (SELECT MIN(").Ident(t.ID).Raw(")" + div).
		Raw(" AS ").Ident("b").Raw(" FROM ").Ident(t.Table).Raw(" WHERE ").Ident(t.ID).Raw(" >= ").Param().
		Raw(" UNION ALL SELECT MIN(").Ident("block").Raw(") FROM ").Ident(c).Raw(" WHERE ").Ident("block").Raw(" >= ").Param().
		Raw(") AS ").Ident("n").String()
	total, block := 0, 0
	for {
		var first int
		if err := QueryRow(ctx, d.write, next, []any{block * idBlock, block}, &first); err != nil || first < 0 {
			return total, err
		}
		end := first + idBlockBatch
		// For each block: its records in the table less its count, and
		// its records.
		diff := d.SQL().Raw("SELECT ").Ident("b").Raw(", SUM(").Ident("n").Raw("), SUM(").Ident("m").Raw(") FROM (SELECT ").
			Ident(t.ID).Raw(div).Raw(" AS ").Ident("b").Raw(", COUNT(*) AS ").Ident("n").Raw(", COUNT(*) AS ").Ident("m").
			Raw(" FROM ").Ident(t.Table).
			Raw(" WHERE ").Ident(t.ID).Raw(" >= ").Arg(first * idBlock).Raw(" AND ").Ident(t.ID).Raw(" < ").Arg(end * idBlock).
			Raw(" GROUP BY ").Ident("b").
			Raw(" UNION ALL SELECT ").Ident("block").Raw(", -SUM(").Ident("records").Raw("), 0 FROM ").Ident(c).
			Raw(" WHERE ").Ident("block").Raw(" >= ").Arg(first).Raw(" AND ").Ident("block").Raw(" < ").Arg(end).
			Raw(" GROUP BY ").Ident("block").
			Raw(") AS ").Ident("d").Raw(" GROUP BY ").Ident("b")
		// One transaction, so that on SQLite no write comes between the
		// two statements (elsewhere it would do no harm).
		records := 0
		err := d.InTx(ctx, func(tx *ent.Client) error {
			delta := map[int]int{}
			records = 0
			err := queryRows(ctx, tx, diff.String(), func(scan func(dest ...any) error) error {
				var b, n, m int
				err := scan(&b, &n, &m)
				delta[b], records = n, records+m
				return err
			}, diff.Args...)
			if err != nil {
				return err
			}
			return d.addToBlocks(ctx, tx, t.Table, delta, d.slot())
		})
		if err != nil {
			return total, err
		}
		total += records
		block = end
	}
}

// CheckIDBlocks compares the block counts of every resource table with the
// table and returns an error naming the first block whose count is wrong:
// for tests, and the invariants the crash test checks.
func (d *DB) CheckIDBlocks(ctx context.Context) error {
	for _, t := range ent.ResourceTables() {
		want := map[int]int{}
		ids := d.SQL().Raw("SELECT ").Ident(t.ID).Raw(" FROM ").Ident(t.Table)
		err := queryRows(ctx, d.read, ids.String(), func(scan func(dest ...any) error) error {
			var id int
			err := scan(&id)
			want[id/idBlock]++
			return err
		})
		if err != nil {
			return err
		}
		have := d.SQL().Raw("SELECT ").Ident("block").Raw(", SUM(").Ident("records").Raw(") FROM ").Ident(IDBlockTable(t.Table)).
			Raw(" GROUP BY ").Ident("block")
		err = queryRows(ctx, d.read, have.String(), func(scan func(dest ...any) error) error {
			var b, n int
			if err := scan(&b, &n); err != nil {
				return err
			}
			if n != want[b] {
				return fmt.Errorf("id blocks of %s: %d records in block %d, where the table has %d", t.Table, n, b, want[b])
			}
			delete(want, b)
			return nil
		})
		if err != nil {
			return err
		}
		for b, n := range want { // every block left has records
			return fmt.Errorf("id blocks of %s: no count for block %d, which has %d records", t.Table, b, n)
		}
	}
	return nil
}
