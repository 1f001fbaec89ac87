package resource

import (
	"context"
	"math"
	"strings"
	"unicode/utf8"

	"entgo.io/ent/dialect/sql"

	"personnel/casefold"
	"personnel/db"
	"personnel/ent"
)

// Page is one page of a list.
type Page struct {
	Rows     []ent.HierarchyRow
	Count    int // records matching the filters
	Page     int // the page returned, from 1
	PageSize int
}

// LastPage is the number of the last page (1 for an empty result).
func (p Page) LastPage() int { return max(1, (p.Count+p.PageSize-1)/p.PageSize) }

// List returns the page q asks for. A page past the last is a 404.
func (r *Resource[T]) List(ctx context.Context, q Query) (Page, error) {
	if src, ok := r.search(q); ok {
		return r.list(ctx, q, src)
	}
	return r.list(ctx, q, r.table(q, nil))
}

// source is where the records of a list come from.
type source[T any] interface {
	fetch(ctx context.Context, limit, offset int) ([]T, error)
	count(ctx context.Context) (int, error)
}

// list pages through src. The count is skipped when the page itself shows
// the total: a page shorter than page_size is the last one, so the count
// is its offset plus its length.
func (r *Resource[T]) list(ctx context.Context, q Query, src source[T]) (Page, error) {
	p := Page{Page: q.Page, PageSize: q.PageSize}
	if q.Last {
		n, err := src.count(ctx)
		if err != nil {
			return Page{}, r.storeError(err)
		}
		p.Count = n
		p.Page = p.LastPage()
	} else if q.Page > math.MaxInt/q.PageSize {
		return Page{}, errInvalidPage()
	}
	offset := (p.Page - 1) * p.PageSize
	items, err := src.fetch(ctx, p.PageSize, offset)
	if err != nil {
		return Page{}, r.storeError(err)
	}
	p.Rows = r.rows(items)
	if !q.Last {
		switch {
		case len(items) == 0 && p.Page > 1:
			return Page{}, errInvalidPage()
		case len(items) < p.PageSize:
			p.Count = offset + len(items)
		default:
			n, err := src.count(ctx)
			if err != nil {
				return Page{}, r.storeError(err)
			}
			p.Count = n
		}
	}
	return p, nil
}

// tableSource lists the table: within scope (a predicate that narrows the
// records first, such as a record's descendants), filtered and ordered.
type tableSource[T any] struct {
	r            *Resource[T]
	where, order func(*sql.Selector)
	unfiltered   bool // no filter and no scope: every record counts
}

// table returns the source of q's filters and ordering within scope.
func (r *Resource[T]) table(q Query, scope func(*sql.Selector)) tableSource[T] {
	where := r.where(q.Filters)
	if scope != nil {
		filters := where
		where = func(s *sql.Selector) {
			scope(s)
			if filters != nil {
				filters(s)
			}
		}
	}
	return tableSource[T]{r: r, where: where, order: r.order(q.Order), unfiltered: where == nil}
}

func (t tableSource[T]) fetch(ctx context.Context, limit, offset int) ([]T, error) {
	c := t.r.db.Read()
	if offset >= deferAfter {
		return t.r.a.List(ctx, c, t.r.keyed(t.where, t.order, limit, offset), t.order, 0, 0)
	}
	return t.r.a.List(ctx, c, t.where, t.order, limit, offset)
}

func (t tableSource[T]) count(ctx context.Context) (int, error) {
	if t.unfiltered && !t.r.db.MySQL() {
		// SQLite counts by walking an index; its triggers keep the count.
		var n int
		err := queryRow(ctx, t.r.db.Read(), t.r.sql.storedCount, nil, &n)
		return n, err
	}
	return t.r.count(ctx, t.r.db.Read(), t.where)
}

// deferAfter is the offset from which a page is read with a deferred join
// (keyed). Before it the join costs more than it saves; and a filter the
// narrow index cannot check (a LIKE on MySQL) makes the join read rows out
// of order, so it is worth it only where many rows are skipped.
const deferAfter = 1000

// keyed returns a predicate that joins the table to the ids of one page:
// a deferred join. The page is found in a subquery that reads only ids,
// which SQLite and MySQL take from a narrow index (on id, or the index the
// ordering follows), so the offset steps over index entries instead of
// whole rows; only the page's own rows are then read.
func (r *Resource[T]) keyed(where, order func(*sql.Selector), limit, offset int) func(*sql.Selector) {
	t := sql.Table(r.cols.Table)
	ids := sql.Dialect(r.db.Dialect).Select(t.C(r.cols.ID)).From(t)
	if where != nil {
		where(ids)
	}
	order(ids)
	page := ids.Limit(limit).Offset(offset).As("page")
	return func(s *sql.Selector) {
		s.Join(page).On(s.C(r.cols.ID), page.C(r.cols.ID))
	}
}

// count returns how many records where selects. It is not ent's Count,
// which counts a column and so reads every row; COUNT(*) lets the
// database count index entries instead.
func (r *Resource[T]) count(ctx context.Context, c *ent.Client, where func(*sql.Selector)) (int, error) {
	s := sql.Dialect(r.db.Dialect).Select(sql.Count("*")).From(sql.Table(r.cols.Table))
	if where != nil {
		where(s)
	}
	query, args := s.Query()
	var n int
	err := queryRow(ctx, c, query, args, &n)
	return n, err
}

func (r *Resource[T]) rows(items []T) []ent.HierarchyRow {
	rows := make([]ent.HierarchyRow, len(items))
	for i, it := range items {
		rows[i] = r.a.Row(it)
	}
	return rows
}

