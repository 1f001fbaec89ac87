package resource

import (
	"context"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"personnel/db"
	"personnel/record"
)

// Substring filters (icontains) are served by the substring index of their
// folded column (db/substring.go) once it is trusted; until then, and for
// a value that is not valid UTF-8, by a LIKE over the folded column, as
// before the index existed. Either way the answer is the same; what the
// planner below decides is only which is cheaper.
//
// The index gives, for a search, the number of records it finds (an index
// range, costing what it matches) and their ids (the same range, sorted by
// id). A LIKE walked in the order of the list (the primary key, or the
// index an ordering follows) stops at the end of the page, after reading
// about (offset+limit) x total / matches rows when the matches are spread
// evenly, and up to the whole table when they are not (a search of a name
// in a list ordered by name finds them all in one place: "sales" at
// 1,000,000 records walked 466,000 rows before its first match). So a
// search through its index costs what it matches, a walk what the page
// needs; the count, known first, says which is cheaper. When the walk
// should be cheaper it is tried first, stopping after as many rows as the
// index would cost, so that a walk that meets clustered matches costs at
// most twice what going through the index would have. (Matches are
// clustered more often than not: "zürich", the last word of names sorted
// by name, comes once at the end of every group of names that begin
// alike, and walking to ten of them took 22,000 rows where an even spread
// would have needed 350.)

// through names the filter (by its index in the query's filters) whose
// substring index a query goes through; filter -1 goes through none.
type through struct {
	filter int
	sub    db.Substring
}

var noIndex = through{filter: -1}

// What the planner weighs, each per record, relative to reading one row of
// the table in id order and checking a LIKE on it. The weights come from
// single statements at 1,000,000 records on SQLite and PostgreSQL
// (BENCHMARKS.md, "The planner's weights"): an id from an index range
// costs about what a row walked does, a record read by id several times
// more, and a count through the index that reads each record many times
// more than a LIKE count over the table. They sit between what SQLite and
// PostgreSQL measured, so one set serves every backend.
const (
	// costID is reading one id from the index's range and sorting it.
	costID = 1
	// costJoin is that plus reading the record by id, as a page that goes
	// through the index with another order or other filters does.
	costJoin = 8
	// costCount is the same for a count, against a LIKE that scans.
	costCount = 20
)

// walkSpan is, on MySQL, how many times the rows a walk should need it
// reads before the page is looked for through the index instead.
const walkSpan = 4

// search is a substring filter that its index can serve.
type search struct {
	through
	// matches is how many records the index finds for it (candidates, for
	// a value longer than the index's grams), or the limit its count
	// stopped at.
	matches int
}

