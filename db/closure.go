package db

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"personnel/ent"
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
// ancestors one range of the primary key: a page and a count of a subtree
// cost what they return, not a recursive walk of the subtree per request.
//
// Every row of a record is computed from the table itself: the store walks
// up the parent ids from the record in the statement that inserts its
// rows (LinkClosure), never from other rows of the closure. So a record's
// rows are right as of the moment they are written, whatever state the
// rest of the closure is in (an upgrade's, a rebuild's), and they stay
// right because whatever changes the walk up from a record rewrites its
// rows in the same transaction:
//
//   - a create links the new record after inserting it; the insert's
//     foreign key check locks the parent (shared on MySQL and PostgreSQL,
//     exclusively on TiDB) until the create commits;
//   - a move locks the moved record first and then every record of its
//     subtree (MoveClosure), and relinks them all after the update. A walk
//     up from any of them passes through a locked record, and a create
//     below any of them must lock its parent: each waits for the move or
//     the move waits for it and, walking the subtree again, finds what it
//     added;
//   - a delete takes the record's rows with it (the cascade; a record with
//     children cannot be deleted);
//   - a rebuild relinks records a batch at a time, the batch locked first,
//     so a move of any of their ancestors, which locks them, goes before
//     or after it.

// ClosureStructure names a hierarchy's closure among its table's derived
// structures.
const ClosureStructure = "closure"

// MaxDepth bounds every walk of a hierarchy (and so its depth: see the
// resource package). MySQL refuses recursion past 1000 iterations by
// default (cte_max_recursion_depth).
const MaxDepth = 1000

// ClosureTable names the closure table of table.
func ClosureTable(table string) string { return shortName(table + "_closure") }

// closureKind is the derived structure of a hierarchy: one for each
// resource table with a parent.
var closureKind = &structureKind{
	of: func(t ent.ResourceTable) []Structure {
		if t.Parent == "" {
			return nil
		}
		return []Structure{{Name: ClosureStructure}}
	},
	create:  createClosure,
	rebuild: rebuildClosure,
}

// createClosure creates the closure table of s when it is missing, and
// reports whether it was. Its index on ancestor is made whenever it is
// missing: after the table, and again after a bulk load into an empty
// table, which drops it meanwhile (BulkLoad), or at the next start when
// such a load was interrupted.
func createClosure(ctx context.Context, d *DB, s Structure) (bool, error) {
	c := ClosureTable(s.Table.Table)
	exists, err := d.exists(ctx, c, "")
	if err != nil {
		return false, err
	}
	if !exists {
		// Clustered by descendant: a new record's rows go at the end of
		// the table, where a bulk load appends them, instead of at the
		// end of each of its ancestors' ranges, scattered over the table.
		idType, options := d.sideTable()
		table := d.SQL().Raw("CREATE TABLE ").Ident(c).Raw(" (").Ident("descendant").Raw(" " + idType + " NOT NULL, ").
			Ident("ancestor").Raw(" " + idType + " NOT NULL, ").Ident("depth").Raw(" INTEGER NOT NULL, ").
			Raw("PRIMARY KEY (").Ident("descendant").Raw(", ").Ident("ancestor").Raw("), ").
			Raw("CONSTRAINT ").Ident(shortName(c + "_fk")).Raw(" FOREIGN KEY (").Ident("descendant").Raw(") REFERENCES ").
			Ident(s.Table.Table).Raw(" (").Ident(s.Table.ID).Raw(") ON DELETE CASCADE)" + options)
		if _, err := d.write.ExecContext(ctx, table.String()); err != nil {
			return false, fmt.Errorf("%s: %w", table.String(), err)
		}
	}
	return !exists, d.addClosureIndex(ctx, c)
}

// sideTable returns the type of a record id in a table kept beside a
// resource table, and the options that end its definition: clustered by
// its primary key, on SQLite too.
func (d *DB) sideTable() (idType, options string) {
	switch {
	case d.SQLite():
		return "INTEGER", " WITHOUT ROWID"
	case d.MySQL():
		return "BIGINT", " ENGINE=InnoDB"
	}
	return "BIGINT", ""
}

// closureIndex names the index on ancestor of the closure table c, which
// serves subtrees: the descendants of a record, in id order, with their
// depth.
func closureIndex(c string) string { return shortName(c + "_down") }

