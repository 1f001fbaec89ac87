package db

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"personnel/record"
)

// The closure of a hierarchy is a side table of its resource table, the
// same on every backend:
//
//	<table>_closure (descendant, ancestor, depth), PRIMARY KEY (descendant, ancestor),
//	index (ancestor, descendant, depth), descendant REFERENCES <table>(id) ON DELETE CASCADE
//
// with one row for every record and each of its ancestors (depth levels
// up), and one for the record itself (depth 0). The descendants of a record
// are then one range of the index on ancestor, in id order, and its
// ancestors one range of the primary key: a page of a subtree costs what
// it returns, not a recursive walk of the subtree per request.
//
// Beside it the count of each subtree, so that a page of descendants does
// not count its range:
//
//	<table>_below (ancestor, slot, records), PRIMARY KEY (ancestor, slot)
//
// The records below a record are the sum of its rows. A write adds to one
// slot of each ancestor it changes (Write.Slot: one of countSlots on MySQL
// and PostgreSQL, so that concurrent creates below one root seldom queue
// on one row lock; one on SQLite, whose writer is serialised), by an
// upsert in ancestor order. The table has no foreign key: inserting a
// count would share-lock the ancestor's record, which a move of that
// ancestor holds while it waits for the records below, a deadlock.
//
// How each write keeps both (the closure protocol):
//
//   - a create links the new record: its rows are computed by walking up
//     the parent ids in the table, never from other rows of the closure,
//     so they are right whatever state the rest of the closure is in (a
//     rebuild's). The insert's foreign key check locks the parent (shared
//     on MySQL and PostgreSQL, exclusively on TiDB) until the create
//     commits. Each ancestor's count gains 1;
//   - a move locks the moved record first and then every record of its
//     subtree, until none is found that is not locked, so that no walk up
//     through any of them (a create's, a rebuild's, another move's) runs
//     meanwhile: a create below any of them must lock its parent, and
//     either waits for the move or the move, walking the subtree again,
//     finds what it added. Then, when the closure is trusted, the rows
//     that tie the subtree to the ancestors it leaves are deleted and
//     those to the ancestors it joins inserted, from the closure's own
//     rows (the subtree's rows among themselves do not change); until it
//     is trusted, every record of the subtree is linked again from the
//     table, as a create is. The subtree's size leaves the counts of the
//     ancestors it leaves and joins those it joins. How many rows a move
//     rewrites is known before it starts: one larger than the move limit
//     is refused;
//   - a delete, of a locked record without children, takes 1 from each
//     ancestor's count and drops the record's own count rows; its closure
//     rows go with it (the cascade);
//   - a rebuild relinks records a batch at a time, the batch share-locked
//     first, so a move of any of their ancestors, which locks them, goes
//     before or after it; then it adds to each count the difference
//     between the closure and the count, read in one snapshot.

// ClosureStructure names a hierarchy's closure (with its subtree counts)
// among its table's derived structures.
const ClosureStructure = "closure"

// MaxDepth bounds every walk of a hierarchy (and so its depth: see the
// resource package). MySQL refuses recursion past 1000 iterations by
// default (cte_max_recursion_depth).
const MaxDepth = 1000

// ClosureTable names the closure table of table.
func ClosureTable(table string) string { return shortName(table + "_closure") }

// closureIndex names the index on ancestor of the closure table c.
func closureIndex(c string) string { return shortName(c + "_down") }

// SubtreeCountTable names the table of the subtree counts of table.
func SubtreeCountTable(table string) string { return shortName(table + "_below") }

// TooDeepError is the answer to a write that would place a record
// MaxDepth or more levels below its root.
type TooDeepError struct{ Parent int }

func (e *TooDeepError) Error() string {
	return fmt.Sprintf("db: under %d the hierarchy would be more than %d levels deep", e.Parent, MaxDepth)
}

// MoveTooLargeError is the answer to a move whose rewrite of the closure
// is larger than the move limit.
type MoveTooLargeError struct {
	Records int // records that would move: the record and those below it
	Rows    int // closure rows the move would rewrite
	Limit   int
}

func (e *MoveTooLargeError) Error() string {
	return fmt.Sprintf("db: moving %d records rewrites %d closure rows, more than the limit %d", e.Records, e.Rows, e.Limit)
}

