package resource

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"personnel/casefold"
	"personnel/db"
	"personnel/ent"
)

// This file holds every statement of the resource store, all written with
// db.SQL, the one quoting helper. Statements that do not depend on the
// request are built once, at registration; list queries are built per
// request from the parsed query. In every query the resource's table is
// aliased "r" (and "s" in a subquery), so filters and ordering are written
// once for both.

// statements are the fixed statements of one resource.
type statements struct {
	columns     string // the selected columns of a row, on alias r
	get         string // one record by id
	getLocked   string // the same, locked for update (not on SQLite)
	parentOf    string // the parent of a record, share-locked (not on SQLite)
	idByCode    string // the record holding a folded code
	numChildren string // how many records name a record as parent
	remove      string // delete one record
	height      string // how many levels lie below ? (0 for a leaf)
	walk        treeSQL
	closure     treeSQL
}

// treeSQL are the WITH clauses of the hierarchy queries, each naming a
// table of (id, depth): by a recursive walk of the table (walk), or from
// its closure table (closure), a range of an index each.
type treeSQL struct {
	closure bool
	subtree string // "subtree": every record below ?, 1 for its children
	up      string // "up": the ancestors of ?, 1 for the parent
	forest  string // "forest": the tree from root ? down ? levels, 0 for the root
	roots   string // "forest": the whole forest ? levels down, 0 for the roots
}

func (r *Resource) newSQL() *db.SQL { return r.db.SQL() }

func (r *Resource) newStatements() statements {
	fs, table := r.fields, r.desc.Table
	var st statements
	cols := r.newSQL()
	cols.Col("r", "id").Raw(", ")
	cols.List(len(fs.List), func(i int) { cols.Col("r", fs.List[i].Column) })
	st.columns = cols.String()

	get := r.newSQL().Raw("SELECT "+st.columns+" FROM ").Ident(table).Raw(" AS ").Ident("r").
		Raw(" WHERE ").Col("r", "id").Raw(" = ").Param()
	st.get = get.String()
	locks := r.db.Locks()
	st.getLocked = st.get + locks.Update
	idByCode := r.newSQL().Raw("SELECT ").Ident("id").Raw(" FROM ").Ident(table).
		Raw(" WHERE ").Ident(fs.List[fs.Code].Fold).Raw(" = ").Param()
	st.idByCode = idByCode.String()
	st.remove = r.newSQL().Raw("DELETE FROM ").Ident(table).Raw(" WHERE ").Ident("id").Raw(" = ").Param().String()

	if !fs.Hierarchical() {
		return st
	}
	parent := fs.List[fs.Parent].Column
	st.parentOf = r.newSQL().Raw("SELECT ").Ident(parent).Raw(" FROM ").Ident(table).
		Raw(" WHERE ").Ident("id").Raw(" = ").Param().Raw(locks.Share).String()
	st.numChildren = r.newSQL().Raw("SELECT COUNT(*) FROM ").Ident(table).Raw(" WHERE ").Ident(parent).Raw(" = ").Param().String()

	st.walk = r.walkSQL(table, parent)
	st.closure = r.closureSQL(table, parent)
	st.height = r.newSQL().Raw(st.walk.subtree).Raw(" SELECT COALESCE(MAX(").Ident("depth").Raw("), 0) FROM ").Ident("subtree").String()
	return st
}

// walkSQL returns the hierarchy queries that walk table recursively.
func (r *Resource) walkSQL(table, parent string) treeSQL {
	limit := strconv.Itoa(MaxDepth)
	down := func(name, depthStart string, anchor func(s *db.SQL), depthLimit func(s *db.SQL)) string {
		s := r.newSQL()
		s.Raw("WITH RECURSIVE ").Ident(name).Raw(" (").Ident("id").Raw(", ").Ident("depth").Raw(") AS (SELECT ").
			Ident("id").Raw(", " + depthStart + " FROM ").Ident(table).Raw(" WHERE ")
		anchor(s)
		s.Raw(" UNION ALL SELECT ").Col("c", "id").Raw(", ").Col(name, "depth").Raw(" + 1 FROM ").Ident(table).Raw(" AS ").Ident("c").
			Raw(" JOIN ").Ident(name).Raw(" ON ").Col("c", parent).Raw(" = ").Col(name, "id").
			Raw(" WHERE ").Col(name, "depth").Raw(" < ")
		depthLimit(s)
		s.Raw(")")
		return s.String()
	}
	fixed := func(s *db.SQL) { s.Raw(limit) }
	param := func(s *db.SQL) { s.Param() }
	var w treeSQL
	w.subtree = down("subtree", "1", func(s *db.SQL) { s.Ident(parent).Raw(" = ").Param() }, fixed)
	w.forest = down("forest", "0", func(s *db.SQL) { s.Ident("id").Raw(" = ").Param() }, param)
	w.roots = down("forest", "0", func(s *db.SQL) { s.Ident(parent).Raw(" IS NULL") }, param)
	up := r.newSQL()
	up.Raw("WITH RECURSIVE ").Ident("up").Raw(" (").Ident("id").Raw(", ").Ident("depth").Raw(") AS (SELECT ").
		Ident(parent).Raw(", 1 FROM ").Ident(table).Raw(" WHERE ").Ident("id").Raw(" = ").Param().Raw(" AND ").Ident(parent).Raw(" IS NOT NULL").
		Raw(" UNION ALL SELECT ").Col("p", parent).Raw(", ").Col("up", "depth").Raw(" + 1 FROM ").Ident(table).Raw(" AS ").Ident("p").
		Raw(" JOIN ").Ident("up").Raw(" ON ").Col("p", "id").Raw(" = ").Col("up", "id").
		Raw(" WHERE ").Col("p", parent).Raw(" IS NOT NULL AND ").Col("up", "depth").Raw(" < " + limit + ")")
	w.up = up.String()
	return w
}

