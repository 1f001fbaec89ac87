package resource

import (
	"context"
	"fmt"
	"net/url"
	"slices"

	"personnel/apierror"
	"personnel/db"
	"personnel/record"
)

// MaxDepth bounds every recursive query. Cycles cannot exist, but a bound
// keeps a corrupted table from running away, and MySQL refuses recursion
// past 1000 iterations by default (cte_max_recursion_depth). No write may
// place a record MaxDepth levels below its root, so no answer is cut off.
const MaxDepth = db.MaxDepth

// DefaultTreeNodeLimit is the most nodes one tree answer may hold.
const DefaultTreeNodeLimit = 10000

// Descendants returns a page of the records below id at any depth; the
// list parameters (filters, ordering, paging) apply as to List.
func (r *Resource) Descendants(ctx context.Context, id int, q Query) (Page, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return Page{}, err
	}
	ts := r.tree(ctx)
	sc := &scope{with: ts.subtree, name: "subtree", args: []any{id}}
	if desc, byID := idOrder(q.Order); byID && len(q.Filters) == 0 && len(q.Search) == 0 {
		if ts.closure {
			return r.list(ctx, q, closureSource{r: r, id: id, desc: desc})
		}
		return r.list(ctx, q, newSubtreeSource(r, sc, desc))
	}
	src, err := r.filtered(ctx, q, sc)
	if err != nil {
		return Page{}, r.storeError(err)
	}
	return r.list(ctx, q, src)
}

// subtreeSource lists the descendants of a record in id order with no
// filter, the common case, from the recursive query's ids alone. A page in
// id order needs the whole subtree anyway (to sort it), so one walk gives
// the page's ids and, by a window function, the total; the page's rows are
// then read by id. Joining the whole subtree to the table, as a filter or
// another order needs, costs several times as much.
type subtreeSource struct {
	r     *Resource
	sc    *scope
	desc  bool
	total *int // set by fetch when the page has rows; -1 until then
}

func newSubtreeSource(r *Resource, sc *scope, desc bool) subtreeSource {
	total := -1
	return subtreeSource{r: r, sc: sc, desc: desc, total: &total}
}

func (s subtreeSource) fetch(ctx context.Context, limit, offset int) ([]record.Row, error) {
	r := s.r
	dir := " ASC"
	if s.desc {
		dir = " DESC"
	}
	q := r.newSQL().Stmt(s.sc.with, slices.Clone(s.sc.args)...).Raw(" SELECT ").Ident("id").Raw(", COUNT(*) OVER () FROM ").Ident("subtree").
		Raw(" ORDER BY ").Ident("id").Raw(dir)
	limitOffset(q, limit, offset)
	return r.pageByID(ctx, q, dir, s.total)
}

func (s subtreeSource) count(ctx context.Context) (int, error) {
	if *s.total >= 0 {
		return *s.total, nil
	}
	var n int
	q := s.r.newSQL().Stmt(s.sc.with, s.sc.args...).Raw(" SELECT COUNT(*) FROM ").Ident("subtree")
	err := db.QueryRow(ctx, s.r.db.Reader(), q.String(), q.Args, &n)
	return n, err
}

// closureSource lists the descendants of a record in id order with no
// filter from its closure: the page's ids are a range of the closure's
// index on ancestor, its rows then read by id, and the count is the
// record's kept subtree count (or, until that is trusted, the range
// counted).
type closureSource struct {
	r    *Resource
	id   int
	desc bool
}

// below writes the closure's rows of the records below s.id.
func (s closureSource) below(q *db.SQL) *db.SQL {
	return q.Ident(db.ClosureTable(s.r.desc.Table)).Raw(" WHERE ").Ident("ancestor").Raw(" = ").Arg(s.id).
		Raw(" AND ").Ident("depth").Raw(" > 0")
}

func (s closureSource) fetch(ctx context.Context, limit, offset int) ([]record.Row, error) {
	r := s.r
	dir := " ASC"
	if s.desc {
		dir = " DESC"
	}
	q := s.below(r.newSQL().Raw("SELECT ").Ident("descendant").Raw(" FROM ")).Raw(" ORDER BY ").Ident("descendant").Raw(dir)
	limitOffset(q, limit, offset)
	return r.pageByID(ctx, q, dir)
}

func (s closureSource) count(ctx context.Context) (int, error) {
	var n int
	table := s.r.desc.Table
	q := s.r.newSQL()
	if s.r.db.Trusted(ctx, table, db.ClosureStructure) {
		q.Raw("SELECT COALESCE(SUM(").Ident("records").Raw("), 0) FROM ").Ident(db.SubtreeCountTable(table)).
			Raw(" WHERE ").Ident("ancestor").Raw(" = ").Arg(s.id)
	} else {
		s.below(q.Raw("SELECT COUNT(*) FROM "))
	}
	err := db.QueryRow(ctx, s.r.db.Reader(), q.String(), q.Args, &n)
	return n, err
}