// addClosureIndex makes the index on ancestor of the closure table c when
// it is missing (looked for first, as addGramIndex explains).
func (d *DB) addClosureIndex(ctx context.Context, c string) error {
	if has, err := d.exists(ctx, c, closureIndex(c)); err != nil || has {
		return err
	}
	s := d.SQL().Raw("CREATE INDEX ").Ident(closureIndex(c)).Raw(" ON ").Ident(c).Raw(" (").Ident("ancestor").Raw(", ").
		Ident("descendant").Raw(", ").Ident("depth").Raw(")")
	_, err := d.write.ExecContext(ctx, s.String())
	return err
}

// dropClosureIndex drops the index on ancestor of the closure table c, if
// it is there. Until it is made again, subtrees are read by a scan of the
// closure: slower, and the same answers.
func (d *DB) dropClosureIndex(ctx context.Context, c string) error {
	if has, err := d.exists(ctx, c, closureIndex(c)); err != nil || !has {
		return err
	}
	s := d.SQL().Raw("DROP INDEX ").Ident(closureIndex(c))
	if d.MySQL() {
		s.Raw(" ON ").Ident(c)
	}
	_, err := d.write.ExecContext(ctx, s.String())
	return err
}

// closureChunk bounds the ids of one statement on MySQL and SQLite
// (PostgreSQL takes them all as one array).
const closureChunk = 1000

// inIDs writes "<column> IN (...)" for ids, or "= ANY(...)" on PostgreSQL.
func (d *DB) inIDs(s *SQL, column string, ids []int) *SQL {
	return d.inList(s.Ident(column), ids)
}

// inList writes " IN (...)" for ids, or " = ANY(...)" on PostgreSQL.
func (d *DB) inList(s *SQL, ids []int) *SQL {
	if d.Postgres() {
		all := make([]int64, len(ids))
		for i, id := range ids {
			all[i] = int64(id)
		}
		return s.Raw(" = ANY(").Arg(all).Raw("::bigint[])")
	}
	return s.Raw(" IN (").List(len(ids), func(i int) { s.Arg(ids[i]) }).Raw(")")
}

// chunks calls fn with ids a closureChunk at a time, or all at once on
// PostgreSQL.
func (d *DB) chunks(ids []int, fn func(ids []int) error) error {
	n := closureChunk
	if d.Postgres() {
		n = max(len(ids), 1)
	}
	for start := 0; start < len(ids); start += n {
		if err := fn(ids[start:min(start+n, len(ids))]); err != nil {
			return err
		}
	}
	return nil
}

// LinkClosure inserts, in tx, the closure rows of the records ids of t,
// which must have none: each record itself and every ancestor, found by
// walking up the parent ids in the table as tx sees it. It returns how
// many rows it inserted (for one record, one more than its ancestors,
// counting at most MaxDepth of them).
func (d *DB) LinkClosure(ctx context.Context, tx Execer, table string, ids []int) (int, error) {
	t, err := hierarchy(table)
	if err != nil {
		return 0, err
	}
	return d.link(ctx, tx, t, ids)
}

// hierarchy returns the resource table named table, which must have a
// parent.
func hierarchy(table string) (ent.ResourceTable, error) {
	for _, t := range ent.ResourceTables() {
		if t.Table == table && t.Parent != "" {
			return t, nil
		}
	}
	return ent.ResourceTable{}, fmt.Errorf("closure: no hierarchical resource table %q", table)
}