// closureSQL returns the hierarchy queries that read the closure of table.
func (r *Resource) closureSQL(table, parent string) treeSQL {
	c := db.ClosureTable(table)
	with := func(name, col, where string) *db.SQL {
		return r.newSQL().Raw("WITH ").Ident(name).Raw(" (").Ident("id").Raw(", ").Ident("depth").Raw(") AS (SELECT ").
			Col("c", col).Raw(", ").Col("c", "depth").Raw(" FROM ").Ident(c).Raw(" AS ").Ident("c").Raw(where)
	}
	cl := treeSQL{closure: true}
	cl.subtree = with("subtree", "descendant", " WHERE ").Col("c", "ancestor").Raw(" = ").Param().
		Raw(" AND ").Col("c", "depth").Raw(" > 0)").String()
	cl.up = with("up", "ancestor", " WHERE ").Col("c", "descendant").Raw(" = ").Param().
		Raw(" AND ").Col("c", "depth").Raw(" > 0)").String()
	cl.forest = with("forest", "descendant", " WHERE ").Col("c", "ancestor").Raw(" = ").Param().
		Raw(" AND ").Col("c", "depth").Raw(" <= ").Param().Raw(")").String()
	roots := with("forest", "descendant", " JOIN ")
	roots.Ident(table).Raw(" AS ").Ident("t").Raw(" ON ").Col("t", "id").Raw(" = ").Col("c", "ancestor").
		Raw(" WHERE ").Col("t", parent).Raw(" IS NULL AND ").Col("c", "depth").Raw(" <= ").Param().Raw(")")
	cl.roots = roots.String()
	return cl
}

// tree returns the hierarchy queries to answer with: from the closure
// once it is trusted (db/derived.go), by walking the table until then.
func (r *Resource) tree(ctx context.Context) treeSQL {
	if r.db.Trusted(ctx, r.desc.Table, db.ClosureStructure) {
		return r.sql.closure
	}
	return r.sql.walk
}

// insert returns the statement that inserts n records with every column.
// On PostgreSQL, which has no LastInsertId, it returns the new ids.
func (r *Resource) insert(n int) string {
	s := r.newSQL().Raw("INSERT INTO ").Ident(r.desc.Table).Raw(" (")
	cols := r.writeColumns()
	s.List(len(cols), func(i int) { s.Ident(cols[i]) })
	s.Raw(") VALUES ")
	s.List(n, func(int) {
		s.Raw("(")
		s.List(len(cols), func(int) { s.Param() })
		s.Raw(")")
	})
	if r.db.Postgres() {
		s.Raw(" RETURNING ").Ident("id")
	}
	return s.String()
}

