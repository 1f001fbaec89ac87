package resource

import (
	"context"
	"math"
	"strings"

	"personnel/db"
	"personnel/record"
)

// Page is one page of a list.
type Page struct {
	Rows     []record.Row
	Count    int // records matching the filters
	Page     int // the page returned, from 1
	PageSize int
}

// LastPage is the number of the last page (1 for an empty result).
func (p Page) LastPage() int { return max(1, (p.Count+p.PageSize-1)/p.PageSize) }

// List returns the page q asks for. A page past the last is a 404.
func (r *Resource) List(ctx context.Context, q Query) (Page, error) {
	src, err := r.filtered(ctx, q, nil)
	if err != nil {
		return Page{}, r.storeError(err)
	}
	return r.list(ctx, q, src)
}

// source is where the records of a list come from.
type source interface {
	fetch(ctx context.Context, limit, offset int) ([]record.Row, error)
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

// tableSource lists the table: within scope, filtered and ordered. Its
// substring filters find their records by LIKE over the folded column
// unless page or tally says to go through the filter's substring index
// (search.go) for the page or the count; known is the count when it is
// known already (-1 otherwise).
type tableSource struct {
	r     *Resource
	q     Query
	scope *scope
	page  through
	tally through
	known int
	// idsPage reads the page's ids from the substring index alone, in id
	// order, when its one filter is a search the index answers.
	idsPage bool
	// walk, when above 0, first looks for the page among that many
	// records in the list's order, every search by LIKE, and only when
	// they do not fill it goes through the index as page says.
	walk int
	// changes is the table's change number, read while planning the
	// searches, when numbered: a count kept at it answers for the list's
	// (countcache.go).
	changes  int64
	numbered bool
}

// listSource returns the source of q's filters and ordering within sc, with
// every search by LIKE.
func (r *Resource) listSource(q Query, sc *scope) tableSource {
	return tableSource{r: r, q: q, scope: sc, page: noIndex, tally: noIndex, known: -1}
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

func (t tableSource) fetch(ctx context.Context, limit, offset int) ([]record.Row, error) {
	if t.known >= 0 && offset >= t.known {
		return nil, nil // past the last record: nothing to look for
	}
	if t.walk > 0 {
		rows, err := t.walked(ctx, limit, offset)
		if err != nil || len(rows) == limit {
			return rows, err
		}
		t.q.Filters = sparse(t.q.Filters) // refs.go: the walk did not find them
	}
	if t.idsPage {
		return t.pageOfIDs(ctx, limit, offset)
	}
	if desc, byID := idOrder(t.q.Order); byID && t.page.filter >= 0 && t.scope == nil && t.r.db.Postgres() {
		return t.pageOfCandidates(ctx, limit, offset, desc)
	}
	if offset >= deferAfter && t.scope == nil && len(t.q.Filters) == 0 && len(t.q.Search) == 0 && !t.r.opts.Without.IDBlocks {
		if desc, ok := idOrder(t.q.Order); ok {
			rows, found, err := t.fromBlock(ctx, limit, offset, desc)
			if err != nil || found {
				return rows, err
			}
		}
	}
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
		r.whereQuery(s, "s", t.q, t.page)
		r.orderBy(s, "s", t.q.Order)
		limitOffset(s, limit, offset)
		s.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id")
		r.orderBy(s, "r", t.q.Order)
		return r.query(ctx, r.db.Reader(), s.String(), s.Args...)
	}
	s.Raw("SELECT " + r.sql.columns + " FROM ")
	t.from(s, "r")
	r.whereQuery(s, "r", t.q, t.page)
	r.orderBy(s, "r", t.q.Order)
	limitOffset(s, limit, offset)
	return r.query(ctx, r.db.Reader(), s.String(), s.Args...)
}

// fromBlock reads a page of the whole table in id order (descending when
// desc) from the block that holds its first record, as the kept block
// counts say (db/count.go), stepping over the records of that block
// alone. The statement that reads it checks that the records before the
// block are still as many as the counts said when they were read; when
// they are not (a write came between the two statements), or the counts
// cannot answer, it reports false and the page is read as usual.
func (t tableSource) fromBlock(ctx context.Context, limit, offset int, desc bool) ([]record.Row, bool, error) {
	r := t.r
	from, before, ok, err := r.table.BlockOfOffset(ctx, offset, desc)
	if err != nil || !ok {
		return nil, false, err
	}
	s := r.newSQL()
	r.selectRows(s)
	s.Raw(" JOIN (SELECT ").Col("s", "id").Raw(" FROM ").Ident(r.desc.Table).Raw(" AS ").Ident("s").Raw(" WHERE ").Col("s", "id")
	if desc {
		s.Raw(" < ")
	} else {
		s.Raw(" >= ")
	}
	s.Arg(from)
	r.orderBy(s, "s", t.q.Order)
	limitOffset(s, limit, offset-before)
	s.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id").Raw(" WHERE ")
	r.table.RecordsBefore(s, from, desc).Raw(" = ").Arg(before)
	r.orderBy(s, "r", t.q.Order)
	rows, err := r.query(ctx, r.db.Reader(), s.String(), s.Args...)
	return rows, err == nil && len(rows) > 0, err
}

func (t tableSource) count(ctx context.Context) (int, error) {
	r := t.r
	if t.known >= 0 {
		return t.known, nil
	}
	if len(t.q.Filters) == 0 && len(t.q.Search) == 0 && t.scope == nil && !r.opts.Without.StoredCount {
		// Databases count a whole table by walking an index: the count
		// kept beside it answers instead, once it can be trusted.
		if n, ok, err := r.table.StoredCount(ctx); err != nil || ok {
			return n, err
		}
	}
	// A list of searches (only those read the change number) without a
	// scope is counted again only after a write.
	keep := t.numbered && t.scope == nil
	key := ""
	if keep {
		key = filtersKey(t.q.Filters) + "\x00search " + strings.Join(t.q.Search, "\x00")
		if n, ok := r.keptAt(key, t.changes); ok {
			return n, nil
		}
	}
	// COUNT(*), not a column: the database may count index entries.
	s := r.newSQL()
	t.start(s)
	if keep {
		// Scalar subqueries, not an aggregate beside a subquery, which
		// MySQL's ONLY_FULL_GROUP_BY may refuse.
		s.Raw("SELECT (SELECT COUNT(*) FROM ")
	} else {
		s.Raw("SELECT COUNT(*) FROM ")
	}
	t.from(s, "r")
	r.whereQuery(s, "r", t.q, t.tally)
	if keep {
		s.Raw("), ")
		r.table.ChangeNumber(s)
	}
	var n int
	var changes int64
	dest := []any{&n}
	if keep {
		dest = append(dest, &changes)
	}
	if err := db.QueryRow(ctx, r.db.Reader(), s.String(), s.Args, dest...); err != nil {
		return 0, err
	}
	if keep {
		r.counts.put(key, changes, n)
	}
	return n, nil
}

// deferAfter is the offset from which a page is read with a deferred join.
// Before it the join costs more than it saves; and a filter the narrow
// index cannot check (a LIKE on MySQL) makes the join read rows out of
// order, so it is worth it only where many rows are skipped.
const deferAfter = 1000

// idOrder reports whether terms sort by id alone (the default), and in
// which direction.
func idOrder(terms []OrderBy) (desc, ok bool) {
	if len(terms) == 0 {
		return false, true
	}
	return terms[0].Desc, terms[0].Field < 0
}