func (d *DB) link(ctx context.Context, tx Execer, t ent.ResourceTable, ids []int) (int, error) {
	total := 0
	err := d.chunks(ids, func(ids []int) error {
		// The walk starts at the parents, so that a record MaxDepth
		// levels down takes MaxDepth-1 iterations, as many as MySQL allows.
		s := d.SQL().Raw("INSERT INTO ").Ident(ClosureTable(t.Table)).Raw(" (").Ident("ancestor").Raw(", ").Ident("descendant").
			Raw(", ").Ident("depth").Raw(") WITH RECURSIVE ").Ident("up").Raw(" (").Ident("descendant").Raw(", ").Ident("ancestor").
			Raw(", ").Ident("depth").Raw(") AS (SELECT ").Ident(t.ID).Raw(", ").Ident(t.Parent).Raw(", 1 FROM ").Ident(t.Table).Raw(" WHERE ")
		d.inIDs(s, t.ID, ids).Raw(" AND ").Ident(t.Parent).Raw(" IS NOT NULL")
		s.Raw(" UNION ALL SELECT ").Col("up", "descendant").Raw(", ").Col("p", t.Parent).Raw(", ").Col("up", "depth").Raw(" + 1 FROM ").
			Ident("up").Raw(" JOIN ").Ident(t.Table).Raw(" AS ").Ident("p").Raw(" ON ").Col("p", t.ID).Raw(" = ").Col("up", "ancestor").
			Raw(" WHERE ").Col("p", t.Parent).Raw(" IS NOT NULL AND ").Col("up", "depth").Raw(" < " + strconv.Itoa(MaxDepth) + ") SELECT ").
			Ident("ancestor").Raw(", ").Ident("descendant").Raw(", ").Ident("depth").Raw(" FROM ").Ident("up").
			Raw(" UNION ALL SELECT ").Ident(t.ID).Raw(", ").Ident(t.ID).Raw(", 0 FROM ").Ident(t.Table).Raw(" WHERE ")
		d.inIDs(s, t.ID, ids)
		res, err := tx.ExecContext(ctx, s.String(), s.Args...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		total += int(n)
		return err
	})
	return total, err
}

// relink replaces, in tx, the closure rows of the records ids of t with
// those LinkClosure computes. The records must be locked (or the writer
// serialised).
func (d *DB) relink(ctx context.Context, tx Execer, t ent.ResourceTable, ids []int) error {
	err := d.chunks(ids, func(ids []int) error {
		s := d.SQL().Raw("DELETE FROM ").Ident(ClosureTable(t.Table)).Raw(" WHERE ")
		d.inIDs(s, "descendant", ids)
		_, err := tx.ExecContext(ctx, s.String(), s.Args...)
		return err
	})
	if err != nil {
		return err
	}
	_, err = d.link(ctx, tx, t, ids)
	return err
}

// MoveClosure relinks, in tx, the record id of t, whose parent tx has just
// changed, and every record below it, and moves the subtree's size from
// the counts of its former ancestors to its new ones. The record must be
// locked already; the records below it are locked here, until none is
// found that is not, so that no walk up through any of them (a create's, a
// rebuild's, another move's) runs meanwhile.
func (d *DB) MoveClosure(ctx context.Context, tx *ent.Client, table string, id int) error {
	t, err := hierarchy(table)
	if err != nil {
		return err
	}
	below := d.SQL().Raw("WITH RECURSIVE ").Ident("down").Raw(" (").Ident("id").Raw(", ").Ident("depth").Raw(") AS (SELECT ").
		Ident(t.ID).Raw(", 1 FROM ").Ident(t.Table).Raw(" WHERE ").Ident(t.Parent).Raw(" = ").Param().
		Raw(" UNION ALL SELECT ").Col("c", t.ID).Raw(", ").Col("down", "depth").Raw(" + 1 FROM ").Ident(t.Table).Raw(" AS ").Ident("c").
		Raw(" JOIN ").Ident("down").Raw(" ON ").Col("c", t.Parent).Raw(" = ").Col("down", "id").
		Raw(" WHERE ").Col("down", "depth").Raw(" < " + strconv.Itoa(MaxDepth) + ") SELECT ").Ident("id").Raw(" FROM ").Ident("down").String()
	locked := map[int]bool{id: true}
	var members []int
	for {
		var err error
		members, err = queryInts(ctx, tx, below, id)
		if err != nil {
			return err
		}
		var fresh []int
		for _, m := range members {
			if !locked[m] {
				fresh = append(fresh, m)
			}
		}
		if len(fresh) == 0 || d.SQLite() {
			break
		}
		slices.Sort(fresh) // one order for every locker, fewer deadlocks
		err = d.chunks(fresh, func(ids []int) error {
			s := d.SQL().Raw("SELECT ").Ident(t.ID).Raw(" FROM ").Ident(t.Table).Raw(" WHERE ")
			d.inIDs(s, t.ID, ids).Raw(" ORDER BY ").Ident(t.ID).Raw(d.Locks().Update)
			_, err := queryInts(ctx, tx, s.String(), s.Args...)
			return err
		})
		if err != nil {
			return err
		}
		for _, m := range fresh {
			locked[m] = true
		}
	}
	// The subtree's records leave the counts of the ancestors it leaves
	// and join those of the ancestors it joins.
	above := d.SQL().Raw("SELECT ").Ident("ancestor").Raw(" FROM ").Ident(ClosureTable(t.Table)).Raw(" WHERE ").Ident("descendant").
		Raw(" = ").Param().Raw(" AND ").Ident("depth").Raw(" > 0").String()
	from, err := queryInts(ctx, tx, above, id)
	if err != nil {
		return err
	}
	if err := d.relink(ctx, tx, t, append(members, id)); err != nil {
		return err
	}
	to, err := queryInts(ctx, tx, above, id)
	if err != nil {
		return err
	}
	return d.moveCounts(ctx, tx, t.Table, from, to, len(members)+1)
}

// queryInts runs a query of one integer column on c and returns its values.
func queryInts(ctx context.Context, c *ent.Client, query string, args ...any) ([]int, error) {
	rows, err := c.QueryContext(ctx, query, args...)
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

// rebuildClosure makes the closure of s whole, in id order, a batch of
// records per transaction: each batch share-locks its records, then
// relinks them from the table.
func rebuildClosure(ctx context.Context, d *DB, s Structure) (int, error) {
	t := s.Table
	sel := d.SQL().Raw("SELECT ").Ident(t.ID).Raw(" FROM ").Ident(t.Table).Raw(" WHERE ").Ident(t.ID).Raw(" > ").Param().
		Raw(" ORDER BY ").Ident(t.ID).Raw(" LIMIT ").Param().Raw(d.Locks().Share).String()
	total, after := 0, 0
	for {
		var ids []int
		err := d.InTx(ctx, func(tx *ent.Client) error {
			var err error
			if ids, err = queryInts(ctx, tx, sel, after, rebuildBatch); err != nil || len(ids) == 0 {
				return err
			}
			return d.relink(ctx, tx, t, ids)
		})
		if err != nil {
			return total, err
		}
		if len(ids) == 0 {
			return total, nil
		}
		total += len(ids)
		after = ids[len(ids)-1]
	}
}

// closureRow is one row of a closure table.
type closureRow struct{ ancestor, descendant, depth int }

// CheckClosure compares every closure and its subtree counts with its
// table and returns an error naming the first record whose rows are not
// exactly its ancestors and itself, or whose counts do not sum to the
// records below it: for tests, and the invariants the crash test checks.
func (d *DB) CheckClosure(ctx context.Context) error {
	for _, s := range Structures() {
		if s.kind != closureKind {
			continue
		}
		t := s.Table
		parent := map[int]int{} // 0: a root
		sel := d.SQL().Raw("SELECT ").Ident(t.ID).Raw(", ").Ident(t.Parent).Raw(" FROM ").Ident(t.Table)
		err := queryRows(ctx, d.read, sel.String(), func(scan func(dest ...any) error) error {
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
		rows := d.SQL().Raw("SELECT ").Ident("ancestor").Raw(", ").Ident("descendant").Raw(", ").Ident("depth").
			Raw(" FROM ").Ident(ClosureTable(t.Table))
		have := map[closureRow]bool{}
		err = queryRows(ctx, d.read, rows.String(), func(scan func(dest ...any) error) error {
			var r closureRow
			if err := scan(&r.ancestor, &r.descendant, &r.depth); err != nil {
				return err
			}
			if !want[r] {
				return fmt.Errorf("closure of %s: row %+v, which the table does not imply", t.Table, r)
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
				return fmt.Errorf("closure of %s: no row %+v", t.Table, r)
			}
			if r.depth > 0 {
				below[r.ancestor]++
			}
		}
		counts := d.SQL().Raw("SELECT ").Ident("ancestor").Raw(", SUM(").Ident("records").Raw(") FROM ").
			Ident(SubtreeCountTable(t.Table)).Raw(" GROUP BY ").Ident("ancestor")
		err = queryRows(ctx, d.read, counts.String(), func(scan func(dest ...any) error) error {
			var a, n int
			if err := scan(&a, &n); err != nil {
				return err
			}
			if n != below[a] {
				return fmt.Errorf("subtree counts of %s: %d below %d, where the table has %d", t.Table, n, a, below[a])
			}
			delete(below, a)
			return nil
		})
		if err != nil {
			return err
		}
		for a, n := range below {
			if n > 0 {
				return fmt.Errorf("subtree counts of %s: none for %d, which has %d below it", t.Table, a, n)
			}
		}
	}
	return nil
}