// pageByID runs q, whose rows are ids in page order (each followed by the
// columns scanned into more), then reads those records in the same order
// (dir " ASC" or " DESC").
func (r *Resource) pageByID(ctx context.Context, q *db.SQL, dir string, more ...any) ([]record.Row, error) {
	rows, err := r.db.Reader().Query(ctx, q.String(), q.Args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []any
	var id int
	dest := append([]any{&id}, more...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	return r.rowsByID(ctx, ids, dir)
}

// rowsByID reads the records ids, in id order (dir " ASC" or " DESC").
func (r *Resource) rowsByID(ctx context.Context, ids []any, dir string) ([]record.Row, error) {
	page := r.newSQL()
	r.selectRows(page)
	page.Raw(" WHERE ").Col("r", "id").Raw(" IN (")
	page.List(len(ids), func(i int) { page.Arg(ids[i]) })
	page.Raw(") ORDER BY ").Col("r", "id").Raw(dir)
	return r.query(ctx, r.db.Reader(), page.String(), page.Args...)
}

// Ancestors returns the records above id, from the root down to its parent.
func (r *Resource) Ancestors(ctx context.Context, id int) ([]record.Row, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return nil, err
	}
	q := r.newSQL().Stmt(r.tree(ctx).up+" ", id)
	r.selectRows(q)
	q.Raw(" JOIN ").Ident("up").Raw(" ON ").Col("r", "id").Raw(" = ").Col("up", "id").
		Raw(" ORDER BY ").Col("up", "depth").Raw(" DESC")
	rows, err := r.query(ctx, r.db.Reader(), q.String(), q.Args...)
	if err != nil {
		return nil, r.storeError(err)
	}
	return rows, nil
}

// TreeQuery is a parsed tree request.
type TreeQuery struct {
	Root  *int // nil: the whole forest
	Depth int  // levels below the roots; MaxDepth-1 when not given
}

// ParseTreeQuery parses root= and depth=, reporting both at once.
func ParseTreeQuery(values url.Values) (TreeQuery, error) {
	tq := TreeQuery{Depth: MaxDepth - 1}
	var errs []apierror.FieldError
	if v, ok := last(values, "root"); ok && v != "" {
		id, valid := positiveInt(v)
		if !valid {
			errs = append(errs, apierror.FieldError{Field: "root", Msg: "Enter the id of a record (a positive integer)."})
		}
		tq.Root = &id
	}
	if v, ok := last(values, "depth"); ok && v != "" {
		if v == "0" {
			tq.Depth = 0
		} else if d, valid := positiveInt(v); valid {
			tq.Depth = min(d, MaxDepth-1)
		} else {
			errs = append(errs, apierror.FieldError{Field: "depth", Msg: "Enter a whole number, 0 or more."})
		}
	}
	if len(errs) > 0 {
		return TreeQuery{}, apierror.Fields(errs...)
	}
	return tq, nil
}

// Node is a record and the nodes below it.
type Node struct {
	Row      record.Row
	Children []*Node
}

// Tree returns the tree below tq.Root (or the whole forest), tq.Depth
// levels deep, siblings by id. More than limit nodes is a 400 that says
// how to ask for less.
func (r *Resource) Tree(ctx context.Context, tq TreeQuery, limit int) ([]*Node, error) {
	q, ts := r.newSQL(), r.tree(ctx)
	if tq.Root != nil {
		if _, err := r.Get(ctx, *tq.Root); err != nil {
			return nil, err
		}
		q.Stmt(ts.forest+" ", *tq.Root, tq.Depth)
	} else {
		q.Stmt(ts.roots+" ", tq.Depth)
	}
	r.selectRows(q)
	q.Raw(" JOIN ").Ident("forest").Raw(" ON ").Col("r", "id").Raw(" = ").Col("forest", "id").
		Raw(" ORDER BY ").Col("r", "id").Raw(" ASC")
	limitOffset(q, limit+1, 0)
	rows, err := r.query(ctx, r.db.Reader(), q.String(), q.Args...)
	if err != nil {
		return nil, r.storeError(err)
	}
	if len(rows) > limit {
		return nil, apierror.New(apierror.Invalid, fmt.Sprintf(
			"The tree has more than %d nodes; ask for part of it with root=<id> and/or depth=<levels>.", limit))
	}
	parent := r.fields.Parent
	nodes := make(map[int64]*Node, len(rows))
	for _, row := range rows {
		nodes[int64(row.ID)] = &Node{Row: row}
	}
	var roots []*Node
	for _, row := range rows { // in id order, so children come out in id order
		n := nodes[int64(row.ID)]
		// A root's parent (if any) is never among the rows fetched.
		if p := row.Values[parent]; p.Valid && nodes[p.Int] != nil {
			nodes[p.Int].Children = append(nodes[p.Int].Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	return roots, nil
}

// appendNodes renders nodes as [{"id":..,...,"children":[...]}, ...],
// their references expanded as ex says.
func (r *Resource) appendNodes(b []byte, nodes []*Node, ex expansion) []byte {
	b = append(b, '[')
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.appendFields(b, n.Row, ex)
		b = append(b, `,"children":`...)
		b = r.appendNodes(b, n.Children, ex)
		b = append(b, '}')
	}
	return append(b, ']')
}