// closureChunk bounds the ids of one statement on MySQL and SQLite
// (PostgreSQL takes them all as one array).
const closureChunk = 1000

// closureKeeper keeps the closure and the subtree counts of a table.
type closureKeeper struct {
	t              *Table
	parent         int // the parent field
	names          Names
	closure, below string

	subtree, above, below1, dropCounts, moveIn, rebuildIDs string
}

func newClosureKeeper(t *Table) *closureKeeper {
	d := t.db
	k := &closureKeeper{t: t, parent: t.Fields.Parent, closure: ClosureTable(t.Name), below: SubtreeCountTable(t.Name)}
	k.names = Names{"table": t.Name, "parent": t.Fields.List[k.parent].Column, "closure": k.closure, "below": k.below}
	r := func(text string) string { return d.Render(text, k.names) }
	depth := strconv.Itoa(MaxDepth)
	// Every record below ?, with its depth below it, walking the table.
	k.subtree = r(`WITH RECURSIVE down (id, depth) AS (
  SELECT id, 1 FROM {table} WHERE {parent} = ?
  UNION ALL
  SELECT c.id, down.depth + 1 FROM {table} AS c JOIN down ON c.{parent} = down.id WHERE down.depth < ` + depth + `)
SELECT id, depth FROM down`)
	// The ancestors of ?, from the closure.
	k.above = r("SELECT ancestor FROM {closure} WHERE descendant = ? AND depth > 0")
	// How many records lie below ?, from its counts.
	k.below1 = r("SELECT COALESCE(SUM(records), 0) FROM {below} WHERE ancestor = ?")
	k.dropCounts = r("DELETE FROM {below} WHERE ancestor = ?")
	// A move ties the subtree of ? to the ancestors of the new parent ?.
	k.moveIn = r(`INSERT INTO {closure} (ancestor, descendant, depth)
SELECT a.ancestor, s.descendant, a.depth + s.depth + 1
FROM {closure} AS a JOIN {closure} AS s ON s.ancestor = ?
WHERE a.descendant = ?`)
	k.rebuildIDs = r("SELECT id FROM {table} WHERE id > ? ORDER BY id LIMIT ?" + d.Locks().Share)
	return k
}

// Name implements Structure.
func (k *closureKeeper) Name() string { return ClosureStructure }

// in returns the " IN (?, ...)" of n ids, or PostgreSQL's " = ANY(?)"
// (whose one argument is the array inArgs makes).
func (k *closureKeeper) in(n int) string {
	if k.t.db.Postgres() {
		return " = ANY(?::bigint[])"
	}
	return " IN (" + Marks(n) + ")"
}

