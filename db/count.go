package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"personnel/record"
)

// The counts structure of a resource table keeps three numbers in step
// with its writes, so that a list does not count what it can read:
//
//   - the number of records, for an unfiltered list's count:
//     personnel_count_slot (table_name, slot, records);
//   - the number of records in each block of idBlock ids, so that a deep
//     page in id order (page 5,000 of 10 steps over 49,990 records) is
//     found among the block counts and then stepped to over at most one
//     block: <table>_blocks (block, slot, records). A page read from the
//     blocks checks in its own statement that the records before its
//     block are still as many as the blocks said (RecordsBefore), so a
//     write between the two statements cannot shift it;
//   - the change number, which counts the writes the table has committed
//     (every insert, update and delete adds 1), so that a replica may keep
//     what it computed from the table (the count of a search:
//     resource/countcache.go) with the change number it read in the same
//     statement, and use it again while a later statement reads the same
//     number: <table>_changes (slot, changes). Slots only grow and
//     snapshots only gain commits, so two snapshots whose sums agree hold
//     the same writes. A rebuild adds to it, so that nothing kept before
//     is used again.
//
// Each count is the sum of its rows. A write adds to one slot of each
// (Write.Slot, the same for all three, so that two concurrent creates,
// which add to the same block, meet at one row lock or none), by an upsert
// that makes the row when it is missing.

// CountStructure names the record, block and change counts of a table
// among its derived structures.
const CountStructure = "counts"

// countSlots is how many rows may share one count on MySQL and PostgreSQL
// (SQLite, whose writer is serialised, uses one).
const countSlots = 8

// changeSlots is how many rows share a table's change number: more than a
// count's, since every update adds to it too and holds its slot's row lock
// until it commits.
const changeSlots = 64

// idBlock is how many ids one block count covers.
const idBlock = 4096

// idBlockBatch is how many blocks one statement of a rebuild counts.
const idBlockBatch = 16

// CountTable holds the record count of every resource table.
const CountTable = "personnel_count_slot"

// IDBlockTable names the table of the block counts of table.
func IDBlockTable(table string) string { return shortName(table + "_blocks") }

// ChangeTable names the table of the change number of table.
func ChangeTable(table string) string { return shortName(table + "_changes") }

// slot is the slot of a count that w adds to.
func (d *DB) slot(w *Write) int {
	if d.SQLite() {
		return 0
	}
	return w.Slot % countSlots
}

// countKeeper keeps the counts of a table.
type countKeeper struct {
	t     *Table
	names Names

	addRecords, addChanges, storedCount, blocks, blocksDesc string
}

func newCountKeeper(t *Table) *countKeeper {
	d := t.db
	k := &countKeeper{t: t, names: Names{"table": t.Name, "counts": CountTable, "blocks": IDBlockTable(t.Name), "changes": ChangeTable(t.Name)}}
	r := func(text string) string { return d.Render(text, k.names) }
	k.addRecords = r("INSERT INTO {counts} (table_name, slot, records) VALUES (?, ?, ?)" + upsertAdding(d, "table_name, slot", "{counts}", "records"))
	k.addChanges = r("INSERT INTO {changes} (slot, changes) VALUES (?, 1)" + upsertAdding(d, "slot", "{changes}", "changes"))
	k.storedCount = r("SELECT COALESCE(SUM(records), 0) FROM {counts} WHERE table_name = ?")
	k.blocks = r("SELECT block, SUM(records) FROM {blocks} GROUP BY block ORDER BY block")
	k.blocksDesc = r("SELECT block, SUM(records) FROM {blocks} GROUP BY block ORDER BY block DESC")
	return k
}

// upsertAdding ends an INSERT of count rows with the clause that adds to a
// row already there: key names its unique columns, table the table as the
// statement writes it.
func upsertAdding(d *DB, key, table, column string) string {
	if d.MySQL() {
		return " ON DUPLICATE KEY UPDATE " + column + " = " + column + " + VALUES(" + column + ")"
	}
	return " ON CONFLICT (" + key + ") DO UPDATE SET " + column + " = " + table + "." + column + " + excluded." + column
}

// Name implements Structure.
func (k *countKeeper) Name() string { return CountStructure }

// Inserted counts the new records.
func (k *countKeeper) Inserted(ctx context.Context, w *Write, rows []record.Row) error {
	return k.counted(ctx, w, rows, 1)
}

// Updated numbers the write.
func (k *countKeeper) Updated(ctx context.Context, w *Write, _ []Change) error {
	return k.changed(ctx, w)
}

// Deleting takes the records from the counts.
func (k *countKeeper) Deleting(ctx context.Context, w *Write, rows []record.Row) error {
	return k.counted(ctx, w, rows, -1)
}

