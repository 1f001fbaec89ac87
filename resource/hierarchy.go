package resource

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"

	"entgo.io/ent/dialect/sql"

	"personnel/apierror"
	"personnel/ent"
)

// MaxDepth bounds every recursive query. Cycles cannot exist, but a bound
// keeps a corrupted table from running away, and MySQL refuses recursion
// past 1000 iterations by default (cte_max_recursion_depth). Records more
// than MaxDepth-1 levels below the start of a query are not returned.
const MaxDepth = 1000

// DefaultTreeNodeLimit is the most nodes one tree answer may hold.
const DefaultTreeNodeLimit = 10000

// hierarchyStatements are the recursive queries of one resource, built
// once. Each is the WITH RECURSIVE prefix of a query that ent's typed
// builder completes with a join, the list filters, ordering and paging.
type hierarchyStatements struct {
	subtree string // "subtree"(id, depth): every record below ?, at any depth
	up      string // "up"(id, depth): the ancestors of ?, depth 1 for the parent
	forest  string // "forest"(id, depth): the tree from root ?, depth 0 for the root
	roots   string // "forest"(id, depth): the whole forest, depth 0 for the roots
}

func newHierarchyStatements(c ent.HierarchyColumns) hierarchyStatements {
	q := func(ident string) string { return "`" + ident + "`" }
	t, id, parent := q(c.Table), q(c.ID), q(c.Parent)
	limit := strconv.Itoa(MaxDepth)
	down := func(name, anchor, depthStart, depthLimit string) string {
		return "WITH RECURSIVE `" + name + "` (`id`, `depth`) AS (" +
			"SELECT " + id + ", " + depthStart + " FROM " + t + " WHERE " + anchor +
			" UNION ALL SELECT `c`." + id + ", `" + name + "`.`depth` + 1 FROM " + t + " AS `c`" +
			" JOIN `" + name + "` ON `c`." + parent + " = `" + name + "`.`id`" +
			" WHERE `" + name + "`.`depth` < " + depthLimit + ")"
	}
	return hierarchyStatements{
		subtree: down("subtree", parent+" = ?", "1", limit),
		up: "WITH RECURSIVE `up` (`id`, `depth`) AS (" +
			"SELECT " + parent + ", 1 FROM " + t + " WHERE " + id + " = ? AND " + parent + " IS NOT NULL" +
			" UNION ALL SELECT `p`." + parent + ", `up`.`depth` + 1 FROM " + t + " AS `p`" +
			" JOIN `up` ON `p`." + id + " = `up`.`id`" +
			" WHERE `p`." + parent + " IS NOT NULL AND `up`.`depth` < " + limit + ")",
		forest: down("forest", id+" = ?", "0", "?"),
		roots:  down("forest", parent+" IS NULL", "0", "?"),
	}
}

// prefix is a WITH clause and its arguments, for ent's Selector.Prefix.
type prefix struct {
	query string
	args  []any
}

func (p prefix) Query() (string, []any) { return p.query, p.args }

// cte returns the rows of the recursive query name as a table aliased by
// its own name. The explicit alias matters: ent applies the ordering
// before the predicates, so an ordering on the table must not depend on
// the alias a join would otherwise assign.
func cte(name string) *sql.SelectTable { return sql.Table(name).As(name) }

// within returns a scope that joins t, the rows of the recursive query p
// (columns id and depth), to the resource's table.
func (r *Resource[T]) within(t *sql.SelectTable, p prefix) func(*sql.Selector) {
	return func(s *sql.Selector) {
		s.Prefix(p).Join(t).On(s.C(r.cols.ID), t.C("id"))
	}
}

// Descendants returns a page of the records below id at any depth; the
// list parameters (filters, ordering, paging) apply as to List.
func (r *Resource[T]) Descendants(ctx context.Context, id int, q Query) (Page, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return Page{}, err
	}
	p := prefix{r.hsql.subtree, []any{id}}
	if desc, byID := idOrder(q.Order); byID && q.Filters == (Filters{}) {
		return r.list(ctx, q, newSubtreeSource(r, p, desc))
	}
	return r.list(ctx, q, r.table(q, r.within(cte("subtree"), p)))
}

// idOrder reports whether terms sort by id alone (the default), and in
// which direction.
func idOrder(terms []OrderBy) (desc, ok bool) {
	if len(terms) == 0 {
		return false, true
	}
	return terms[0].Desc, terms[0].Field == FieldID
}

