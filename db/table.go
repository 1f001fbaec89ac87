package db

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"personnel/config"
	"personnel/ent"
	"personnel/record"
)

// A resource table is written through its Table, and only through it: a
// create, an update, a delete, a bulk load, an import or the seed command
// each call Insert, Update or Delete, which write the record and then
// hand the same change to every structure kept beside the table (its
// keepers), in the same transaction. The keepers are registered with the
// table once, when it is registered; nothing else knows which structures
// exist, so a new structure is one keeper added in newTable, and no write
// path can forget it.
//
// Some keepers are derived structures that answer reads (the substring
// index of a searched field, the closure of a hierarchy with its subtree
// counts, the record, block and change counts); whether reads may use one
// is the trust rule (trust.go). Others only record (the audit trail, the
// change feed).

// Tx is a write's transaction as the store's statements run in it: an Ent
// client inside InTx (or SQLite's batch), or a PostgreSQL bulk load
// streaming rows with COPY (InCopyTx).
type Tx interface {
	ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Rows are the rows of a query run in a Tx.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// EntTx adapts an Ent client (a transaction's, in InTx) to a Tx.
type EntTx struct{ *ent.Client }

// Query runs a query in the transaction.
func (t EntTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	count(ctx)
	return t.QueryContext(ctx, query, args...)
}

// bulkInserter is a Tx that can stream many rows into a table at once
// (COPY, on PostgreSQL).
type bulkInserter interface {
	CopyFrom(ctx context.Context, table string, columns []string, rows [][]any) (int64, error)
}

// Keeper keeps one structure beside a resource table in step with every
// write of the table. Each method runs in the write's transaction, after
// the record is written (Inserted, Updated) or before it is deleted
// (Deleting); an error undoes the whole write.
type Keeper interface {
	// Inserted is told of records just inserted, with their ids.
	Inserted(ctx context.Context, w *Write, rows []record.Row) error
	// Updated is told of records just updated: each before and after,
	// and which fields changed (never none).
	Updated(ctx context.Context, w *Write, changes []Change) error
	// Deleting is told of locked records about to be deleted.
	Deleting(ctx context.Context, w *Write, rows []record.Row) error
}

// Change is one record's update.
type Change struct {
	Before, After record.Row
	Changed       []int // indexes of the fields whose value changed
}

// Write is one write of a table, as its keepers see it.
type Write struct {
	Tx    Tx
	Table *Table
	// Slot picks the rows of the counts this write adds to: a random one
	// of the change number's slots, and the same one, modulo their
	// number, of every other count's, so that two concurrent writes meet
	// at one row lock or none.
	Slot int
	// Bulk says the write is a bulk load (seed, import): keepers insert
	// their rows in bulk.
	Bulk bool
}

// Table is a resource table registered with the store: its field table
// and its keepers.
type Table struct {
	Name   string
	Res    config.Resource
	Fields record.Fields
	db     *DB

	// keepers, in the order they are told of a write: the closure before
	// what reads it.
	keepers []Keeper
	// structures are the keepers that answer reads, by name.
	structures []Structure

	insertOne string // INSERT of one record (RETURNING id on PostgreSQL)
	remove    string // DELETE of one record by id

	refs []*refField // the ref and refs fields (refs.go)
}

// Table registers the resource res with the store and returns its table;
// registering a resource again returns the same table.
func (d *DB) Table(res config.Resource) *Table {
	d.tablesMu.Lock()
	defer d.tablesMu.Unlock()
	for _, t := range d.tables {
		if t.Name == res.Table {
			return t
		}
	}
	t := newTable(d, res)
	d.tables = append(d.tables, t)
	return t
}

// Tables returns the registered tables, in registration order.
func (d *DB) Tables() []*Table {
	d.tablesMu.Lock()
	defer d.tablesMu.Unlock()
	return slices.Clone(d.tables)
}

func newTable(d *DB, res config.Resource) *Table {
	t := &Table{Name: res.Table, Res: res, Fields: record.New(res), db: d}
	t.refs = newRefFields(t)
	for _, i := range t.Fields.Indexed() {
		t.addStructure(newSubstringKeeper(t, i))
	}
	if t.Fields.Hierarchical() {
		t.addStructure(newClosureKeeper(t))
	}
	t.addStructure(newCountKeeper(t))
	t.addStructure(newFeedKeeper(t))
	t.keepers = append(t.keepers, newAuditKeeper(t))
	for _, k := range d.extraKeepers {
		t.keepers = append(t.keepers, k(t))
	}
	t.insertOne = t.insertSQL(1)
	t.remove = d.Render("DELETE FROM {table} WHERE id = ?", Names{"table": t.Name})
	return t
}

func (t *Table) addStructure(s Structure) {
	t.keepers = append(t.keepers, s)
	t.structures = append(t.structures, s)
}

// Structures returns the table's derived structures.
func (t *Table) Structures() []Structure { return t.structures }

// Keep adds k to the keepers of every table registered from now on (for
// what every table records: the audit trail, the change feed, and tests).
func (d *DB) Keep(k func(t *Table) Keeper) {
	d.tablesMu.Lock()
	defer d.tablesMu.Unlock()
	d.extraKeepers = append(d.extraKeepers, k)
}

func (t *Table) newWrite(tx Tx, bulk bool) *Write {
	return &Write{Tx: tx, Table: t, Slot: rand.IntN(changeSlots), Bulk: bulk}
}

// insertSQL is the statement that inserts n records with every column.
// On PostgreSQL, which has no LastInsertId, it returns the new ids.
func (t *Table) insertSQL(n int) string {
	cols := t.Fields.Columns()
	text := "INSERT INTO {table} (" + columnMarks(len(cols)) + ") VALUES " + Tuples(n, len(cols))
	if t.db.Postgres() {
		text += " RETURNING id"
	}
	names := Names{"table": t.Name}
	for i, c := range cols {
		names[fmt.Sprint("c", i)] = c
	}
	return t.db.Render(text, names)
}

// columnMarks returns "{c0}, {c1}, ...".
func columnMarks(n int) string {
	s := ""
	for i := range n {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint("{c", i, "}")
	}
	return s
}

// loadBatch bounds the records of one multi-row INSERT: well within
// SQLite's and MySQL's limits on parameters and packet size.
const loadBatch = 500

// Insert inserts rows (their ids are set here) in tx and tells every
// keeper. A unique or foreign key violation comes back as the driver's
// error, for the caller to explain; a hierarchy too deep as a
// *TooDeepError; a reference to a record that does not exist as an
// *UnknownRefError, before anything is written (refs.go).
func (t *Table) Insert(ctx context.Context, tx Tx, rows []record.Row) error {
	if err := t.checkInserted(ctx, tx, rows); err != nil {
		return err
	}
	return t.insert(ctx, t.newWrite(tx, false), rows)
}

func (t *Table) insert(ctx context.Context, w *Write, rows []record.Row) error {
	if len(rows) == 0 {
		return nil
	}
	if err := t.insertRows(ctx, w.Tx, rows); err != nil {
		return err
	}
	if err := t.insertPairs(ctx, w.Tx, rows); err != nil {
		return err
	}
	for _, k := range t.keepers {
		if err := k.Inserted(ctx, w, rows); err != nil {
			return err
		}
	}
	return nil
}

// insertRows writes rows to the table, a batch per statement, and sets
// their ids. A multi-row insert takes consecutive ids: MySQL reports the
// first, SQLite the last; PostgreSQL returns every id in the order of the
// VALUES rows, or in a bulk load draws them from the sequence first and
// streams the rows with COPY.
func (t *Table) insertRows(ctx context.Context, tx Tx, rows []record.Row) error {
	if c, ok := tx.(*CopyTx); ok {
		return t.copyRows(ctx, c, rows)
	}
	for start := 0; start < len(rows); start += loadBatch {
		batch := rows[start:min(start+loadBatch, len(rows))]
		query := t.insertOne
		if len(batch) > 1 {
			query = t.insertSQL(len(batch))
		}
		args := make([]any, 0, len(batch)*len(t.Fields.List)*2)
		for _, r := range batch {
			args = append(args, t.Fields.Args(r.Values)...)
		}
		if t.db.Postgres() {
			got, err := queryInts(ctx, tx, query, args...)
			if err != nil {
				return err
			}
			if len(got) != len(batch) {
				return fmt.Errorf("%s: insert of %d records returned %d ids", t.Name, len(batch), len(got))
			}
			for i := range batch {
				batch[i].ID = got[i]
			}
			continue
		}
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		first := int(last)
		if !t.db.MySQL() {
			first = int(last) - len(batch) + 1
		}
		for i := range batch {
			batch[i].ID = first + i
		}
	}
	return nil
}

// copyRows is insertRows in a PostgreSQL bulk load: ids drawn from the
// table's sequence as an insert would draw them, then the rows, ids
// included, streamed with COPY.
func (t *Table) copyRows(ctx context.Context, tx *CopyTx, rows []record.Row) error {
	seq := "SELECT nextval(pg_get_serial_sequence($1, 'id')) FROM generate_series(1, $2)"
	drawn, err := queryInts(ctx, tx, seq, t.db.Quote(t.Name), len(rows))
	if err != nil {
		return err
	}
	if len(drawn) != len(rows) {
		return fmt.Errorf("%s: drew %d ids for %d records", t.Name, len(drawn), len(rows))
	}
	values := make([][]any, len(rows))
	for i := range rows {
		rows[i].ID = drawn[i]
		values[i] = append([]any{int64(drawn[i])}, t.Fields.Args(rows[i].Values)...)
	}
	_, err = tx.CopyFrom(ctx, t.Name, append([]string{"id"}, t.Fields.Columns()...), values)
	return err
}

// Update writes after over before (the record as locked in tx; the same
// id), setting only the columns of the fields that changed (and the refs
// lists that changed, refs.go), and tells every keeper. It reports
// whether anything changed: an update that changes nothing writes
// nothing. A reference it adds to a record that does not exist is an
// *UnknownRefError, to the record itself a *SelfRefError.
func (t *Table) Update(ctx context.Context, tx Tx, before, after record.Row) (bool, error) {
	var changed []int
	for i := range t.Fields.List {
		if !before.Values[i].Equal(after.Values[i]) {
			changed = append(changed, i)
		}
	}
	if len(changed) == 0 {
		return false, nil
	}
	if err := t.checkUpdated(ctx, tx, before, after); err != nil {
		return false, err
	}
	names := Names{"table": t.Name}
	text := "UPDATE {table} SET "
	var args []any
	set := func(col string, v any) {
		if len(args) > 0 {
			text += ", "
		}
		k := fmt.Sprint("c", len(args))
		names[k] = col
		text += "{" + k + "} = ?"
		args = append(args, v)
	}
	for _, i := range changed {
		f := &t.Fields.List[i]
		if !f.Stored() {
			continue
		}
		set(f.Column, f.Arg(after.Values[i]))
		if f.Fold != "" {
			set(f.Fold, record.FoldArg(after.Values[i]))
		}
	}
	if len(args) > 0 {
		text += " WHERE id = ?"
		args = append(args, before.ID)
		res, err := tx.ExecContext(ctx, t.db.Render(text, names), args...)
		if err != nil {
			return false, err
		}
		// MySQL counts changed rows, SQLite and PostgreSQL matched rows; the
		// record is locked or the writer serialised, so none means it is gone.
		if n, err := res.RowsAffected(); err == nil && n == 0 && !t.db.MySQL() {
			return false, ErrGone
		}
	}
	if err := t.updatePairs(ctx, tx, before, after); err != nil {
		return false, err
	}
	w := t.newWrite(tx, false)
	changes := []Change{{Before: before, After: after, Changed: changed}}
	for _, k := range t.keepers {
		if err := k.Updated(ctx, w, changes); err != nil {
			return false, err
		}
	}
	return true, nil
}

// ErrGone is the answer to a write of a record that no longer exists.
var ErrGone = errors.New("db: the record no longer exists")

// Delete deletes before (the record as locked in tx, which no record
// names as parent) after applying the on_delete rules of the records that
// refer to it (refs.go: a protected one is a *ReferencedError) and
// telling every keeper; its refs lists go with it.
func (t *Table) Delete(ctx context.Context, tx Tx, before record.Row) error {
	w := t.newWrite(tx, false)
	if err := t.onDelete(ctx, w, before); err != nil {
		return err
	}
	for _, k := range t.keepers {
		if err := k.Deleting(ctx, w, []record.Row{before}); err != nil {
			return err
		}
	}
	if err := t.deletePairs(ctx, tx, before); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, t.remove, before.ID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrGone
	}
	return nil
}

// queryInts runs a query of one integer column in tx and returns its
// values.
func queryInts(ctx context.Context, tx Tx, query string, args ...any) ([]int, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// queryRows runs query in tx and calls row for each row it returns.
func queryRows(ctx context.Context, tx Tx, query string, row func(scan func(dest ...any) error) error, args ...any) error {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
