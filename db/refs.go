package db

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"personnel/config"
	"personnel/record"
)

// References between resource tables. A ref field is a column of its
// table (<name>_id); a refs field is a table of pairs beside it,
// (<resource>_id, <field>_id), written in the same transaction as the
// record by the same Insert, Update and Delete: its ids belong to the
// record, and a change to them is a change of the record (Change.Changed
// names the field), which every keeper sees.
//
// The rules, all kept here, by the write hook, so that every write path
// keeps them and every keeper of every table sees what they change:
//
//   - A write that names a record checks it exists, share-locking it (as a
//     parent is checked): a delete of it, which locks it for update,
//     waits for the write, and then sees the record that refers to it; or
//     the write waits for the delete, and then finds it gone. (A bulk load
//     is not checked: the foreign keys refuse what it names wrongly.)
//   - Deleting a record applies, first, the on_delete rule of every
//     field of every table that refers to it: protect refuses the delete
//     (*ReferencedError) while any record refers to it; set_null clears
//     each reference with an Update of the record that holds it; cascade
//     deletes each such record with the Delete of its table, whose own
//     rules apply in turn; and a refs list loses the id by an Update of
//     its record (or, with protect, refuses). The records changed are
//     locked for update first. Then its own pairs go, and the record.
//   - The foreign keys of references RESTRICT: the database only refuses
//     what the service did not do itself (ent/schema/reference.go).

// refField is a ref or refs field of a table.
type refField struct {
	t     *Table
	field int
	f     *record.Field
	// pairs is the table of a refs field, with its two columns.
	pairs, owner, target string
}

func newRefFields(t *Table) []*refField {
	var out []*refField
	for _, i := range t.Fields.Refs() {
		rf := &refField{t: t, field: i, f: &t.Fields.List[i]}
		if rf.f.Kind == record.KindRefs {
			for _, e := range t.Res.Extra {
				if e.Name == rf.f.Key {
					rf.pairs = t.Res.RefsTable(e)
					rf.owner, rf.target = t.Res.RefsColumns(e)
				}
			}
		}
		out = append(out, rf)
	}
	return out
}

// targetTable returns the table of the resource f refers to, which must
// be registered.
func (rf *refField) targetTable() (*Table, error) {
	for _, t := range rf.t.db.Tables() {
		if t.Res.Name == rf.f.To {
			return t, nil
		}
	}
	return nil, fmt.Errorf("db: %s.%s refers to %s, whose table is not registered", rf.t.Res.Name, rf.f.Key, rf.f.To)
}

// UnknownRefError is the answer to a write that names records that do
// not exist.
type UnknownRefError struct{ Missing []MissingRef }

// MissingRef is one id a write names that no record has.
type MissingRef struct {
	Row   int // the index of the record in the write
	Field int // the ref or refs field
	ID    int64
}

func (e *UnknownRefError) Error() string {
	return fmt.Sprintf("db: %d referenced records do not exist", len(e.Missing))
}

// SelfRefError is the answer to an update that makes a record refer to
// itself.
type SelfRefError struct{ Field int }

func (e *SelfRefError) Error() string { return "db: a record cannot refer to itself" }

// ReferencedError is the answer to a delete of a record that others refer
// to through fields whose rule is protect.
type ReferencedError struct{ By []Referrers }

// Referrers are the records of one resource that refer to a record
// through one field.
type Referrers struct {
	Resource, Field string
	Count           int
}

func (e *ReferencedError) Error() string {
	var parts []string
	for _, b := range e.By {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", b.Count, b.Resource, b.Field))
	}
	return "db: the record is referred to by " + strings.Join(parts, ", ")
}

// CascadeBlockedError is the answer to a delete that would cascade to a
// record that other records, which the cascade does not reach, name as
// their parent.
type CascadeBlockedError struct {
	Resource string // the resource of the record the cascade reaches
	ID       int
	Field    string // the field through which it cascades
	Parent   string // the parent field the others name it in
}

