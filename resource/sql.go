package resource

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"personnel/casefold"
	"personnel/db"
	"personnel/record"
)

// This file holds the statements the resource's reads and checks use:
// those that do not depend on the request as text, rendered once at
// registration (db.Render: {name} marks are the resource's configured
// tables and columns), and the pieces list queries are built from per
// request (filters, ordering). The writes go through the table's write
// hook (db.Table), whose statements are in package db beside what each
// structure keeps. In every query the resource's table is aliased r (and
// s in a subquery), so filters and ordering are written once for both.

// statements are the fixed statements of one resource.
type statements struct {
	columns     string // the selected columns of a row, on alias r
	get         string // one record by id
	getLocked   string // the same, locked for update (not on SQLite)
	parentOf    string // the parent of a record, share-locked (not on SQLite)
	idByCode    string // the record holding a folded code
	numChildren string // how many records name a record as parent
	height      string // how many levels lie below ? (0 for a leaf)
	walk        treeSQL
	closure     treeSQL
}

// treeSQL are the WITH clauses of the hierarchy queries, each naming a
// table of (id, depth): by a recursive walk of the table (walk), or from
// its closure table (closure), a range of an index each.
type treeSQL struct {
	closure bool
	subtree string // subtree: every record below ?, 1 for its children
	up      string // up: the ancestors of ?, 1 for the parent
	forest  string // forest: the tree from root ? down ? levels, 0 for the root
	roots   string // forest: the whole forest ? levels down, 0 for the roots
}

func (r *Resource) newSQL() *db.SQL { return r.db.SQL() }

func (r *Resource) newStatements() statements {
	fs := r.fields
	names := db.Names{"table": r.desc.Table, "code_fold": fs.List[fs.Code].Fold}
	cols := "r.id"
	for i, c := range fs.Selected() {
		k := fmt.Sprint("c", i)
		names[k] = c
		cols += ", r.{" + k + "}"
	}
	render := func(text string) string { return r.db.Render(text, names) }
	locks := r.db.Locks()
	var st statements
	st.columns = render(cols)
	st.get = render("SELECT " + cols + " FROM {table} AS r WHERE r.id = ?")
	st.getLocked = st.get + locks.Update
	st.idByCode = render("SELECT id FROM {table} WHERE {code_fold} = ?")
	if !fs.Hierarchical() {
		return st
	}
	names["parent"] = fs.List[fs.Parent].Column
	names["closure"] = db.ClosureTable(r.desc.Table)
	st.parentOf = render("SELECT {parent} FROM {table} WHERE id = ?" + locks.Share)
	st.numChildren = render("SELECT COUNT(*) FROM {table} WHERE {parent} = ?")
	depth := strconv.Itoa(MaxDepth)
	down := func(cte, depth0, anchor, limit string) string {
		return render("WITH RECURSIVE " + cte + " (id, depth) AS (\n" +
			"  SELECT id, " + depth0 + " FROM {table} WHERE " + anchor + "\n" +
			"  UNION ALL\n" +
			"  SELECT c.id, " + cte + ".depth + 1 FROM {table} AS c JOIN " + cte + " ON c.{parent} = " + cte + ".id WHERE " + cte + ".depth < " + limit + ")")
	}
	st.walk = treeSQL{
		subtree: down("subtree", "1", "{parent} = ?", depth),
		forest:  down("forest", "0", "id = ?", "?"),
		roots:   down("forest", "0", "{parent} IS NULL", "?"),
		up: render(`WITH RECURSIVE up (id, depth) AS (
  SELECT {parent}, 1 FROM {table} WHERE id = ? AND {parent} IS NOT NULL
  UNION ALL
  SELECT p.{parent}, up.depth + 1 FROM {table} AS p JOIN up ON p.id = up.id WHERE p.{parent} IS NOT NULL AND up.depth < ` + depth + ")"),
	}
	st.closure = treeSQL{
		closure: true,
		subtree: render("WITH subtree (id, depth) AS (SELECT c.descendant, c.depth FROM {closure} AS c WHERE c.ancestor = ? AND c.depth > 0)"),
		up:      render("WITH up (id, depth) AS (SELECT c.ancestor, c.depth FROM {closure} AS c WHERE c.descendant = ? AND c.depth > 0)"),
		forest:  render("WITH forest (id, depth) AS (SELECT c.descendant, c.depth FROM {closure} AS c WHERE c.ancestor = ? AND c.depth <= ?)"),
		roots: render("WITH forest (id, depth) AS (SELECT c.descendant, c.depth FROM {closure} AS c JOIN {table} AS t ON t.id = c.ancestor " +
			"WHERE t.{parent} IS NULL AND c.depth <= ?)"),
	}
	st.height = st.walk.subtree + " SELECT COALESCE(MAX(depth), 0) FROM subtree"
	return st
}

// tree returns the hierarchy queries to answer with: from the closure
// once it is trusted (db/trust.go), by walking the table until then.
func (r *Resource) tree(ctx context.Context) treeSQL {
	if r.db.Trusted(ctx, r.desc.Table, db.ClosureStructure) {
		return r.sql.closure
	}
	return r.sql.walk
}

// where writes the filters on alias a, as " WHERE ..." (nothing without
// filters). An exact filter on a folded field also compares the folded
// column, which is what its index is on. The substring filter via names
// finds its records through its substring index.
func (r *Resource) where(s *db.SQL, a string, filters []Filter, via through) {
	r.whereWith(s, a, filters, nil, via)
}

// whereQuery writes the filters and the search terms of q on alias a.
func (r *Resource) whereQuery(s *db.SQL, a string, q Query, via through) {
	r.whereWith(s, a, q.Filters, q.Search, via)
}