// filtered returns the source of q's records within sc (nil: the whole
// table), going through a substring index where that is cheaper.
func (r *Resource) filtered(ctx context.Context, q Query, sc *scope) (source, error) {
	r.planRefs(ctx, q.Filters)
	t := r.listSource(q, sc)
	if len(q.Search) > 0 {
		// search= across fields: each term a condition of its own, which
		// the database plans (the planner below weighs one field's).
		return t, nil
	}
	var found []search
	for i, f := range q.Filters {
		if s, ok := r.searchable(ctx, i, f); ok {
			found = append(found, s)
		}
	}
	if len(found) == 0 {
		return r.planCrossTable(ctx, t) // refs.go
	}
	if r.opts.Without.Planner {
		return r.unplanned(ctx, t, found[0])
	}
	// The one search of a list with no other filter: its count is the
	// index's (exact, and never dearer than a LIKE over the table), read
	// in one statement with the size of the table.
	alone := len(q.Filters) == 1 && sc == nil
	_, byID := idOrder(q.Order)
	// Counts are kept (countcache.go) with the change number they were
	// counted at. A search alone reads the table's number in the
	// statement that counts it (and counts only if it moved); others read
	// it first, with the size of the table, which they need anyway.
	numbered := r.numbered(ctx)
	var now state
	known := false
	if numbered && !alone {
		var err error
		if now, err = r.readState(ctx); err != nil {
			return nil, err
		}
		known = true
	}
	var err error
	if alone {
		err = r.countKept(ctx, &found[0], -1, &now, &known)
	} else {
		if !known {
			if now.total, err = r.total(ctx); err != nil {
				return nil, err
			}
		}
		// A search that is not alone is counted only as far as it
		// decides anything: beyond that many matches it is counted by
		// scan and its page walked (in id order; in another, a walk costs
		// a record read by id too, and the limit is the table).
		limit := now.total/costJoin + 1
		if !byID {
			limit = now.total + 1
		}
		for k := range found {
			if err = r.countKept(ctx, &found[k], limit, &now, &known); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	total := now.total
	if numbered && known && !slices.ContainsFunc(q.Filters, crossTable) {
		t.changes, t.numbered = now.changes, true
	}
	best := found[0]
	estimate := float64(total)
	for _, s := range found {
		if s.matches < best.matches {
			best = s
		}
		estimate *= float64(s.matches) / float64(max(total, 1))
	}
	exact := alone && best.sub.Exact()
	if exact {
		t.known = best.matches
	} else if best.matches*costCount < total {
		t.tally = best.through
	}
	// What the page costs through the index, and about what a walk costs,
	// both in rows the walk reads. In id order the walk reads the table in
	// its own order; in another it reads each row by id, through the
	// index of the ordering, as the page through the index reads its
	// matches.
	ids := exact && byID
	through := best.matches * costJoin
	switch {
	case ids:
		through = best.matches * costID
	case !byID:
		through = best.matches
	}
	offset, pageSize := (q.Page-1)*q.PageSize, q.PageSize
	if q.Last {
		offset = (max(1, int(math.Ceil(estimate/float64(pageSize)))) - 1) * pageSize
	}
	walk := float64(total)
	if estimate >= 1 {
		walk = min(walk, float64(offset+pageSize)*float64(total)/estimate)
	}
	switch {
	case through >= total:
		// Dearer than walking the whole table: the LIKE alone.
	case walk < float64(through) && sc == nil:
		t.page, t.idsPage, t.walk = best.through, ids, through
		if r.db.MySQL() {
			// MySQL reads every row of the walk's subquery before
			// filtering (a derived table with a LIMIT is materialized;
			// on MariaDB, in id order, the rows up to the walk's last id
			// are stepped over to find it), so there the walk stops at a
			// few times what it should need.
			t.walk = int(min(float64(through), walkSpan*walk+1))
		}
	case walk >= float64(through):
		t.page, t.idsPage = best.through, ids
	}
	return t, nil
}

// unplanned returns t going through s's index for both its count and its
// page, whatever they cost: what the planner above is measured against
// (PERSONNEL_WITHOUT=planner).
func (r *Resource) unplanned(ctx context.Context, t tableSource, s search) (source, error) {
	t.page, t.tally = s.through, s.through
	if r.numbered(ctx) {
		now, err := r.readState(ctx)
		if err != nil {
			return nil, err
		}
		t.changes, t.numbered = now.changes, true
	}
	return t, nil
}

// searchable returns filter i of a query, f, as a search its substring
// index can serve, if it can.
func (r *Resource) searchable(ctx context.Context, i int, f Filter) (search, bool) {
	field := &r.fields.List[f.Field]
	if f.Op != record.OpIContains || !field.Indexed || f.Value.Str == "" || !utf8.ValidString(f.Value.Str) ||
		!r.db.Trusted(ctx, r.desc.Table, db.SubstringStructure(field.Fold)) {
		return search{}, false
	}
	return search{through: through{filter: i, sub: db.NewSubstring(r.desc.Table, field.Fold, f.Value.Str)}}, true
}

// searchKey names the count of a search up to limit (-1: exact).
func searchKey(sub string, limit int) string {
	return "search " + strconv.Itoa(limit) + " " + sub
}

// countKept sets the number of records s finds, up to limit (-1:
// exactly), from the count kept for it when the table's change number is
// still the one it was counted at: now's when known says now was read,
// else the one the statement that would count reads, which counts only
// when it moved. A count is read with the size of the table (into now,
// with limit -1, unless known) and, while numbered, the change number,
// and kept.
func (r *Resource) countKept(ctx context.Context, s *search, limit int, now *state, known *bool) error {
	key := searchKey(s.sub.Key(), limit)
	kept, has := r.counts.get(key)
	if *known && has && kept.changes == now.changes {
		s.matches = kept.n
		return nil
	}
	numbered := r.numbered(ctx)
	guard := numbered && has && !*known
	q := r.newSQL().Raw("SELECT ")
	if guard {
		r.keptUnless(q, kept.changes)
	}
	// Scalar subqueries, not an aggregate beside a subquery, which
	// MySQL's ONLY_FULL_GROUP_BY may refuse.
	if limit < 0 {
		q.Raw("(SELECT COUNT(*) FROM ")
		s.sub.From(q, "g").Raw(")")
	} else {
		q.Raw("(SELECT COUNT(*) FROM (SELECT 1 AS ").Ident("one").Raw(" FROM ")
		s.sub.From(q, "g").Raw(" LIMIT ").Arg(limit).Raw(") AS ").Ident("c").Raw(")")
	}
	if guard {
		q.Raw(" END")
	}
	var changes int64
	dest := []any{&s.matches}
	if limit < 0 && !*known {
		q.Raw(", ")
		r.table.KeptCount(q)
		dest = append(dest, &now.total)
	}
	if numbered {
		q.Raw(", ")
		r.table.ChangeNumber(q)
		dest = append(dest, &changes)
	}
	if err := db.QueryRow(ctx, r.db.Reader(), q.String(), q.Args, dest...); err != nil {
		return err
	}
	if limit < 0 && !*known {
		now.total = orLarge(now.total)
		if numbered {
			// The size read with the count is as of its change number.
			now.changes, *known = changes, true
		}
	}
	switch {
	case guard && s.matches < 0:
		s.matches = kept.n // not counted: the number had not moved
	case numbered:
		r.counts.put(key, changes, s.matches)
	}
	return nil
}

// total returns about how many records the table holds: the kept count,
// trusted or not (it is only weighed).
func (r *Resource) total(ctx context.Context) (int, error) {
	n, _, err := r.table.StoredCount(ctx)
	return orLarge(n), err
}

// orLarge is a kept count n, or when there is none a large number, so that
// searches go through their index.
func orLarge(n int) int {
	if n > 0 {
		return n
	}
	return math.MaxInt32
}

// walked looks for the page among the first t.walk records in the list's
// order that the filters other than searches select; the searches, by
// LIKE, then pick the page from those. A full page is the page; a short
// one may only mean the walk stopped too soon. The walk reads only the
// columns the searches and the order need (MySQL copies every row it
// walks into a temporary table), and then the page's rows by id.
func (t tableSource) walked(ctx context.Context, limit, offset int) ([]record.Row, error) {
	r := t.r
	if desc, byID := idOrder(t.q.Order); byID && t.scope == nil && r.db.MariaDB() {
		return t.walkedToBound(ctx, limit, offset, desc)
	}
	var searches, others []Filter
	cols := []string{"id"}
	need := func(col string) {
		if col != "" && !slices.Contains(cols, col) {
			cols = append(cols, col)
		}
	}
	for _, f := range t.q.Filters {
		switch {
		case f.Op == record.OpIContains:
			searches = append(searches, f)
			need(r.fields.List[f.Field].Fold)
		case f.dense: // checked as walked, as a search is (refs.go)
			searches = append(searches, f)
			if fd := &r.fields.List[f.Field]; fd.Stored() {
				need(fd.Column)
			}
		default:
			others = append(others, f)
		}
	}
	for _, o := range t.q.Order {
		if o.Field >= 0 {
			need(r.fields.List[o.Field].Fold)
			need(r.fields.List[o.Field].Column)
		}
	}
	s := r.newSQL()
	t.start(s)
	r.selectRows(s)
	s.Raw(" JOIN (SELECT ").Col("w", "id").Raw(" FROM (SELECT ")
	s.List(len(cols), func(i int) { s.Col("r", cols[i]) })
	s.Raw(" FROM ")
	t.from(s, "r")
	r.where(s, "r", others, noIndex)
	r.orderBy(s, "r", t.q.Order)
	s.Raw(" LIMIT ").Arg(t.walk).Raw(") AS ").Ident("w")
	r.where(s, "w", searches, noIndex)
	r.orderBy(s, "w", t.q.Order)
	limitOffset(s, limit, offset)
	s.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id")
	r.orderBy(s, "r", t.q.Order)
	return r.query(ctx, r.db.Reader(), s.String(), s.Args...)
}

// walkedToBound is walked for a list in id order on MariaDB, without the
// temporary table: the walk's last id (the t.walk-th record the filters
// other than searches select, or past every id when there are fewer) is
// read first, in a one-row derived table that MariaDB reads while
// planning, so that the page is a range of the primary key up to it,
// read in order and checked row by row, which stops at the page's last
// match. (With the bound a scalar subquery instead, MariaDB does not
// range on it and, for a search that finds too little within it, walks
// the whole table.) Whatever the bound, a full page is the page: every
// record before its last match was read.
func (t tableSource) walkedToBound(ctx context.Context, limit, offset int, desc bool) ([]record.Row, error) {
	r := t.r
	var others []Filter
	for _, f := range t.q.Filters {
		if f.Op != record.OpIContains && !f.dense {
			others = append(others, f)
		}
	}
	past, cmp := int64(math.MaxInt64), " <= "
	if desc {
		past, cmp = math.MinInt64, " >= "
	}
	s := r.newSQL()
	r.selectRows(s)
	s.Raw(" JOIN (SELECT ").Col("w", "id").Raw(" FROM (SELECT COALESCE((SELECT ").Col("b", "id").Raw(" FROM ").Ident(r.desc.Table).Raw(" AS ").Ident("b")
	r.where(s, "b", others, noIndex)
	r.orderBy(s, "b", t.q.Order)
	s.Raw(" LIMIT 1 OFFSET ").Arg(t.walk-1).Raw("), ").Arg(past).Raw(") AS ").Ident("bound").Raw(" LIMIT 1) AS ").Ident("k").
		Raw(" JOIN ").Ident(r.desc.Table).Raw(" AS ").Ident("w").Raw(" ON ").Col("w", "id").Raw(cmp).Col("k", "bound")
	r.where(s, "w", t.q.Filters, noIndex)
	r.orderBy(s, "w", t.q.Order)
	limitOffset(s, limit, offset)
	s.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id")
	r.orderBy(s, "r", t.q.Order)
	return r.query(ctx, r.db.Reader(), s.String(), s.Args...)
}

// pageOfIDs reads a page in id order whose ids come from the substring
// index alone (the page's one filter being a search it answers), then
// only the page's rows.
func (t tableSource) pageOfIDs(ctx context.Context, limit, offset int) ([]record.Row, error) {
	r := t.r
	dir := " ASC"
	if desc, _ := idOrder(t.q.Order); desc {
		dir = " DESC"
	}
	q := r.newSQL()
	r.selectRows(q)
	q.Raw(" JOIN (SELECT ").Col("g", "id").Raw(" FROM ")
	// By id + 0, which no index is in the order of: PostgreSQL, whose
	// estimate of an index range knows nothing of the lcp bound, would
	// otherwise walk the primary key (id, gram) in id order for the few
	// ids of the range, which for a search that finds nothing is the
	// whole index; sorting what the range holds costs what it finds
	// (BENCHMARKS.md, "The planner's weights").
	t.page.sub.From(q, "g").Raw(" ORDER BY ").Col("g", "id").Raw(" + 0" + dir)
	limitOffset(q, limit, offset)
	q.Raw(") AS ").Ident("p").Raw(" ON ").Col("r", "id").Raw(" = ").Col("p", "id").Raw(" ORDER BY ").Col("r", "id").Raw(dir)
	return r.query(ctx, r.db.Reader(), q.String(), q.Args...)
}

// pageOfCandidates reads a page in id order through the substring index
// of t.page on PostgreSQL: the records the index finds, sorted by id, are
// read one by one and checked against the filters (the search's own LIKE
// when the index gives only candidates) until the page is full, so that a
// page of ten costs about ten records read, not every record found. (With
// the index's ids as an IN, PostgreSQL reads every record found, then
// sorts: 650 for a search longer than the grams at 1,000,000 records.)
// The ids are sorted by id + 0, as in pageOfIDs, and the page is ordered
// by that sorted column, so that the sort is the page's order.
func (t tableSource) pageOfCandidates(ctx context.Context, limit, offset int, desc bool) ([]record.Row, error) {
	r := t.r
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	rest := t.q.Filters
	if t.page.sub.Exact() {
		rest = slices.Delete(slices.Clone(rest), t.page.filter, t.page.filter+1)
	}
	s := r.newSQL()
	r.selectRows(s)
	s.Raw(" JOIN (SELECT ").Col("g", "id").Raw(" + 0 AS ").Ident("id").Raw(" FROM ")
	t.page.sub.From(s, "g").Raw(" ORDER BY ").Col("g", "id").Raw(" + 0" + dir)
	s.Raw(") AS ").Ident("c").Raw(" ON ").Col("r", "id").Raw(" = ").Col("c", "id")
	r.where(s, "r", rest, noIndex)
	s.Raw(" ORDER BY ").Col("c", "id").Raw(dir)
	limitOffset(s, limit, offset)
	return r.query(ctx, r.db.Reader(), s.String(), s.Args...)
}