func (e *CascadeBlockedError) Error() string {
	return fmt.Sprintf("db: the delete cascades to %s %d, which other records name as parent", e.Resource, e.ID)
}

// ids returns the ids a value of f names.
func (rf *refField) ids(v record.Value) []int64 {
	if rf.f.Kind == record.KindRefs {
		return v.IDs
	}
	if v.Valid {
		return []int64{v.Int}
	}
	return nil
}

// checkRefs checks that every id named by rows[k] in field rf, for
// each (k, ids) of named, exists, share-locking those that do. It
// returns an *UnknownRefError naming the others.
func (t *Table) checkRefs(ctx context.Context, tx Tx, named map[*refField]map[int][]int64) error {
	var missing []MissingRef
	for _, rf := range t.refs {
		byRow := named[rf]
		if len(byRow) == 0 {
			continue
		}
		var all []int64
		for _, ids := range byRow {
			all = append(all, ids...)
		}
		all = record.SortIDs(all)
		target, err := rf.targetTable()
		if err != nil {
			return err
		}
		found := map[int64]bool{}
		err = t.chunks(all, func(ids []int64) error {
			// In id order, the order every locker takes them in.
			query := t.db.Render("SELECT id FROM {target} WHERE id"+t.in(len(ids))+" ORDER BY id"+t.db.Locks().Share,
				Names{"target": target.Name})
			got, err := queryInts(ctx, tx, query, t.inArgs(ids)...)
			for _, id := range got {
				found[int64(id)] = true
			}
			return err
		})
		if err != nil {
			return err
		}
		rows := make([]int, 0, len(byRow))
		for k := range byRow {
			rows = append(rows, k)
		}
		sort.Ints(rows)
		for _, k := range rows {
			for _, id := range byRow[k] {
				if !found[id] {
					missing = append(missing, MissingRef{Row: k, Field: rf.field, ID: id})
				}
			}
		}
	}
	if len(missing) > 0 {
		return &UnknownRefError{Missing: missing}
	}
	return nil
}

// checkInserted checks the references of records about to be inserted.
func (t *Table) checkInserted(ctx context.Context, tx Tx, rows []record.Row) error {
	named := map[*refField]map[int][]int64{}
	for _, rf := range t.refs {
		for k, r := range rows {
			if ids := rf.ids(r.Values[rf.field]); len(ids) > 0 {
				if named[rf] == nil {
					named[rf] = map[int][]int64{}
				}
				named[rf][k] = ids
			}
		}
	}
	return t.checkRefs(ctx, tx, named)
}

// checkUpdated checks the references an update adds: those it keeps were
// checked when they were written, and their records cannot be deleted
// without locking this one.
func (t *Table) checkUpdated(ctx context.Context, tx Tx, before, after record.Row) error {
	named := map[*refField]map[int][]int64{}
	for _, rf := range t.refs {
		added := minus(rf.ids(after.Values[rf.field]), rf.ids(before.Values[rf.field]))
		if len(added) == 0 {
			continue
		}
		if rf.f.To == t.Res.Name && slices.Contains(added, int64(after.ID)) {
			return &SelfRefError{Field: rf.field}
		}
		named[rf] = map[int][]int64{0: added}
	}
	return t.checkRefs(ctx, tx, named)
}

// CheckRefs checks, as Update would, the references after adds to before
// (the record as locked in tx), writing nothing: for a caller that reports
// every reason a write is refused at once.
func (t *Table) CheckRefs(ctx context.Context, tx Tx, before, after record.Row) error {
	return t.checkUpdated(ctx, tx, before, after)
}

// minus returns the ids of a (ascending) that are not in b (ascending).
func minus(a, b []int64) []int64 {
	var out []int64
	for _, id := range a {
		if _, in := slices.BinarySearch(b, id); !in {
			out = append(out, id)
		}
	}
	return out
}