// where turns filters into a predicate on the folded and exact columns.
// An exact filter also compares the folded column, which is what the
// indexes are on.
func (r *Resource[T]) where(f Filters) func(*sql.Selector) {
	if f == (Filters{}) {
		return nil
	}
	c := r.cols
	return func(s *sql.Selector) {
		if f.Code != nil {
			s.Where(sql.And(sql.EQ(s.C(c.CodeFold), casefold.Fold(*f.Code)), sql.EQ(s.C(c.Code), *f.Code)))
		}
		if f.Name != nil {
			s.Where(sql.And(sql.EQ(s.C(c.NameFold), casefold.Fold(*f.Name)), sql.EQ(s.C(c.Name), *f.Name)))
		}
		if f.CodeContains != nil {
			s.Where(r.contains(s, c.CodeFold, *f.CodeContains))
		}
		if f.NameContains != nil {
			s.Where(r.contains(s, c.NameFold, *f.NameContains))
		}
		if f.Parent != nil {
			s.Where(sql.EQ(s.C(c.Parent), *f.Parent))
		}
		if f.ParentIsNull != nil {
			if *f.ParentIsNull {
				s.Where(sql.IsNull(s.C(c.Parent)))
			} else {
				s.Where(sql.NotNull(s.C(c.Parent)))
			}
		}
	}
}

// contains selects records whose folded column holds the folded value. On
// SQLite a value long enough for trigrams asks the search index; otherwise
// it is a LIKE over the folded column, its wildcards escaped.
func (r *Resource[T]) contains(s *sql.Selector, col, value string) *sql.Predicate {
	phrase, ok := r.phrase(col, value)
	if !ok {
		return sql.Contains(s.C(col), casefold.Fold(value))
	}
	return sql.ExprP(s.C(r.cols.ID)+" IN (SELECT rowid FROM "+r.sql.search+" WHERE "+r.sql.search+" MATCH ?)", phrase)
}

// phrase returns the FTS5 query that finds the records whose folded column
// contains value, when the search index can answer it: on SQLite, for a
// value of at least three characters. A quoted phrase of trigrams matches
// exactly the texts containing it, with % and _ as plain characters.
func (r *Resource[T]) phrase(col, value string) (string, bool) {
	folded := casefold.Fold(value)
	if r.db.MySQL() || utf8.RuneCountInString(folded) < db.SearchMinRunes {
		return "", false
	}
	return col + ` : "` + strings.ReplaceAll(folded, `"`, `""`) + `"`, true
}

// searchSource lists the records the search index finds, in id order: the
// common search (substring filters only, the default order) answered from
// the index alone, its count and its page of ids, reading only the page's
// rows. Joining every match to the table, as other filters or orders
// need, costs several times more for a common word.
type searchSource[T any] struct {
	r     *Resource[T]
	match string
	desc  bool
}

// search returns a searchSource for q when one can answer it.
func (r *Resource[T]) search(q Query) (searchSource[T], bool) {
	f := q.Filters
	desc, byID := idOrder(q.Order)
	if !byID || (f.CodeContains == nil && f.NameContains == nil) ||
		f != (Filters{CodeContains: f.CodeContains, NameContains: f.NameContains}) {
		return searchSource[T]{}, false
	}
	var parts []string
	for _, c := range []struct {
		col   string
		value *string
	}{{r.cols.CodeFold, f.CodeContains}, {r.cols.NameFold, f.NameContains}} {
		if c.value == nil {
			continue
		}
		p, ok := r.phrase(c.col, *c.value)
		if !ok {
			return searchSource[T]{}, false
		}
		parts = append(parts, p)
	}
	return searchSource[T]{r: r, match: strings.Join(parts, " AND "), desc: desc}, true
}

func (s searchSource[T]) fetch(ctx context.Context, limit, offset int) ([]T, error) {
	by := sql.Asc
	if s.desc {
		by = sql.Desc
	}
	fts := sql.Table(db.SearchTable(s.r.cols.Table))
	ids := sql.Dialect(s.r.db.Dialect).Select(sql.As("rowid", "id")).From(fts).
		Where(sql.ExprP(s.r.sql.search+" MATCH ?", s.match)).
		OrderBy(by("rowid")).Limit(limit).Offset(offset).As("page")
	join := func(sel *sql.Selector) { sel.Join(ids).On(sel.C(s.r.cols.ID), ids.C("id")) }
	order := func(sel *sql.Selector) { sel.OrderBy(by(sel.C(s.r.cols.ID))) }
	return s.r.a.List(ctx, s.r.db.Read(), join, order, 0, 0)
}

func (s searchSource[T]) count(ctx context.Context) (int, error) {
	var n int
	err := queryRow(ctx, s.r.db.Read(), s.r.sql.searchCount, []any{s.match}, &n)
	return n, err
}

// order turns ordering terms into ORDER BY. Code and name sort by their
// folded value, then (for names, which repeat) by the exact value, both in
// the term's direction; id breaks the remaining ties in the direction of the
// last term, so pages never overlap or skip.
func (r *Resource[T]) order(terms []OrderBy) func(*sql.Selector) {
	c := r.cols
	return func(s *sql.Selector) {
		dir := func(col string, desc bool) string {
			if desc {
				return sql.Desc(s.C(col))
			}
			return sql.Asc(s.C(col))
		}
		lastDesc := false
		for _, t := range terms {
			lastDesc = t.Desc
			switch t.Field {
			case FieldID:
				s.OrderBy(dir(c.ID, t.Desc))
				return
			case FieldCode: // unique, so nothing after it matters
				s.OrderBy(dir(c.CodeFold, t.Desc))
				return
			case FieldName:
				s.OrderBy(dir(c.NameFold, t.Desc), dir(c.Name, t.Desc))
			}
		}
		s.OrderBy(dir(c.ID, lastDesc))
	}
}