func (r *Resource) whereWith(s *db.SQL, a string, filters []Filter, terms []string, via through) {
	first := true
	and := func() {
		if first {
			s.Raw(" WHERE ")
			first = false
		} else {
			s.Raw(" AND ")
		}
	}
	for i, flt := range filters {
		f := &r.fields.List[flt.Field]
		and()
		if f.IsRef() {
			r.refWhere(s, a, f, flt) // refs.go
			continue
		}
		if (flt.Op == record.OpExact || flt.Op == record.OpIContains) && (f.Kind == record.KindText || f.Kind == record.KindChoice) && !utf8.ValidString(flt.Value.Str) {
			// Stored text is valid UTF-8, so this matches nothing; and
			// PostgreSQL refuses such an argument rather than compare it.
			s.Raw("1 = 0")
			continue
		}
		switch flt.Op {
		case record.OpExact:
			if f.Fold != "" {
				s.Col(a, f.Fold).Raw(" = ").Arg(casefold.Fold(flt.Value.Str)).Raw(" AND ")
			}
			s.Col(a, f.Column).Raw(" = ").Arg(f.Arg(flt.Value))
		case record.OpGTE:
			s.Col(a, f.Column).Raw(" >= ").Arg(f.Arg(flt.Value))
		case record.OpLTE:
			s.Col(a, f.Column).Raw(" <= ").Arg(f.Arg(flt.Value))
		case record.OpIsNull:
			s.Col(a, f.Column)
			if flt.Value.Int == 1 {
				s.Raw(" IS NULL")
			} else {
				s.Raw(" IS NOT NULL")
			}
		case record.OpIContains:
			if i == via.filter {
				s.Col(a, "id").Raw(" IN (SELECT ").Col("g", "id").Raw(" FROM ")
				via.sub.From(s, "g").Raw(")")
				if via.sub.Exact() {
					continue
				}
				s.Raw(" AND ")
			}
			r.contains(s, a, f, flt.Value.Str)
		}
	}
	for _, term := range terms {
		and()
		r.searchTerm(s, a, term)
	}

}

// searchTerm selects records one of whose searched fields (those with an
// icontains filter) holds the folded term: through a field's substring
// index where it has a trusted one and the term fits in its grams, by LIKE
// otherwise.
func (r *Resource) searchTerm(s *db.SQL, a, term string) {
	s.Raw("(")
	n := 0
	for i := range r.fields.List {
		f := &r.fields.List[i]
		if !f.Has(record.OpIContains) {
			continue
		}
		if n > 0 {
			s.Raw(" OR ")
		}
		n++
		if !utf8.ValidString(term) {
			s.Raw("1 = 0")
			continue
		}
		if sub := db.NewSubstring(r.desc.Table, f.Fold, term); f.Indexed && sub.Exact() && r.db.Trusted(context.Background(), r.desc.Table, db.SubstringStructure(f.Fold)) {
			s.Col(a, "id").Raw(" IN (SELECT ").Col("g", "id").Raw(" FROM ")
			sub.From(s, "g").Raw(")")
			continue
		}
		r.contains(s, a, f, term)
	}
	if n == 0 {
		s.Raw("1 = 0")
	}
	s.Raw(")")
}

// contains selects records whose folded column holds folded: a LIKE over
// the folded column, its wildcards escaped. The escape character is '!'
// because a backslash means different things in MySQL's and SQLite's
// string literals.
func (r *Resource) contains(s *db.SQL, a string, f *record.Field, folded string) {
	esc := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(folded)
	s.Col(a, f.Fold).Raw(" LIKE ").Arg("%" + esc + "%").Raw(" ESCAPE '!'")
}

// orderBy writes ORDER BY for terms on alias a. Folded fields sort by their
// folded value, then (unless unique) by the exact value, both in the
// term's direction; id breaks the remaining ties in the direction of the
// last term, so pages never overlap or skip.
func (r *Resource) orderBy(s *db.SQL, a string, terms []OrderBy) {
	s.Raw(" ORDER BY ")
	dir := func(desc bool) string {
		if desc {
			return " DESC"
		}
		return " ASC"
	}
	// SQLite and MySQL sort nulls before every value; PostgreSQL after,
	// unless told. Only columns that may hold null are told, so the
	// ordering by code, name and id stays the one their indexes serve.
	nulls := func(desc bool) string {
		if desc {
			return " NULLS LAST"
		}
		return " NULLS FIRST"
	}
	lastDesc := false
	for _, t := range terms {
		lastDesc = t.Desc
		if t.Field < 0 {
			break
		}
		f := &r.fields.List[t.Field]
		order := dir(t.Desc)
		if r.db.Postgres() && t.Field != r.fields.Code && t.Field != r.fields.Name {
			order += nulls(t.Desc)
		}
		if t.Target {
			r.orderByTarget(s, a, t, order) // refs.go
			continue
		}
		if f.Fold != "" {
			s.Col(a, f.Fold).Raw(order + ", ")
			if f.Unique {
				break
			}
		}
		s.Col(a, f.Column).Raw(order + ", ")
	}
	s.Col(a, "id").Raw(dir(lastDesc))
}

// selectRows writes SELECT of a row's columns from the table aliased r.
func (r *Resource) selectRows(s *db.SQL) {
	s.Raw("SELECT " + r.sql.columns + " FROM ").Ident(r.desc.Table).Raw(" AS ").Ident("r")
}

// limitOffset writes LIMIT and OFFSET.
func limitOffset(s *db.SQL, n, offset int) {
	s.Raw(" LIMIT ").Arg(n).Raw(" OFFSET ").Arg(offset)
}