// inArgs returns the arguments of in's placeholders for ids.
func (k *closureKeeper) inArgs(ids []int) []any {
	if k.t.db.Postgres() {
		all := make([]int64, len(ids))
		for i, id := range ids {
			all[i] = int64(id)
		}
		return []any{all}
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// chunks calls fn with ids a closureChunk at a time, or all at once on
// PostgreSQL.
func (k *closureKeeper) chunks(ids []int, fn func(ids []int) error) error {
	n := closureChunk
	if k.t.db.Postgres() {
		n = max(len(ids), 1)
	}
	for start := 0; start < len(ids); start += n {
		if err := fn(ids[start:min(start+n, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// link inserts the closure rows of the records ids, which have none:
// each record itself and every ancestor, found by walking up the parent
// ids in the table as tx sees it. It returns how many rows it inserted.
// The walk starts at the parents, so that a record MaxDepth levels down
// takes MaxDepth-1 iterations, as many as MySQL allows.
func (k *closureKeeper) link(ctx context.Context, tx Tx, ids []int) (int, error) {
	total := 0
	err := k.chunks(ids, func(ids []int) error {
		in := k.in(len(ids))
		query := k.t.db.Render(`INSERT INTO {closure} (ancestor, descendant, depth)
WITH RECURSIVE up (descendant, ancestor, depth) AS (
  SELECT id, {parent}, 1 FROM {table} WHERE id`+in+` AND {parent} IS NOT NULL
  UNION ALL
  SELECT up.descendant, p.{parent}, up.depth + 1 FROM up JOIN {table} AS p ON p.id = up.ancestor
  WHERE p.{parent} IS NOT NULL AND up.depth < `+strconv.Itoa(MaxDepth)+`)
SELECT ancestor, descendant, depth FROM up
UNION ALL SELECT id, id, 0 FROM {table} WHERE id`+in, k.names)
		args := k.inArgs(ids)
		res, err := tx.ExecContext(ctx, query, append(args, args...)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		total += int(n)
		return err
	})
	return total, err
}

// unlink deletes the closure rows of the records ids.
func (k *closureKeeper) unlink(ctx context.Context, tx Tx, ids []int) error {
	return k.chunks(ids, func(ids []int) error {
		_, err := tx.ExecContext(ctx, k.t.db.Render("DELETE FROM {closure} WHERE descendant"+k.in(len(ids)), k.names), k.inArgs(ids)...)
		return err
	})
}

// upsert ends an INSERT INTO {below} (ancestor, slot, records) with the
// clause that adds records to a row already there.
func (k *closureKeeper) upsert() string {
	return upsertAdding(k.t.db, "ancestor, slot", "{below}", "records")
}

// countBelow adds sign (1 or -1) to the subtree count of every ancestor of
// each record ids, as the records' closure rows name them, in ancestor
// order (the order of every other upsert of the table, so that two writes
// never wait on each other's rows).
func (k *closureKeeper) countBelow(ctx context.Context, w *Write, ids []int, sign int) error {
	return k.chunks(ids, func(ids []int) error {
		query := k.t.db.Render(`INSERT INTO {below} (ancestor, slot, records)
SELECT ancestor, ?, COUNT(*) * ? FROM {closure} WHERE descendant`+k.in(len(ids))+` AND depth > 0
GROUP BY ancestor ORDER BY ancestor`+k.upsert(), k.names)
		args := append([]any{k.t.db.slot(w), sign}, k.inArgs(ids)...)
		return execLater(ctx, w.Tx, query, args...)
	})
}

// addCounts adds delta[a] to the subtree count of each record a.
func (k *closureKeeper) addCounts(ctx context.Context, w *Write, delta map[int]int) error {
	return addToSlots(ctx, w, k.below, "ancestor", delta)
}

// Inserted links the new records and counts them below their ancestors.
// A lone record linked MaxDepth or more levels down is a *TooDeepError
// (bulk loads check depth before they write).
func (k *closureKeeper) Inserted(ctx context.Context, w *Write, rows []record.Row) error {
	ids := make([]int, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	linked, err := k.link(ctx, w.Tx, ids)
	if err != nil {
		return err
	}
	if len(rows) == 1 && linked-1 >= MaxDepth {
		return &TooDeepError{Parent: int(rows[0].Values[k.parent].Int)}
	}
	if linked > len(rows) { // some have ancestors to count them
		return k.countBelow(ctx, w, ids, 1)
	}
	return nil
}

// Deleting takes the records from their ancestors' counts and drops their
// own counts; they are locked and without children, so their ancestors
// are as their closure rows say until they are gone.
func (k *closureKeeper) Deleting(ctx context.Context, w *Write, rows []record.Row) error {
	for _, r := range rows {
		if err := k.countBelow(ctx, w, []int{r.ID}, -1); err != nil {
			return err
		}
		if _, err := w.Tx.ExecContext(ctx, k.dropCounts, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// Updated moves the subtree of each record whose parent changed.
func (k *closureKeeper) Updated(ctx context.Context, w *Write, changes []Change) error {
	for _, c := range changes {
		if !slices.Contains(c.Changed, k.parent) {
			continue
		}
		if err := k.move(ctx, w, c.After); err != nil {
			return err
		}
	}
	return nil
}

// move relinks the record moved, whose parent w has just changed, and
// every record below it (see the top of this file). The record must be
// locked already.
func (k *closureKeeper) move(ctx context.Context, w *Write, moved record.Row) error {
	d, tx := k.t.db, w.Tx
	id := moved.ID
	trusted := d.Trusted(ctx, k.t.Name, ClosureStructure)
	from, err := queryInts(ctx, tx, k.above, id)
	if err != nil {
		return err
	}
	var to []int
	if p := moved.Values[k.parent]; p.Valid {
		if to, err = queryInts(ctx, tx, k.above, int(p.Int)); err != nil {
			return err
		}
		to = append(to, int(p.Int))
	}
	if trusted && d.MoveLimit > 0 {
		// The kept count says how large the subtree is before it is
		// walked and locked.
		var below int
		if err := scanOne(tx.Query(ctx, k.below1, id))(&below); err != nil {
			return err
		}
		if rows := (below + 1) * (len(from) + len(to)); rows > d.MoveLimit {
			return &MoveTooLargeError{Records: below + 1, Rows: rows, Limit: d.MoveLimit}
		}
	}
	members, depths, err := k.lockSubtree(ctx, tx, id)
	if err != nil {
		return err
	}
	all := append(members, id)
	if trusted {
		// The rows between the subtree and the ancestors it leaves go;
		// those to the ancestors it joins come from the new parent's rows
		// and the subtree's own.
		if len(from) > 0 {
			err := k.chunks(all, func(ids []int) error {
				query := d.Render("DELETE FROM {closure} WHERE descendant"+k.in(len(ids))+" AND ancestor"+k.in(len(from)), k.names)
				_, err := tx.ExecContext(ctx, query, append(k.inArgs(ids), k.inArgs(from)...)...)
				return err
			})
			if err != nil {
				return err
			}
		}
		if p := moved.Values[k.parent]; p.Valid {
			if _, err := tx.ExecContext(ctx, k.moveIn, id, p.Int); err != nil {
				return err
			}
		}
	} else {
		rows := 0
		for _, dep := range depths {
			rows += dep + 1 + len(to)
		}
		rows += 1 + len(to)
		if d.MoveLimit > 0 && rows > d.MoveLimit {
			return &MoveTooLargeError{Records: len(all), Rows: rows, Limit: d.MoveLimit}
		}
		if err := k.unlink(ctx, tx, all); err != nil {
			return err
		}
		if _, err := k.link(ctx, tx, all); err != nil {
			return err
		}
	}
	// The subtree's records leave the counts of the ancestors it leaves
	// and join those of the ancestors it joins.
	delta := map[int]int{}
	for _, a := range from {
		delta[a] -= len(all)
	}
	for _, a := range to {
		delta[a] += len(all)
	}
	return k.addCounts(ctx, w, delta)
}

// lockSubtree locks every record below id (on SQLite, whose writer is
// serialised, it only reads them), walking the subtree again until it
// finds none it has not locked, and returns them with their depths below
// id. Locks are taken in id order, one order for every locker.
func (k *closureKeeper) lockSubtree(ctx context.Context, tx Tx, id int) ([]int, []int, error) {
	d := k.t.db
	locked := map[int]bool{id: true}
	for {
		var members, depths, fresh []int
		err := queryRows(ctx, tx, k.subtree, func(scan func(dest ...any) error) error {
			var m, dep int
			if err := scan(&m, &dep); err != nil {
				return err
			}
			members, depths = append(members, m), append(depths, dep)
			if !locked[m] {
				fresh = append(fresh, m)
			}
			return nil
		}, id)
		if err != nil {
			return nil, nil, err
		}
		if len(fresh) == 0 || d.SQLite() {
			return members, depths, nil
		}
		slices.Sort(fresh)
		err = k.chunks(fresh, func(ids []int) error {
			query := d.Render("SELECT id FROM {table} WHERE id"+k.in(len(ids))+" ORDER BY id"+d.Locks().Update, k.names)
			_, err := queryInts(ctx, tx, query, k.inArgs(ids)...)
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		for _, m := range fresh {
			locked[m] = true
		}
	}
}

// Rebuild makes the closure whole, in id order, a batch of records per
// transaction (each share-locked, then relinked from the table), then the
// counts, a batch at a time: one statement reads, for each record, its
// descendants in the closure less the sum of its counts, and that
// difference is added. The statement reads both from one snapshot (READ
// COMMITTED gives each statement its own; SQLite has one writer), in which
// a concurrent write, whose closure rows and counts commit together, is
// whole or absent; what a write adds after it lands on top.
func (k *closureKeeper) Rebuild(ctx context.Context) (int, error) {
	d := k.t.db
	total, after := 0, 0
	for {
		var ids []int
		err := d.InTx(ctx, func(tx Tx) error {
			var err error
			if ids, err = queryInts(ctx, tx, k.rebuildIDs, after, rebuildBatch); err != nil || len(ids) == 0 {
				return err
			}
			if err := k.unlink(ctx, tx, ids); err != nil {
				return err
			}
			_, err = k.link(ctx, tx, ids)
			return err
		})
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			break
		}
		total += len(ids)
		after = ids[len(ids)-1]
	}
	return total, k.rebuildCounts(ctx)
}

func (k *closureKeeper) rebuildCounts(ctx context.Context) error {
	d := k.t.db
	sel := d.Render("SELECT id FROM {table} WHERE id > ? ORDER BY id LIMIT ?", k.names)
	after := 0
	for {
		ids, err := queryInts(ctx, EntTx{d.read}, sel, after, rebuildBatch)
		if err != nil || len(ids) == 0 {
			return err
		}
		diff := d.Render(`SELECT id, diff FROM (
  SELECT r.id AS id,
    (SELECT COUNT(*) FROM {closure} AS cl WHERE cl.ancestor = r.id AND cl.depth > 0)
    - (SELECT COALESCE(SUM(b.records), 0) FROM {below} AS b WHERE b.ancestor = r.id) AS diff
  FROM {table} AS r WHERE r.id`+k.in(len(ids))+`) AS d WHERE diff <> 0`, k.names)
		// One transaction, so that on SQLite no write comes between the
		// two statements (elsewhere it would do no harm).
		err = d.InTx(ctx, func(tx Tx) error {
			delta := map[int]int{}
			err := queryRows(ctx, tx, diff, func(scan func(dest ...any) error) error {
				var id, n int
				err := scan(&id, &n)
				delta[id] = n
				return err
			}, k.inArgs(ids)...)
			if err != nil {
				return err
			}
			return k.addCounts(ctx, k.t.newWrite(tx, false), delta)
		})
		if err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}

// closureRow is one row of a closure table.
type closureRow struct{ ancestor, descendant, depth int }

// Check compares the closure and its subtree counts with the table and
// returns an error naming the first record whose rows are not exactly its
// ancestors and itself, or whose counts do not sum to the records below it.
func (k *closureKeeper) Check(ctx context.Context) error {
	d := k.t.db
	read := EntTx{d.read}
	parent := map[int]int{} // 0: a root
	err := queryRows(ctx, read, d.Render("SELECT id, {parent} FROM {table}", k.names), func(scan func(dest ...any) error) error {
		var id int
		var p *int
		if err := scan(&id, &p); err != nil {
			return err
		}
		parent[id] = 0
		if p != nil {
			parent[id] = *p
		}
		return nil
	})
	if err != nil {
		return err
	}
	want := map[closureRow]bool{}
	for id := range parent {
		for cur, depth := id, 0; cur != 0 && depth <= MaxDepth; cur, depth = parent[cur], depth+1 {
			want[closureRow{cur, id, depth}] = true
		}
	}
	have := map[closureRow]bool{}
	err = queryRows(ctx, read, d.Render("SELECT ancestor, descendant, depth FROM {closure}", k.names), func(scan func(dest ...any) error) error {
		var r closureRow
		if err := scan(&r.ancestor, &r.descendant, &r.depth); err != nil {
			return err
		}
		if !want[r] {
			return fmt.Errorf("closure of %s: row %+v, which the table does not imply", k.t.Name, r)
		}
		have[r] = true
		return nil
	})
	if err != nil {
		return err
	}
	below := map[int]int{}
	for r := range want {
		if !have[r] {
			return fmt.Errorf("closure of %s: no row %+v", k.t.Name, r)
		}
		if r.depth > 0 {
			below[r.ancestor]++
		}
	}
	err = queryRows(ctx, read, d.Render("SELECT ancestor, SUM(records) FROM {below} GROUP BY ancestor", k.names), func(scan func(dest ...any) error) error {
		var a, n int
		if err := scan(&a, &n); err != nil {
			return err
		}
		if n != below[a] {
			return fmt.Errorf("subtree counts of %s: %d below %d, where the table has %d", k.t.Name, n, a, below[a])
		}
		delete(below, a)
		return nil
	})
	if err != nil {
		return err
	}
	for a, n := range below {
		if n > 0 {
			return fmt.Errorf("subtree counts of %s: none for %d, which has %d below it", k.t.Name, a, n)
		}
	}
	return nil
}

// bulkIndex is the index on ancestor, which a bulk load into an empty
// table drops and makes again at its end.
func (k *closureKeeper) bulkIndex() bulkIndex {
	return bulkIndex{table: k.closure, name: closureIndex(k.closure), columns: []string{"ancestor", "descendant", "depth"}}
}
