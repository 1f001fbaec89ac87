package resource

import (
	"context"
	"math"
	"unicode/utf8"

	"personnel/db"
)

// Page is one page of a list.
type Page struct {
	Rows     []Row
	Count    int // records matching the filters
	Page     int // the page returned, from 1
	PageSize int
}

// LastPage is the number of the last page (1 for an empty result).
func (p Page) LastPage() int { return max(1, (p.Count+p.PageSize-1)/p.PageSize) }

// List returns the page q asks for. A page past the last is a 404.
func (r *Resource) List(ctx context.Context, q Query) (Page, error) {
	if src, ok := r.search(q); ok {
		return r.list(ctx, q, src)
	}
	return r.list(ctx, q, r.table(q, nil))
}

// source is where the records of a list come from.
type source interface {
	fetch(ctx context.Context, limit, offset int) ([]Row, error)
	count(ctx context.Context) (int, error)
}

// list pages through src. The count is skipped when the page itself shows
// the total: a page shorter than page_size is the last one, so the count
// is its offset plus its length.
func (r *Resource) list(ctx context.Context, q Query, src source) (Page, error) {
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
	rows, err := src.fetch(ctx, p.PageSize, offset)
	if err != nil {
		return Page{}, r.storeError(err)
	}
	p.Rows = rows
	if !q.Last {
		switch {
		case len(rows) == 0 && p.Page > 1:
			return Page{}, errInvalidPage()
		case len(rows) < p.PageSize:
			p.Count = offset + len(rows)
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

// scope narrows a list to the rows of a recursive query (a record's
// descendants): its WITH clause, the CTE's name, and the clause's arguments.
type scope struct {
	with string
	name string
	args []any
}

// tableSource lists the table: within scope, filtered and ordered.
type tableSource struct {
	r     *Resource
	q     Query
	scope *scope
}

// table returns the source of q's filters and ordering within sc.
func (r *Resource) table(q Query, sc *scope) tableSource {
	return tableSource{r: r, q: q, scope: sc}
}

// from writes the FROM part on alias a: the table, joined to the scope.
func (t tableSource) from(s *db.SQL, a string) {
	s.Ident(t.r.desc.Table).Raw(" AS ").Ident(a)
	if t.scope != nil {
		s.Raw(" JOIN ").Ident(t.scope.name).Raw(" ON ").Col(a, "id").Raw(" = ").Col(t.scope.name, "id")
	}
}

// start writes the WITH clause of the scope, if any.
func (t tableSource) start(s *db.SQL) {
	if t.scope != nil {
		s.Stmt(t.scope.with+" ", t.scope.args...)
	}
}

func (t tableSource) fetch(ctx context.Context, limit, offset int) ([]Row, error) {
	r := t.r
	s := r.newSQL()
	t.start(s)
	if offset >= deferAfter && t.scope == nil {
		// A deferred join: the page's ids come from a subquery that reads
		// only ids, which SQLite and MySQL take from a narrow index (on
		// id, or the index the ordering follows), so the offset steps over
		// index entries instead of whole rows; only the page's own rows
		// are then read.
		r.selectRows(s)
		s.Raw(" JOIN (SELECT ").Col("s", "id").Raw(" FROM ")
		t.from(s, "s")
		r.where(s, "s", t.q.Filters, nil)
		r.orderBy(s, "s", t.q.Order)
		limitOffset(s, limit, offset)
		s.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id")
		r.orderBy(s, "r", t.q.Order)
		return r.query(ctx, r.db.Read(), s.String(), s.Args...)
	}
	s.Raw("SELECT " + r.sql.columns + " FROM ")
	t.from(s, "r")
	r.where(s, "r", t.q.Filters, nil)
	r.orderBy(s, "r", t.q.Order)
	limitOffset(s, limit, offset)
	return r.query(ctx, r.db.Read(), s.String(), s.Args...)
}

func (t tableSource) count(ctx context.Context) (int, error) {
	r := t.r
	if len(t.q.Filters) == 0 && t.scope == nil {
		// Databases count a whole table by walking an index: the count
		// kept beside it answers instead, once it can be trusted.
		if n, ok, err := r.db.StoredCount(ctx, r.desc.Table); err != nil || ok {
			return n, err
		}
	}
	// COUNT(*), not a column: the database may count index entries.
	s := r.newSQL()
	t.start(s)
	s.Raw("SELECT COUNT(*) FROM ")
	t.from(s, "r")
	r.where(s, "r", t.q.Filters, nil)
	var n int
	err := db.QueryRow(ctx, r.db.Read(), s.String(), s.Args, &n)
	return n, err
}

// deferAfter is the offset from which a page is read with a deferred join.
// Before it the join costs more than it saves; and a filter the narrow
// index cannot check (a LIKE on MySQL) makes the join read rows out of
// order, so it is worth it only where many rows are skipped.
const deferAfter = 1000

// phrase returns the FTS5 query that finds the records whose folded column
// of f contains folded, when the search index can answer it: on SQLite, for
// a value of at least three characters. A quoted phrase of trigrams
// matches exactly the texts containing it, with % and _ as plain
// characters.
func (r *Resource) phrase(f *Field, folded string) (string, bool) {
	if !r.db.SQLite() || utf8.RuneCountInString(folded) < db.SearchMinRunes {
		return "", false
	}
	return f.Fold + ` : "` + replaceQuotes(folded) + `"`, true
}

func replaceQuotes(s string) string {
	out := make([]byte, 0, len(s)+2)
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			out = append(out, '"')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// searchSource lists the records the search index finds, in id order: the
// common search (substring filters only, the default order) answered from
// the index alone, its count and its page of ids, reading only the page's
// rows. Joining every match to the table, as other filters or orders
// need, costs several times more for a common word.
type searchSource struct {
	r     *Resource
	match string
	desc  bool
}

// search returns a searchSource for q when one can answer it.
func (r *Resource) search(q Query) (searchSource, bool) {
	desc, byID := idOrder(q.Order)
	if !byID || len(q.Filters) == 0 {
		return searchSource{}, false
	}
	match := ""
	for _, f := range q.Filters {
		if f.Op != OpIContains {
			return searchSource{}, false
		}
		p, ok := r.phrase(&r.fields.List[f.Field], f.Value.Str)
		if !ok {
			return searchSource{}, false
		}
		if match != "" {
			match += " AND "
		}
		match += p
	}
	return searchSource{r: r, match: match, desc: desc}, true
}

func (s searchSource) fetch(ctx context.Context, limit, offset int) ([]Row, error) {
	r := s.r
	dir := " ASC"
	if s.desc {
		dir = " DESC"
	}
	q := r.newSQL()
	r.selectRows(q)
	q.Raw(" JOIN (SELECT rowid AS ").Ident("id").Raw(" FROM " + r.sql.search + " WHERE " + r.sql.search + " MATCH ").Arg(s.match).
		Raw(" ORDER BY rowid" + dir)
	limitOffset(q, limit, offset)
	q.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id").Raw(" ORDER BY ").Col("r", "id").Raw(dir)
	return r.query(ctx, r.db.Read(), q.String(), q.Args...)
}

func (s searchSource) count(ctx context.Context) (int, error) {
	var n int
	err := db.QueryRow(ctx, s.r.db.Read(), s.r.sql.searchCount, []any{s.match}, &n)
	return n, err
}

// idOrder reports whether terms sort by id alone (the default), and in
// which direction.
func idOrder(terms []OrderBy) (desc, ok bool) {
	if len(terms) == 0 {
		return false, true
	}
	return terms[0].Desc, terms[0].Field < 0
}