// subtreeSource lists the descendants of a record in id order with no
// filter, the common case, from the recursive query's ids alone. A page in
// id order needs the whole subtree anyway (to sort it), so one walk gives
// the page's ids and, by a window function, the total; the page's rows are
// then read by id. Joining the whole subtree to the table, as a filter or
// another order needs, costs several times as much.
type subtreeSource[T any] struct {
	r     *Resource[T]
	p     prefix
	desc  bool
	total *int // set by fetch when the page has rows; -1 until then
}

func newSubtreeSource[T any](r *Resource[T], p prefix, desc bool) subtreeSource[T] {
	total := -1
	return subtreeSource[T]{r: r, p: p, desc: desc, total: &total}
}

func (s subtreeSource[T]) fetch(ctx context.Context, limit, offset int) ([]T, error) {
	dir, by := " ASC", sql.Asc
	if s.desc {
		dir, by = " DESC", sql.Desc
	}
	rows, err := s.r.db.Read().QueryContext(ctx,
		s.p.query+" SELECT `id`, COUNT(*) OVER () FROM `subtree` ORDER BY `id`"+dir+" LIMIT ? OFFSET ?",
		append(slices.Clone(s.p.args), limit, offset)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int
	for rows.Next() {
		var id int
		if err := rows.Scan(&id, s.total); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil || len(ids) == 0 {
		return nil, err
	}
	where := func(sel *sql.Selector) { sel.Where(sql.InInts(sel.C(s.r.cols.ID), ids...)) }
	order := func(sel *sql.Selector) { sel.OrderBy(by(sel.C(s.r.cols.ID))) }
	return s.r.a.List(ctx, s.r.db.Read(), where, order, 0, 0)
}

func (s subtreeSource[T]) count(ctx context.Context) (int, error) {
	if *s.total >= 0 {
		return *s.total, nil
	}
	var n int
	err := queryRow(ctx, s.r.db.Read(), s.p.query+" SELECT COUNT(*) FROM `subtree`", s.p.args, &n)
	return n, err
}

// Ancestors returns the records above id, from the root down to its parent.
func (r *Resource[T]) Ancestors(ctx context.Context, id int) ([]ent.HierarchyRow, error) {
	if _, err := r.Get(ctx, id); err != nil {
		return nil, err
	}
	up := cte("up")
	scope := r.within(up, prefix{r.hsql.up, []any{id}})
	order := func(s *sql.Selector) { s.OrderBy(sql.Desc(up.C("depth"))) }
	items, err := r.a.List(ctx, r.db.Read(), scope, order, 0, 0)
	if err != nil {
		return nil, r.storeError(err)
	}
	return r.rows(items), nil
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
	Row      ent.HierarchyRow
	Children []*Node
}

// Tree returns the tree below tq.Root (or the whole forest), tq.Depth
// levels deep, siblings by id. More than limit nodes is a 400 that says
// how to ask for less.
func (r *Resource[T]) Tree(ctx context.Context, tq TreeQuery, limit int) ([]*Node, error) {
	p := prefix{r.hsql.roots, []any{tq.Depth}}
	if tq.Root != nil {
		if _, err := r.Get(ctx, *tq.Root); err != nil {
			return nil, err
		}
		p = prefix{r.hsql.forest, []any{*tq.Root, tq.Depth}}
	}
	order := func(s *sql.Selector) { s.OrderBy(sql.Asc(s.C(r.cols.ID))) }
	items, err := r.a.List(ctx, r.db.Read(), r.within(cte("forest"), p), order, limit+1, 0)
	if err != nil {
		return nil, r.storeError(err)
	}
	if len(items) > limit {
		return nil, apierror.New(apierror.Invalid, fmt.Sprintf(
			"The tree has more than %d nodes; ask for part of it with root=<id> and/or depth=<levels>.", limit))
	}
	nodes := make(map[int]*Node, len(items))
	for _, it := range items {
		row := r.a.Row(it)
		nodes[row.ID] = &Node{Row: row}
	}
	var roots []*Node
	for _, it := range items { // in id order, so children come out in id order
		n := nodes[r.a.Row(it).ID]
		// A root's parent (if any) is never among the rows fetched.
		if parent, ok := nodes[ptrValue(n.Row.ParentID)]; ok {
			parent.Children = append(parent.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	return roots, nil
}

func ptrValue(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// appendNodes renders nodes as [{"id":..,...,"children":[...]}, ...].
func (r *Resource[T]) appendNodes(b []byte, nodes []*Node) []byte {
	b = append(b, '[')
	for i, n := range nodes {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.appendFields(b, n.Row)
		b = append(b, `,"children":`...)
		b = r.appendNodes(b, n.Children)
		b = append(b, '}')
	}
	return append(b, ']')
}