// insertPairs writes the refs lists of rows, just inserted with their ids.
func (t *Table) insertPairs(ctx context.Context, tx Tx, rows []record.Row) error {
	for _, rf := range t.refs {
		if rf.pairs == "" {
			continue
		}
		var args []any
		for _, r := range rows {
			for _, id := range r.Values[rf.field].IDs {
				args = append(args, r.ID, id)
			}
		}
		if err := rf.insert(ctx, tx, args); err != nil {
			return err
		}
	}
	return nil
}

// insert writes pairs, given as (owner, target) arguments, in batches.
func (rf *refField) insert(ctx context.Context, tx Tx, args []any) error {
	names := Names{"pairs": rf.pairs, "owner": rf.owner, "target": rf.target}
	for start := 0; start < len(args); start += 2 * loadBatch {
		batch := args[start:min(start+2*loadBatch, len(args))]
		query := rf.t.db.Render("INSERT INTO {pairs} ({owner}, {target}) VALUES "+Tuples(len(batch)/2, 2), names)
		if _, err := tx.ExecContext(ctx, query, batch...); err != nil {
			return err
		}
	}
	return nil
}

// updatePairs writes the change of each refs list between before and
// after.
func (t *Table) updatePairs(ctx context.Context, tx Tx, before, after record.Row) error {
	for _, rf := range t.refs {
		if rf.pairs == "" {
			continue
		}
		was, is := before.Values[rf.field].IDs, after.Values[rf.field].IDs
		gone, added := minus(was, is), minus(is, was)
		if len(gone) > 0 {
			err := t.chunks(gone, func(ids []int64) error {
				query := t.db.Render("DELETE FROM {pairs} WHERE {owner} = ? AND {target}"+t.in(len(ids)),
					Names{"pairs": rf.pairs, "owner": rf.owner, "target": rf.target})
				_, err := tx.ExecContext(ctx, query, append([]any{after.ID}, t.inArgs(ids)...)...)
				return err
			})
			if err != nil {
				return err
			}
		}
		var args []any
		for _, id := range added {
			args = append(args, after.ID, id)
		}
		if err := rf.insert(ctx, tx, args); err != nil {
			return err
		}
	}
	return nil
}