// insertRows runs query, an insert of n records from insert, on tx and
// returns the new ids in the order of the records. A multi-row insert
// takes consecutive ids: MySQL reports the first, SQLite the last;
// PostgreSQL returns every id, in the order of the VALUES rows.
func (r *Resource) insertRows(ctx context.Context, tx *ent.Client, query string, n int, args []any) ([]int, error) {
	ids := make([]int, 0, n)
	if r.db.Postgres() {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(ids) != n {
			return nil, fmt.Errorf("%s: insert of %d records returned %d ids", r.desc.Table, n, len(ids))
		}
		return ids, nil
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	last, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	first := int(last)
	if !r.db.MySQL() {
		first = int(last) - n + 1
	}
	for i := range n {
		ids = append(ids, first+i)
	}
	return ids, nil
}

// writeColumns are the columns a create writes: each field's, and the
// folded copies beside them.
func (r *Resource) writeColumns() []string {
	var cols []string
	for _, f := range r.fields.List {
		cols = append(cols, f.Column)
		if f.Fold != "" {
			cols = append(cols, f.Fold)
		}
	}
	return cols
}

// updateSQL returns the statement that sets the columns given and its
// arguments, for the record with id.
func (r *Resource) updateSQL(id int, set []string, args []any) (string, []any) {
	s := r.newSQL().Raw("UPDATE ").Ident(r.desc.Table).Raw(" SET ")
	s.List(len(set), func(i int) { s.Ident(set[i]).Raw(" = ").Arg(args[i]) })
	s.Raw(" WHERE ").Ident("id").Raw(" = ").Arg(id)
	return s.String(), s.Args
}

// sqlValue is the argument that stores v in a column of kind k.
func sqlValue(k Kind, v Value) any {
	switch {
	case !v.Valid:
		return nil
	case k == KindInteger || k == KindParent:
		return v.Int
	case k == KindBoolean:
		return v.Int == 1
	}
	return v.Str
}

// scanner reads rows of the columns statements.columns selects.
type scanner struct {
	dest []any // &id, then a *nullText or *nullInt per field
	id   int64
}

type (
	nullText struct{ v Value }
	nullInt  struct{ v Value }
)

// Scan implements sql.Scanner for text, choices and (on MySQL and
// PostgreSQL, where they arrive as times) dates.
func (n *nullText) Scan(src any) error {
	switch s := src.(type) {
	case nil:
		n.v = Value{}
	case string:
		n.v = Value{Str: s, Valid: true}
	case []byte:
		n.v = Value{Str: string(s), Valid: true}
	case time.Time:
		n.v = Value{Str: s.Format(time.DateOnly), Valid: true}
	default:
		return errScan
	}
	return nil
}

// Scan implements sql.Scanner for integers, parent ids and booleans.
func (n *nullInt) Scan(src any) error {
	switch s := src.(type) {
	case nil:
		n.v = Value{}
	case int64:
		n.v = Value{Int: s, Valid: true}
	case bool:
		n.v = Value{Valid: true}
		if s {
			n.v.Int = 1
		}
	case []byte: // MySQL text protocol
		i, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return err
		}
		n.v = Value{Int: i, Valid: true}
	default:
		return errScan
	}
	return nil
}

type scanError struct{}

func (scanError) Error() string { return "resource: unexpected column type" }

var errScan error = scanError{}

// newScanner returns a scanner for one row of fs; it may be reused.
func newScanner(fs Fields) *scanner {
	sc := &scanner{dest: make([]any, 1+len(fs.List))}
	sc.dest[0] = &sc.id
	for i, f := range fs.List {
		switch f.Kind {
		case KindInteger, KindParent, KindBoolean:
			sc.dest[1+i] = &nullInt{}
		default:
			sc.dest[1+i] = &nullText{}
		}
	}
	return sc
}

// row returns the row last scanned.
func (sc *scanner) row() Row {
	row := Row{ID: int(sc.id), Values: make([]Value, len(sc.dest)-1)}
	for i, d := range sc.dest[1:] {
		switch v := d.(type) {
		case *nullText:
			row.Values[i] = v.v
		case *nullInt:
			row.Values[i] = v.v
		}
	}
	return row
}

// where writes the filters on alias a, as " WHERE ..." (nothing without
// filters). An exact filter on a folded field also compares the folded
// column, which is what its index is on. The substring filter via names
// finds its records through its substring index.
func (r *Resource) where(s *db.SQL, a string, filters []Filter, via through) {
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
		if (flt.Op == OpExact || flt.Op == OpIContains) && (f.Kind == KindText || f.Kind == KindChoice) && !utf8.ValidString(flt.Value.Str) {
			// Stored text is valid UTF-8, so this matches nothing; and
			// PostgreSQL refuses such an argument rather than compare it.
			s.Raw("1 = 0")
			continue
		}
		switch flt.Op {
		case OpExact:
			if f.Fold != "" {
				s.Col(a, f.Fold).Raw(" = ").Arg(casefold.Fold(flt.Value.Str)).Raw(" AND ")
			}
			s.Col(a, f.Column).Raw(" = ").Arg(sqlValue(f.Kind, flt.Value))
		case OpGTE:
			s.Col(a, f.Column).Raw(" >= ").Arg(sqlValue(f.Kind, flt.Value))
		case OpLTE:
			s.Col(a, f.Column).Raw(" <= ").Arg(sqlValue(f.Kind, flt.Value))
		case OpIsNull:
			s.Col(a, f.Column)
			if flt.Value.Int == 1 {
				s.Raw(" IS NULL")
			} else {
				s.Raw(" IS NOT NULL")
			}
		case OpIContains:
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
}

// contains selects records whose folded column holds folded: a LIKE over
// the folded column, its wildcards escaped. The escape character is '!'
// because a backslash means different things in MySQL's and SQLite's
// string literals.
func (r *Resource) contains(s *db.SQL, a string, f *Field, folded string) {
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