// counted adds sign for each of rows to their blocks' counts and to the
// table's, then numbers the write.
func (k *countKeeper) counted(ctx context.Context, w *Write, rows []record.Row, sign int) error {
	delta := map[int]int{}
	for _, r := range rows {
		delta[r.ID/idBlock] += sign
	}
	if err := k.addToBlocks(ctx, w, delta); err != nil {
		return err
	}
	if err := execLater(ctx, w.Tx, k.addRecords, k.t.Name, k.t.db.slot(w), sign*len(rows)); err != nil {
		return err
	}
	return k.changed(ctx, w)
}

// changed adds 1 to the change number.
func (k *countKeeper) changed(ctx context.Context, w *Write) error {
	slot := 0
	if !k.t.db.SQLite() {
		slot = w.Slot
	}
	return execLater(ctx, w.Tx, k.addChanges, slot)
}

// addToBlocks adds delta[b] to the count of each block b.
func (k *countKeeper) addToBlocks(ctx context.Context, w *Write, delta map[int]int) error {
	return addToSlots(ctx, w, IDBlockTable(k.t.Name), "block", delta)
}

// addToSlots adds delta[k] to w's slot of the count of each key k in the
// count table (key, slot, records), in key order: the order of every
// other upsert of the table, so that two writes never wait on each
// other's rows.
func addToSlots(ctx context.Context, w *Write, table, key string, delta map[int]int) error {
	d := w.Table.db
	var keys []int
	for k, n := range delta {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	slot := d.slot(w)
	names := Names{"table": table, "key": key}
	for start := 0; start < len(keys); start += closureChunk {
		part := keys[start:min(start+closureChunk, len(keys))]
		args := make([]any, 0, 3*len(part))
		for _, k := range part {
			args = append(args, k, slot, delta[k])
		}
		query := d.Render("INSERT INTO {table} ({key}, slot, records) VALUES "+Tuples(len(part), 3)+
			upsertAdding(d, "{key}, slot", "{table}", "records"), names)
		if err := execLater(ctx, w.Tx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// Rebuild counts the table again: its records, and each block's, as the
// difference between the table and the kept count read in one statement
// (one snapshot, in which a write, whose row and counts commit together,
// is whole or absent) then added, so that what a write adds meanwhile
// lands on top; and it adds 1 to the change number, so that nothing kept
// before is used again.
func (k *countKeeper) Rebuild(ctx context.Context) (int, error) {
	d := k.t.db
	div := " / " + strconv.Itoa(idBlock)
	if d.MySQL() {
		div = " DIV " + strconv.Itoa(idBlock)
	}
	total := 0
	err := d.InTx(ctx, func(tx Tx) error {
		var diff int
		query := k.t.db.Render("SELECT (SELECT COUNT(*) FROM {table}) - (SELECT COALESCE(SUM(records), 0) FROM {counts} WHERE table_name = ?)", k.names)
		if err := scanOne(tx.Query(ctx, query, k.t.Name))(&diff); err != nil {
			return err
		}
		w := k.t.newWrite(tx, false)
		if _, err := tx.ExecContext(ctx, k.addRecords, k.t.Name, d.slot(w), diff); err != nil {
			return err
		}
		return k.changed(ctx, w)
	})
	if err != nil {
		return 0, err
	}
	// The first block from a block on that has records or a count.
	next := d.Render(`SELECT COALESCE(MIN(b), -1) FROM (
  SELECT MIN(id)`+div+` AS b FROM {table} WHERE id >= ?
  UNION ALL SELECT MIN(block) FROM {blocks} WHERE block >= ?) AS n`, k.names)
	// For each block: its records in the table less its count, and its
	// records.
	diff := d.Render(`SELECT b, SUM(n), SUM(m) FROM (
  SELECT id`+div+` AS b, COUNT(*) AS n, COUNT(*) AS m FROM {table} WHERE id >= ? AND id < ? GROUP BY b
  UNION ALL SELECT block, -SUM(records), 0 FROM {blocks} WHERE block >= ? AND block < ? GROUP BY block
) AS d GROUP BY b`, k.names)
	block := 0
	for {
		var first int
		if err := scanOne(EntTx{d.read}.Query(ctx, next, block*idBlock, block))(&first); err != nil || first < 0 {
			return total, err
		}
		end := first + idBlockBatch
		// One transaction, so that on SQLite no write comes between the
		// two statements (elsewhere it would do no harm).
		err := d.InTx(ctx, func(tx Tx) error {
			delta := map[int]int{}
			records := 0
			err := queryRows(ctx, tx, diff, func(scan func(dest ...any) error) error {
				var b, n, m int
				err := scan(&b, &n, &m)
				delta[b], records = n, records+m
				return err
			}, first*idBlock, end*idBlock, first, end)
			if err != nil {
				return err
			}
			total += records
			return k.addToBlocks(ctx, k.t.newWrite(tx, false), delta)
		})
		if err != nil {
			return total, err
		}
		block = end
	}
}

// Check compares the counts with the table and returns an error naming
// the first that is wrong.
func (k *countKeeper) Check(ctx context.Context) error {
	d := k.t.db
	read := EntTx{d.read}
	want := map[int]int{}
	total := 0
	err := queryRows(ctx, read, d.Render("SELECT id FROM {table}", k.names), func(scan func(dest ...any) error) error {
		var id int
		err := scan(&id)
		want[id/idBlock]++
		total++
		return err
	})
	if err != nil {
		return err
	}
	var stored int
	if err := scanOne(read.Query(ctx, k.storedCount, k.t.Name))(&stored); err != nil {
		return err
	}
	if stored != total {
		return fmt.Errorf("count of %s: %d stored, where the table has %d", k.t.Name, stored, total)
	}
	err = queryRows(ctx, read, k.blocks, func(scan func(dest ...any) error) error {
		var b, n int
		if err := scan(&b, &n); err != nil {
			return err
		}
		if n != want[b] {
			return fmt.Errorf("id blocks of %s: %d records in block %d, where the table has %d", k.t.Name, n, b, want[b])
		}
		delete(want, b)
		return nil
	})
	if err != nil {
		return err
	}
	for b, n := range want {
		return fmt.Errorf("id blocks of %s: no count for block %d, which has %d records", k.t.Name, b, n)
	}
	return nil
}

// StoredCount returns the count of the table's records, and false when it
// is not trusted yet (the caller then counts the table).
func (t *Table) StoredCount(ctx context.Context) (int, bool, error) {
	if !t.db.Trusted(ctx, t.Name, CountStructure) {
		return 0, false, nil
	}
	var n int
	err := scanOne(EntTx{t.db.read}.Query(ctx, t.counts().storedCount, t.Name))(&n)
	return n, err == nil, err
}

func (t *Table) counts() *countKeeper {
	for _, s := range t.structures {
		if k, ok := s.(*countKeeper); ok {
			return k
		}
	}
	panic("db: table " + t.Name + " has no counts")
}

// KeptCount writes a scalar subquery that gives the count kept for the
// table, trusted or not (0 when there is none), so that a statement can
// read it beside what it counts itself, in one round trip: the search
// planner weighs it.
func (t *Table) KeptCount(s *SQL) *SQL {
	return s.Raw("(SELECT COALESCE(SUM(").Ident("records").Raw("), 0) FROM ").Ident(CountTable).
		Raw(" WHERE ").Ident("table_name").Raw(" = ").Arg(t.Name).Raw(")")
}

// ChangeNumber writes a scalar subquery that gives the change number of
// the table, so that a statement reads it beside what it computes, from
// the same snapshot.
func (t *Table) ChangeNumber(s *SQL) *SQL {
	return s.Raw("(SELECT COALESCE(SUM(").Ident("changes").Raw("), 0) FROM ").Ident(ChangeTable(t.Name)).Raw(")")
}

// BlockOfOffset finds, from the block counts, the block that holds the
// record at offset (from 0) in id order (in descending order when desc).
// It returns the id the records from that block on start at (in
// descending order: end before), how many records come before it, and
// false when the counts cannot answer: not trusted yet, or the offset past
// the last record.
func (t *Table) BlockOfOffset(ctx context.Context, offset int, desc bool) (from, before int, ok bool, err error) {
	if !t.db.Trusted(ctx, t.Name, CountStructure) {
		return 0, 0, false, nil
	}
	query := t.counts().blocks
	if desc {
		query = t.counts().blocksDesc
	}
	errFound := errors.New("found")
	err = queryRows(ctx, EntTx{t.db.read}, query, func(scan func(dest ...any) error) error {
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
// counts, how many records have ids below from (above or at it, when
// desc): for a statement that reads a page found by BlockOfOffset to check
// in its own snapshot that the count it started from still holds.
func (t *Table) RecordsBefore(s *SQL, from int, desc bool) *SQL {
	s.Raw("(SELECT COALESCE(SUM(").Ident("records").Raw("), 0) FROM ").Ident(IDBlockTable(t.Name)).Raw(" WHERE ").Ident("block")
	if desc {
		return s.Raw(" >= ").Arg(from / idBlock).Raw(")")
	}
	return s.Raw(" < ").Arg(from / idBlock).Raw(")")
}