// deletePairs deletes the refs lists of a record about to be deleted.
func (t *Table) deletePairs(ctx context.Context, tx Tx, r record.Row) error {
	for _, rf := range t.refs {
		if rf.pairs == "" {
			continue
		}
		query := t.db.Render("DELETE FROM {pairs} WHERE {owner} = ?", Names{"pairs": rf.pairs, "owner": rf.owner})
		if _, err := tx.ExecContext(ctx, query, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// LoadRefs reads, in tx, the refs lists of rows (read from the table
// without them): one statement for each refs field (on MySQL and SQLite,
// one for each thousand rows).
func (t *Table) LoadRefs(ctx context.Context, tx Tx, rows []record.Row) error {
	if len(rows) == 0 || !slices.ContainsFunc(t.refs, func(rf *refField) bool { return rf.pairs != "" }) {
		return nil // nothing to read: a read by id of most resources
	}
	var ids []int64
	at := make(map[int64]int, len(rows))
	for k, r := range rows {
		ids = append(ids, int64(r.ID))
		at[int64(r.ID)] = k
	}
	for _, rf := range t.refs {
		if rf.pairs == "" {
			continue
		}
		for k := range rows {
			rows[k].Values[rf.field] = record.Value{Valid: true}
		}
		err := t.chunks(ids, func(ids []int64) error {
			query := t.db.Render("SELECT {owner}, {target} FROM {pairs} WHERE {owner}"+t.in(len(ids))+" ORDER BY {owner}, {target}",
				Names{"pairs": rf.pairs, "owner": rf.owner, "target": rf.target})
			return queryRows(ctx, tx, query, func(scan func(dest ...any) error) error {
				var owner, target int64
				if err := scan(&owner, &target); err != nil {
					return err
				}
				v := &rows[at[owner]].Values[rf.field]
				v.IDs = append(v.IDs, target)
				return nil
			}, t.inArgs(ids)...)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// referrers returns the ref and refs fields of every registered table
// that refer to t's resource.
func (t *Table) referrers() []*refField {
	var out []*refField
	for _, o := range t.db.Tables() {
		for _, rf := range o.refs {
			if rf.f.To == t.Res.Name {
				out = append(out, rf)
			}
		}
	}
	return out
}

// onDelete applies, before r (locked) is deleted, the on_delete rule of
// every field that refers to it (see the top of this file): every protect
// first, so that a refused delete has changed nothing before it is
// refused.
func (t *Table) onDelete(ctx context.Context, w *Write, r record.Row) error {
	refs := t.referrers()
	var protected []Referrers
	for _, rf := range refs {
		if rf.f.OnDelete != config.OnDeleteProtect {
			continue
		}
		var n int
		if err := scanOne(w.Tx.Query(ctx, rf.countSQL(), r.ID))(&n); err != nil {
			return err
		}
		if n > 0 {
			protected = append(protected, Referrers{Resource: rf.t.Res.Name, Field: rf.f.Key, Count: n})
		}
	}
	if len(protected) > 0 {
		return &ReferencedError{By: protected}
	}
	for _, rf := range refs {
		if rf.f.OnDelete == config.OnDeleteProtect {
			continue
		}
		rows, err := rf.lockReferring(ctx, w.Tx, r.ID)
		if err != nil {
			return err
		}
		switch rf.f.OnDelete {
		case config.OnDeleteCascade:
			err = rf.cascade(ctx, w.Tx, rows)
		default: // set_null, and remove from a list
			for _, before := range rows {
				after := record.Row{ID: before.ID, Values: slices.Clone(before.Values)}
				if rf.f.Kind == record.KindRefs {
					after.Values[rf.field] = record.Value{IDs: minus(before.Values[rf.field].IDs, []int64{int64(r.ID)}), Valid: true}
				} else {
					after.Values[rf.field] = record.Value{}
				}
				if _, err = rf.t.Update(ctx, w.Tx, before, after); err != nil {
					break
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// countSQL counts the records that refer to ?.
func (rf *refField) countSQL() string {
	if rf.pairs != "" {
		return rf.t.db.Render("SELECT COUNT(*) FROM {pairs} WHERE {target} = ?", Names{"pairs": rf.pairs, "target": rf.target})
	}
	return rf.t.db.Render("SELECT COUNT(*) FROM {table} WHERE {col} = ?", Names{"table": rf.t.Name, "col": rf.f.Column})
}

// lockReferring locks for update, in id order, and returns whole (refs
// lists too) the records that refer to id through rf.
func (rf *refField) lockReferring(ctx context.Context, tx Tx, id int) ([]record.Row, error) {
	t := rf.t
	where := "{col} = ?"
	names := Names{"table": t.Name, "col": rf.f.Column}
	if rf.pairs != "" {
		where = "id IN (SELECT {owner} FROM {pairs} WHERE {target} = ?)"
		names = Names{"table": t.Name, "pairs": rf.pairs, "owner": rf.owner, "target": rf.target}
	}
	return t.lockedRows(ctx, tx, t.db.Render(t.selectFrom()+" WHERE "+where+" ORDER BY id"+t.db.Locks().Update, names), id)
}

// selectFrom is "SELECT id, <the stored fields' columns> FROM {table}",
// for Render with names that include "table".
func (t *Table) selectFrom() string {
	q := "SELECT id"
	for _, c := range t.Fields.Selected() {
		q += ", " + t.db.Quote(c)
	}
	return q + " FROM {table}"
}

// lockedRows runs query, which selects whole rows of t (selectFrom), and
// reads their refs lists.
func (t *Table) lockedRows(ctx context.Context, tx Tx, query string, args ...any) ([]record.Row, error) {
	sc := record.NewScanner(t.Fields)
	var rows []record.Row
	err := queryRows(ctx, tx, query, func(scan func(dest ...any) error) error {
		if err := scan(sc.Dest...); err != nil {
			return err
		}
		rows = append(rows, sc.Row())
		return nil
	}, args...)
	if err != nil {
		return nil, err
	}
	return rows, t.LoadRefs(ctx, tx, rows)
}

// cascade deletes rows (locked) of rf's table, which refer through rf to
// a record being deleted. In a hierarchy a record can go only once no
// record names it as parent, so those below go first; a record that
// others outside the cascade name as parent stops it.
func (rf *refField) cascade(ctx context.Context, tx Tx, rows []record.Row) error {
	t := rf.t
	if p := t.Fields.Parent; p >= 0 && len(rows) > 0 {
		in := map[int]bool{}
		ids := make([]int64, len(rows))
		for k, r := range rows {
			in[r.ID] = true
			ids[k] = int64(r.ID)
		}
		// Children are locked too: a create below one of them waits.
		err := t.chunks(ids, func(chunk []int64) error {
			query := t.db.Render("SELECT id, {parent} FROM {table} WHERE {parent}"+t.in(len(chunk))+" ORDER BY id"+t.db.Locks().Update,
				Names{"table": t.Name, "parent": t.Fields.List[p].Column})
			return queryRows(ctx, tx, query, func(scan func(dest ...any) error) error {
				var child, parent int
				if err := scan(&child, &parent); err != nil {
					return err
				}
				if !in[child] {
					return &CascadeBlockedError{Resource: t.Res.Name, ID: parent, Field: rf.f.Key, Parent: t.Fields.List[p].Key}
				}
				return nil
			}, t.inArgs(chunk)...)
		})
		if err != nil {
			return err
		}
		// Deepest first: a record's depth among those going.
		parent := map[int]int{}
		for _, r := range rows {
			if v := r.Values[p]; v.Valid && in[int(v.Int)] {
				parent[r.ID] = int(v.Int)
			}
		}
		depth := func(id int) int {
			d := 0
			for cur, ok := parent[id]; ok && d <= len(rows); cur, ok = parent[cur] {
				d++
			}
			return d
		}
		sort.SliceStable(rows, func(i, j int) bool { return depth(rows[i].ID) > depth(rows[j].ID) })
	}
	for _, r := range rows {
		if err := t.Delete(ctx, tx, r); err != nil {
			return err
		}
	}
	return nil
}

// in returns " IN (?, ...)" for n ids on MySQL; on PostgreSQL
// " = ANY(?)", and on SQLite an IN of json_each(?), whose one argument
// (an array, a JSON array) inArgs makes: one statement text whatever the
// number of ids, prepared once, and no list of placeholders to parse.
func (t *Table) in(n int) string {
	return t.db.InIDs(n)
}

// inArgs returns the arguments of in's placeholders for ids.
func (t *Table) inArgs(ids []int64) []any { return t.db.InArgs(ids) }

// InIDs returns the membership test of n ids as d's database takes it
// best, for a statement that Render then numbers: " IN (?, ...)" on
// MySQL; " = ANY(?::bigint[])" on PostgreSQL and " IN (SELECT value FROM
// json_each(?))" on SQLite, each of one argument (InArgs).
func (d *DB) InIDs(n int) string {
	switch {
	case d.Postgres():
		return " = ANY(?::bigint[])"
	case d.SQLite():
		return " IN (SELECT value FROM json_each(?))"
	}
	return " IN (" + Marks(n) + ")"
}

// InArgs returns the arguments of InIDs's placeholders for ids.
func (d *DB) InArgs(ids []int64) []any {
	switch {
	case d.Postgres():
		return []any{ids}
	case d.SQLite():
		b := make([]byte, 0, 8*len(ids)+2)
		b = append(b, '[')
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, id, 10)
		}
		return []any{string(append(b, ']'))}
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// InChunk is how many ids one InIDs takes: a thousand on MySQL, any
// number as one argument elsewhere.
func (d *DB) InChunk() int {
	if d.MySQL() {
		return closureChunk
	}
	return math.MaxInt32
}

// chunks calls fn with ids InChunk at a time.
func (t *Table) chunks(ids []int64, fn func(ids []int64) error) error {
	n := t.db.InChunk()
	for start := 0; start < len(ids); start += n {
		if err := fn(ids[start:min(start+n, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}
