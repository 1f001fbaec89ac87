package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/config"
	"personnel/db"
	"personnel/jsonbody"
	"personnel/record"
)

// References (config's ref and refs fields) as the API shows them:
// written and read as ids, as Django REST Framework's related fields are;
// replaced by the referenced records' {id, code, name} with ?expand=,
// one statement for the page; filtered by id, by a list of ids,
// by null, by a hierarchy (_under: from the target's closure once it is
// trusted, by a walk of its table until then), and in Django's spelling
// through the target's code and name; a list ordered by a ref's id or by
// its target's name. Their rules on write and delete are the store's
// (db/refs.go); this file maps its errors to the API's.

// target is the resource a ref or refs field refers to.
type target struct {
	res    config.Resource
	fields record.Fields
	// pairs is the table of a refs field, with its columns: the record's
	// id and the id it refers to.
	pairs, owner, column string
	summary              string // the OpenAPI schema of an expanded record
	kept                 keptTargets
}

func (t *target) code() *record.Field { return &t.fields.List[t.fields.Code] }
func (t *target) name() *record.Field { return &t.fields.List[t.fields.Name] }

// newTargets finds the resource each reference of desc refers to among
// all (and desc itself); one that is not there is left nil, and the
// field is served without what needs it (expand, under, the Django
// spellings, ordering by name).
func newTargets(desc config.Resource, fs record.Fields, all []config.Resource) []*target {
	out := make([]*target, len(fs.List))
	for _, i := range fs.Refs() {
		f := &fs.List[i]
		var res *config.Resource
		if f.To == desc.Name {
			res = &desc
		}
		for k := range all {
			if all[k].Name == f.To {
				res = &all[k]
			}
		}
		if res == nil {
			continue
		}
		t := &target{res: *res, fields: record.New(*res), summary: camel(res.Name) + "Summary"}
		for _, e := range desc.Extra {
			if e.Name == f.Key && e.Type == config.TypeRefs {
				t.pairs = desc.RefsTable(e)
				t.owner, t.column = desc.RefsColumns(e)
			}
		}
		out[i] = t
	}
	return out
}

// Decoding, as DRF's PrimaryKeyRelatedField and ManyRelatedField do.

// decodeRef validates a ref: an id, as a parent is written.
func decodeRef(raw json.RawMessage) (record.Value, string) { return decodeParent(raw) }

// decodeRefs validates refs: a list of ids, each as a ref. The first bad
// one is the message, as in DRF; repeats count once.
func decodeRefs(f *record.Field, raw json.RawMessage) (record.Value, string) {
	if len(raw) == 0 || raw[0] != '[' {
		return record.Value{}, fmt.Sprintf("Expected a list of items but got type %q.", jsonbody.TypeName(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return record.Value{}, fmt.Sprintf("Expected a list of items but got type %q.", jsonbody.TypeName(raw))
	}
	if len(items) == 0 && f.Required {
		return record.Value{}, "This list may not be empty."
	}
	ids := make([]int64, 0, len(items))
	for _, item := range items {
		if string(item) == "null" {
			return record.Value{}, msgNoSuchParent("None")
		}
		v, msg := decodeParent(item)
		if msg != "" {
			return record.Value{}, msg
		}
		ids = append(ids, v.Int)
	}
	return record.Value{IDs: record.SortIDs(ids), Valid: true}, ""
}

// Rendering.

// appendIDs renders ids as a JSON list.
func appendIDs(b []byte, ids []int64) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return append(b, ']')
}

// expansion is what ?expand= replaces ids with: for each expanded field,
// the referenced records of a page, each rendered {id, code, name}.
type expansion map[int]map[int64][]byte

// appendRef renders value v of field i, expanded when ex expands it.
func (ex expansion) appendRef(b []byte, i int, k record.Kind, v record.Value) []byte {
	found := ex[i]
	if found == nil {
		if k == record.KindRefs {
			return appendIDs(b, v.IDs)
		}
		return appendValue(b, k, v)
	}
	if k == record.KindRef {
		if obj, ok := found[v.Int]; v.Valid && ok {
			return append(b, obj...)
		}
		// Null, or deleted between the page's statement and this one.
		return append(b, "null"...)
	}
	b = append(b, '[')
	n := 0
	for _, id := range v.IDs {
		if obj, ok := found[id]; ok {
			if n > 0 {
				b = append(b, ',')
			}
			b, n = append(b, obj...), n+1
		}
	}
	return append(b, ']')
}

// expandParam is the parameter naming the references to expand.
const expandParam = "expand"

// parseExpand reads ?expand=: comma-separated names of ref and refs
// fields. An unknown one is a 400.
func (r *Resource) parseExpand(values url.Values) ([]int, error) {
	v, ok := last(values, expandParam)
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []int
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := r.fields.ByKey(name)
		if i < 0 || !r.fields.List[i].IsRef() || r.targets[i] == nil {
			return nil, apierror.Fields(apierror.FieldError{Field: "expand", Msg: r.msgExpand(name)})
		}
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out, nil
}

func (r *Resource) msgExpand(name string) string {
	var names []string
	for _, i := range r.fields.Refs() {
		if r.targets[i] != nil {
			names = append(names, r.fields.List[i].Key)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("%q is not a reference of this resource, which has none to expand.", name)
	}
	return fmt.Sprintf("%q is not a reference of this resource; expand one of %s.", name, strings.Join(names, ", "))
}

// expand reads the records fields refer to from rows, rendered as
// ?expand= shows them: one statement, as readTargets's, which reads again
// only the records not kept (keptTargets) while the target's change
// number is the one they were kept at.
func (r *Resource) expand(ctx context.Context, fields []int, rows []record.Row) (expansion, error) {
	if len(fields) == 0 || len(rows) == 0 {
		return nil, nil
	}
	ex := expansion{}
	for _, i := range fields {
		ex[i] = map[int64][]byte{}
	}
	render := func(field int, id int64, code, name string) {
		t := r.targets[field]
		b := make([]byte, 0, len(`{"id":,"":"","":""}`)+20+len(t.code().Key)+len(t.name().Key)+len(code)+len(name))
		b = strconv.AppendInt(append(b, `{"id":`...), id, 10)
		b = apierror.AppendString(append(append(append(b, `,"`...), t.code().Key...), `":`...), code)
		b = apierror.AppendString(append(append(append(b, `,"`...), t.name().Key...), `":`...), name)
		ex[field][id] = append(b, '}')
	}
	plans, ok := r.planExpand(fields, rows)
	if !ok {
		return ex, r.readTargets(ctx, r.db.Reader(), fields, rows, render)
	}
	q := r.newSQL()
	for k := range plans {
		r.expandSQL(q, &plans[k])
	}
	changes := map[int]int64{}
	err := r.readTargetRows(ctx, r.db.Reader(), q, func(field int, id int64, code, name string) {
		if field < 0 {
			changes[-1-field] = id // the number row: its change number
			return
		}
		render(field, id, code, name)
	})
	if err != nil {
		return nil, err
	}
	for _, p := range plans {
		n, read := changes[p.field], ex[p.field]
		if p.has && n == p.changes {
			// Nothing written since they were kept: the kept records
			// are the records, and only the others were read.
			for id, obj := range p.kept {
				read[id] = obj
			}
		}
		r.targets[p.field].kept.put(n, read)
	}
	return ex, nil
}

// keptTargets holds, for a reference field, the records ?expand= rendered
// for it, with the change number of their table they were read at
// (db.Table.ChangeNumber): while a statement reads the same number, no
// write has touched that table since, and they are what a read would
// find. A number that differs replaces them all.
type keptTargets struct {
	mu      sync.Mutex
	changes int64
	has     bool
	m       map[int64][]byte
}

// maxKeptTargets bounds the records kept for one field.
const maxKeptTargets = 4096

// get returns those of ids kept, with the change number they were read
// at, and the ids not kept.
func (k *keptTargets) get(ids []int64) (kept map[int64][]byte, changes int64, has bool, missing []int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.has {
		return nil, 0, false, ids
	}
	kept = make(map[int64][]byte, len(ids))
	for _, id := range ids {
		if obj, ok := k.m[id]; ok {
			kept[id] = obj
		} else {
			missing = append(missing, id)
		}
	}
	return kept, k.changes, true, missing
}

// put keeps read, read at change number n: added to those kept at n,
// instead of those kept at an older one, and dropped when they are older
// than those kept (change numbers only grow).
func (k *keptTargets) put(n int64, read map[int64][]byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.has && n < k.changes:
		return
	case !k.has || n > k.changes || len(k.m)+len(read) > maxKeptTargets:
		k.m, k.changes, k.has = make(map[int64][]byte, len(read)), n, true
	}
	if len(k.m)+len(read) > maxKeptTargets {
		return
	}
	for id, obj := range read {
		k.m[id] = obj
	}
}

// expandPlan is what expand reads for one field: the ids of the page, and
// of those the ones not kept.
type expandPlan struct {
	field        int
	ids, missing []int64
	kept         map[int64][]byte
	changes      int64
	has          bool
}

// planExpand returns the plan of each field, or false when one of them
// cannot use what is kept (its table's change number not known trusted:
// asked in the background, without a statement more in the page's; or
// more ids than one part of readTargets's statement takes): then expand
// reads them all, as readTargets does.
func (r *Resource) planExpand(fields []int, rows []record.Row) ([]expandPlan, bool) {
	plans := make([]expandPlan, 0, len(fields))
	total := 0
	for _, i := range fields {
		t := r.targets[i]
		if !r.db.TrustedNow(t.res.Table, db.CountStructure) {
			return nil, false
		}
		ids := r.refIDs(i, rows)
		if total += len(ids); len(ids) > inChunk(r.db) || total > maxExpandIDs {
			return nil, false
		}
		p := expandPlan{field: i, ids: ids}
		p.kept, p.changes, p.has, p.missing = t.kept.get(ids)
		plans = append(plans, p)
	}
	return plans, true
}

// expandSQL writes, as parts of a UNION ALL, what expand reads for p: the
// records not kept; the others too, but only when the change number is
// not the one they were kept at (a one-row derived table, which MariaDB
// reads while planning, and the others before they look for any record,
// so that an unchanged table costs no look-up); and a row
// (-1 - field, change number, ”, ”).
func (r *Resource) expandSQL(q *db.SQL, p *expandPlan) {
	t := r.targets[p.field]
	union := func() {
		if q.Len() > 0 {
			q.Raw(" UNION ALL ")
		}
	}
	sel := func(a string) {
		q.Raw("SELECT "+strconv.Itoa(p.field)+", ").Col(a, "id").Raw(", ").Col(a, t.code().Column).Raw(", ").Col(a, t.name().Column)
	}
	table := r.db.Table(t.res)
	if len(p.missing) > 0 {
		union()
		sel("x")
		q.Raw(" FROM ").Ident(t.res.Table).Raw(" AS ").Ident("x").Raw(" WHERE ").Col("x", "id")
		inList(r.db, q, p.missing)
	}
	if p.has && len(p.missing) < len(p.ids) {
		union()
		sel("x")
		q.Raw(" FROM (SELECT ")
		table.ChangeNumber(q).Raw(" AS ").Ident("n").Raw(" LIMIT 1) AS ").Ident("g").
			Raw(" CROSS JOIN ").Ident(t.res.Table).Raw(" AS ").Ident("x").
			Raw(" WHERE ").Col("g", "n").Raw(" <> ").Arg(p.changes).Raw(" AND ").Col("x", "id")
		inList(r.db, q, p.ids)
	}
	union()
	q.Raw("SELECT " + strconv.Itoa(-1-p.field) + ", ")
	integer := "BIGINT"
	if r.db.MySQL() {
		integer = "SIGNED"
	}
	table.ChangeNumber(q.Raw("CAST(")).Raw(" AS " + integer + "), '', ''")
}

// refIDs are the ids field i refers to from rows, sorted, each once.
func (r *Resource) refIDs(i int, rows []record.Row) []int64 {
	var ids []int64
	for _, row := range rows {
		v := row.Values[i]
		if r.fields.List[i].Kind == record.KindRefs {
			ids = append(ids, v.IDs...)
		} else if v.Valid {
			ids = append(ids, v.Int)
		}
	}
	return record.SortIDs(ids)
}

// readTargets calls fn with the id, code and name of every record fields
// refer to from rows, read in tx: one statement for every field, whatever
// the number of rows (a UNION ALL of a part per field, each a thousand ids
// at most on MySQL and SQLite; more than maxExpandIDs ids take a statement
// more each).
func (r *Resource) readTargets(ctx context.Context, tx db.Tx, fields []int, rows []record.Row, fn func(field int, id int64, code, name string)) error {
	type part struct {
		field int
		ids   []int64
	}
	var parts []part
	for _, i := range fields {
		ids := r.refIDs(i, rows)
		for start := 0; start < len(ids); start += inChunk(r.db) {
			parts = append(parts, part{i, ids[start:min(start+inChunk(r.db), len(ids))]})
		}
	}
	for len(parts) > 0 {
		q, n := r.newSQL(), 0
		for len(parts) > 0 && (n == 0 || n+len(parts[0].ids) <= maxExpandIDs) {
			p := parts[0]
			parts, n = parts[1:], n+len(p.ids)
			if q.Len() > 0 {
				q.Raw(" UNION ALL ")
			}
			t := r.targets[p.field]
			q.Raw("SELECT " + strconv.Itoa(p.field) + ", ").Ident("id").Raw(", ").Ident(t.code().Column).Raw(", ").Ident(t.name().Column).
				Raw(" FROM ").Ident(t.res.Table).Raw(" WHERE ").Ident("id")
			inList(r.db, q, p.ids)
		}
		if err := r.readTargetRows(ctx, tx, q, fn); err != nil {
			return err
		}
	}
	return nil
}

// maxExpandIDs bounds the ids of one statement of readTargets, within
// SQLite's 32,766 parameters.
const maxExpandIDs = 30000

// readTargetRows runs q in tx, whose rows are (field, id, code, name), and
// calls fn with each.
func (r *Resource) readTargetRows(ctx context.Context, tx db.Tx, q *db.SQL, fn func(field int, id int64, code, name string)) error {
	rs, err := tx.Query(ctx, q.String(), q.Args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var field int
		var id int64
		var c, n string
		if err := rs.Scan(&field, &id, &c, &n); err != nil {
			return err
		}
		fn(field, id, c, n)
	}
	return rs.Err()
}

// inChunk is how many ids one inList holds.
func inChunk(d *db.DB) int { return d.InChunk() }

// inList writes the membership test of ids (db.InIDs).
func inList(d *db.DB, s *db.SQL, ids []int64) {
	args := d.InArgs(ids)
	text := d.InIDs(len(ids))
	for i, part := range strings.Split(text, "?") {
		if i > 0 {
			s.Arg(args[i-1])
		}
		s.Raw(part)
	}
}

// Filters.

// refParams are the filter parameters of references beyond newParams'
// own: Django's spellings through the target's code and name
// (department__dept_code=HR, department__dept_name__icontains=...),
// which a reference with the exact filter has.
func (r *Resource) refParams() []param {
	var ps []param
	for _, i := range r.fields.Refs() {
		f, t := &r.fields.List[i], r.targets[i]
		if t == nil || !f.Has(record.OpExact) {
			continue
		}
		for _, p := range []struct {
			key             string
			exact, contains record.Op
		}{{t.code().Key, record.OpCodeExact, record.OpCodeIContains}, {t.name().Key, record.OpNameExact, record.OpNameIContains}} {
			base := f.Key + "__" + p.key
			ps = append(ps, param{base, i, p.exact}, param{base + "__exact", i, p.exact}, param{base + "__icontains", i, p.contains})
		}
	}
	return ps
}

// parseRefFilter parses the operand of a filter on a reference; ok is
// false for an op that is not a reference's own.
func parseRefFilter(op record.Op, v string) (val record.Value, msg string, ok bool) {
	switch op {
	case record.OpIn:
		var ids []int64
		for _, part := range strings.Split(v, ",") {
			id, valid := wholeNumber(strings.TrimSpace(part))
			if !valid {
				return record.Value{}, "Enter a comma-separated list of whole numbers.", true
			}
			ids = append(ids, int64(id))
		}
		return record.Value{IDs: record.SortIDs(ids), Valid: true}, "", true
	case record.OpCodeExact, record.OpNameExact:
		return record.Value{Str: v, Valid: true}, "", true
	case record.OpCodeIContains, record.OpNameIContains:
		return record.Value{Str: casefold.Fold(v), Valid: true}, "", true
	}
	return record.Value{}, "", false
}

// encodeRefFilter writes the operand of a reference's filter back.
func encodeRefFilter(f Filter) (string, bool) {
	switch f.Op {
	case record.OpIn:
		parts := make([]string, len(f.Value.IDs))
		for i, id := range f.Value.IDs {
			parts[i] = strconv.FormatInt(id, 10)
		}
		return strings.Join(parts, ","), true
	case record.OpCodeExact, record.OpNameExact, record.OpCodeIContains, record.OpNameIContains:
		return f.Value.Str, true
	}
	return "", false
}

// crossTable reports whether a filter reads another table than the
// resource's own (its records can change without a write of this one),
// so that a count of it is kept only with that table's change number
// too (planCrossTable).
func crossTable(f Filter) bool {
	switch f.Op {
	case record.OpUnder, record.OpCodeExact, record.OpCodeIContains, record.OpNameExact, record.OpNameIContains:
		return true
	}
	return false
}

// planRefs decides, for each _under filter of filters, whether its
// target's closure answers it (trusted) or a walk of its table does.
func (r *Resource) planRefs(ctx context.Context, filters []Filter) {
	for k := range filters {
		if f := &filters[k]; f.Op == record.OpUnder {
			f.closure = r.db.Trusted(ctx, r.targets[f.Field].res.Table, db.ClosureStructure)
		}
	}
}

// refWhere writes a filter on a reference field f (the flt.Field of r) on
// alias a. The subqueries' aliases begin with "rf", which no other query
// of the resource uses.
func (r *Resource) refWhere(s *db.SQL, a string, f *record.Field, flt Filter) {
	t := r.targets[flt.Field]
	if flt.dense {
		r.walkedUnder(s, a, f, t, flt)
		return
	}
	if f.Kind == record.KindRefs {
		if flt.Op == record.OpIsNull {
			if flt.Value.Int == 1 {
				s.Raw("NOT ")
			}
			s.Raw("EXISTS (SELECT 1 FROM ").Ident(t.pairs).Raw(" AS ").Ident("rfp").Raw(" WHERE ").Col("rfp", t.owner).Raw(" = ").Col(a, "id").Raw(")")
			return
		}
		s.Col(a, "id").Raw(" IN (SELECT ").Col("rfp", t.owner).Raw(" FROM ").Ident(t.pairs).Raw(" AS ").Ident("rfp").Raw(" WHERE ")
		r.idCondition(s, t, "rfp", t.column, flt)
		s.Raw(")")
		return
	}
	if flt.Op == record.OpIsNull {
		s.Col(a, f.Column)
		if flt.Value.Int == 1 {
			s.Raw(" IS NULL")
		} else {
			s.Raw(" IS NOT NULL")
		}
		return
	}
	r.idCondition(s, t, a, f.Column, flt)
}

// walkedUnder writes an under filter checked record by record, as a walk
// of the list's order checks it (planCrossTable): a look-up in the
// target's closure by its primary key, as a scalar subquery (MariaDB
// would make an EXISTS a semi-join, read every match and sort them).
func (r *Resource) walkedUnder(s *db.SQL, a string, f *record.Field, t *target, flt Filter) {
	closure := db.ClosureTable(t.res.Table)
	s.Raw("(SELECT 1 FROM ")
	if f.Kind == record.KindRefs {
		s.Ident(t.pairs).Raw(" AS ").Ident("rfp").Raw(" JOIN ").Ident(closure).Raw(" AS ").Ident("rfc").
			Raw(" ON ").Col("rfc", "descendant").Raw(" = ").Col("rfp", t.column).
			Raw(" WHERE ").Col("rfp", t.owner).Raw(" = ").Col(a, "id")
	} else {
		s.Ident(closure).Raw(" AS ").Ident("rfc").Raw(" WHERE ").Col("rfc", "descendant").Raw(" = ").Col(a, f.Column)
	}
	s.Raw(" AND ").Col("rfc", "ancestor").Raw(" = ").Arg(flt.Value.Int).Raw(" LIMIT 1) = 1")
}

// idCondition writes the condition flt puts on the referenced id in
// column col of alias a.
func (r *Resource) idCondition(s *db.SQL, t *target, a, col string, flt Filter) {
	switch flt.Op {
	case record.OpExact:
		s.Col(a, col).Raw(" = ").Arg(flt.Value.Int)
	case record.OpIn:
		s.Col(a, col)
		inList(r.db, s, flt.Value.IDs)
	case record.OpUnder:
		s.Col(a, col).Raw(" IN (")
		parent := t.fields.List[t.fields.Parent].Column
		if flt.closure {
			// The record and every record below it: one range of the
			// closure's index on ancestor.
			s.Raw("SELECT ").Col("rfc", "descendant").Raw(" FROM ").Ident(db.ClosureTable(t.res.Table)).Raw(" AS ").Ident("rfc").
				Raw(" WHERE ").Col("rfc", "ancestor").Raw(" = ").Arg(flt.Value.Int)
		} else {
			s.Raw("WITH RECURSIVE ").Ident("rfw").Raw(" (id, depth) AS (SELECT id, 0 FROM ").Ident(t.res.Table).Raw(" WHERE id = ").Arg(flt.Value.Int).
				Raw(" UNION ALL SELECT ").Col("rfx", "id").Raw(", ").Col("rfw", "depth").Raw(" + 1 FROM ").Ident(t.res.Table).Raw(" AS ").Ident("rfx").
				Raw(" JOIN ").Ident("rfw").Raw(" ON ").Col("rfx", parent).Raw(" = ").Col("rfw", "id").
				Raw(" WHERE ").Col("rfw", "depth").Raw(" < " + strconv.Itoa(MaxDepth) + ") SELECT id FROM ").Ident("rfw")
		}
		s.Raw(")")
	default: // through the target's code or name
		tf := t.code()
		if flt.Op == record.OpNameExact || flt.Op == record.OpNameIContains {
			tf = t.name()
		}
		s.Col(a, col).Raw(" IN (SELECT ").Col("rft", "id").Raw(" FROM ").Ident(t.res.Table).Raw(" AS ").Ident("rft").Raw(" WHERE ")
		switch {
		case !utf8.ValidString(flt.Value.Str):
			s.Raw("1 = 0") // as for the resource's own text filters
		case flt.Op == record.OpCodeExact || flt.Op == record.OpNameExact:
			s.Col("rft", tf.Fold).Raw(" = ").Arg(casefold.Fold(flt.Value.Str)).Raw(" AND ").Col("rft", tf.Column).Raw(" = ").Arg(flt.Value.Str)
		default:
			r.contains(s, "rft", tf, flt.Value.Str)
		}
		s.Raw(")")
	}
}

// Ordering by the referenced record's name.

// targetOrderings are the ordering names <ref>__<target name key> of the
// sortable refs, each with its field.
func (r *Resource) targetOrderings() map[string]int {
	out := map[string]int{}
	for _, i := range r.fields.Refs() {
		if f, t := &r.fields.List[i], r.targets[i]; f.Sortable && t != nil {
			out[f.Key+"__"+t.name().Key] = i
		}
	}
	return out
}

// orderByTarget writes the ordering by the name of the record field o
// refers to, on alias a: its folded name, then its name, each a scalar
// subquery by id (null for no reference).
func (r *Resource) orderByTarget(s *db.SQL, a string, o OrderBy, order string) {
	t, f := r.targets[o.Field], &r.fields.List[o.Field]
	for _, col := range []string{t.name().Fold, t.name().Column} {
		s.Raw("(SELECT ").Col("rfo", col).Raw(" FROM ").Ident(t.res.Table).Raw(" AS ").Ident("rfo").
			Raw(" WHERE ").Col("rfo", "id").Raw(" = ").Col(a, f.Column).Raw(")" + order + ", ")
	}
}

// Errors.

// refError maps the store's answers about references to the API's, or
// returns nil for another error.
func (r *Resource) refError(err error) error {
	var unknown *db.UnknownRefError
	var self *db.SelfRefError
	var referenced *db.ReferencedError
	var blocked *db.CascadeBlockedError
	switch {
	case errors.As(err, &unknown):
		return apierror.Fields(r.unknownRefs(unknown)...)
	case errors.As(err, &self):
		return apierror.Fields(apierror.FieldError{Field: r.fields.List[self.Field].Key,
			Msg: "This " + r.desc.Name + " cannot refer to itself."})
	case errors.As(err, &referenced):
		var parts []string
		for _, b := range referenced.By {
			who := strconv.Itoa(b.Count) + " " + b.Resource + " records refer"
			if b.Count == 1 {
				who = "1 " + b.Resource + " record refers"
			}
			parts = append(parts, who+" to it ("+b.Field+")")
		}
		return apierror.New(apierror.Conflict, fmt.Sprintf("Cannot delete this %s: %s. Change or delete them first.",
			r.desc.Name, strings.Join(parts, "; ")))
	case errors.As(err, &blocked):
		return apierror.New(apierror.Conflict, fmt.Sprintf(
			"Cannot delete this %s: it would delete %s %d (its %s cascades), which other %s records name as their %s. Move or delete them first.",
			r.desc.Name, blocked.Resource, blocked.ID, blocked.Field, blocked.Resource, blocked.Parent))
	}
	return nil
}

// unknownRefs are the messages of ids that no record has: the first of
// each field, as DRF reports the first bad item of a list.
func (r *Resource) unknownRefs(e *db.UnknownRefError) []apierror.FieldError {
	var out []apierror.FieldError
	seen := map[int]bool{}
	for _, m := range e.Missing {
		if seen[m.Field] {
			continue
		}
		seen[m.Field] = true
		out = append(out, apierror.FieldError{Field: r.fields.List[m.Field].Key, Msg: msgNoSuchParent(strconv.FormatInt(m.ID, 10))})
	}
	return out
}

// OpenAPI.

// refSchemas are the schemas of the records references expand to.
func (r *Resource) refSchemas(s map[string]any) {
	for _, i := range r.fields.Refs() {
		t := r.targets[i]
		if t == nil {
			continue
		}
		s[t.summary] = obj{"type": "object", "required": []string{"id", t.code().Key, t.name().Key},
			"description": "A " + t.res.Name + " as ?expand= shows it.",
			"properties": obj{
				"id":         obj{"type": "integer", "minimum": 1},
				t.code().Key: obj{"type": "string"},
				t.name().Key: obj{"type": "string"},
			}}
	}
}

// refSchema is the schema of a reference's value as rendered: its id (or
// ids), or with ?expand= the referenced record. x-personnel-ref names the
// path of the resource referred to (departments), so that a program that
// presents any resource (the admin UI) knows where to pick a record.
func (r *Resource) refSchema(i int, f *record.Field) obj {
	one := obj{"type": "integer", "minimum": 1}
	t := r.targets[i]
	if t != nil {
		one = obj{"oneOf": []any{one, obj{"$ref": "#/components/schemas/" + t.summary}}}
	}
	if f.Kind == record.KindRefs {
		s := obj{"type": "array", "items": one, "description": f.Doc + " With ?expand=" + f.Key + ", the records."}
		if t != nil {
			s["x-personnel-ref"] = t.res.Path
		}
		return s
	}
	s := obj{"description": f.Doc + " With ?expand=" + f.Key + ", the record."}
	if t != nil {
		s["x-personnel-ref"] = t.res.Path
	}
	for k, v := range one {
		s[k] = v
	}
	s["nullable"] = true // null in records stored before it was added, or loaded in bulk, if not optional
	return s
}

// refWriteSchema is the schema of a reference in a request body.
func refWriteSchema(f *record.Field) obj {
	if f.Kind == record.KindRefs {
		s := obj{"type": "array", "items": obj{"type": "integer"},
			"description": "The ids of " + f.To + " records; [] clears the list. Each must exist; a string of digits is accepted too."}
		if f.Required {
			s["minItems"] = 1
		}
		return s
	}
	s := obj{"type": "integer", "description": "The id of a " + f.To + "; it must exist. A string of digits is accepted too."}
	if f.Nullable {
		s["nullable"] = true
		s["description"] = s["description"].(string) + " null clears it."
	}
	return s
}

// expandParam is the ?expand= parameter of the reads, for a resource with
// references.
func (r *Resource) expandParam() []Param {
	var names []string
	for _, i := range r.fields.Refs() {
		if r.targets[i] != nil {
			names = append(names, r.fields.List[i].Key)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []Param{{Name: "expand", In: "query",
		Doc: "Comma-separated references to show as the records they name ({id, code, name}) instead of ids: " +
			strings.Join(names, ", ") + ". Another name is a 400.",
		Schema: obj{"type": "string"}}}
}

// refParamDoc is the OpenAPI entry of a filter of a reference f, in our
// spelling.
func (r *Resource) refParamDoc(p param, f *record.Field) (doc string, schema obj) {
	whose := "Records whose " + f.Key + " is "
	if f.Kind == record.KindRefs {
		whose = "Records whose " + f.Key + " list includes "
	}
	also := " Also spelled " + f.Key + "__" + strings.TrimPrefix(p.name, f.Key+"_") + "."
	switch p.op {
	case record.OpIn:
		return whose + "one of these comma-separated ids." + also, obj{"type": "string", "pattern": "^([0-9]+(,[0-9]+)*)?$"}
	case record.OpUnder:
		return whose + "this " + f.To + " or one below it." + also, obj{"type": "string", "pattern": "^([0-9]+)?$"}
	case record.OpIsNull:
		doc = "true: only records without a " + f.Key + "; false: only records with one."
		if f.Kind == record.KindRefs {
			doc = "true: only records whose " + f.Key + " list is empty; false: only records with one."
		}
		return doc + also, obj{"type": "string", "pattern": "^(|true|false|True|False|1|0)$"}
	}
	return whose + "this id.", obj{"type": "string", "pattern": "^([0-9]+)?$"}
}

// throughParams are the OpenAPI entries of Django's spellings through the
// targets' codes and names (those with __exact are the same filters).
func (r *Resource) throughParams() []Param {
	var out []Param
	for _, p := range r.params {
		if !crossTable(Filter{Op: p.op}) || p.op == record.OpUnder || strings.HasSuffix(p.name, "__exact") {
			continue
		}
		f, t := &r.fields.List[p.field], r.targets[p.field]
		key, how := t.code().Key, "is exactly this (case-sensitive)"
		switch p.op {
		case record.OpNameExact:
			key = t.name().Key
		case record.OpCodeIContains:
			how = "contains this, ignoring letter case"
		case record.OpNameIContains:
			key, how = t.name().Key, "contains this, ignoring letter case"
		}
		doc := "Records whose " + f.Key + "'s " + key + " " + how + "."
		if f.Kind == record.KindRefs {
			doc = "Records whose " + f.Key + " list includes a " + f.To + " whose " + key + " " + how + "."
		}
		out = append(out, Param{Name: p.name, In: "query", Doc: doc, Schema: obj{"type": "string"}})
	}
	return out
}

// treeRows appends the rows of nodes and of every node below them to out.
func treeRows(nodes []*Node, out []record.Row) []record.Row {
	for _, n := range nodes {
		out = treeRows(n.Children, append(out, n.Row))
	}
	return out
}

// Lists filtered through other tables.
//
// A filter through another table (under, and the Django spellings through
// the target's code and name) is answered as an IN: the ids of the
// subtree (or of the records with that code), then the records that
// refer to them, then their order, which costs what the filter matches:
// 50,000 records under a department are read and sorted for a page of
// ten. When the filter matches many, walking the list's own order and
// checking each record against the target's closure finds the page after
// a few rows. Which is cheaper depends on the count, which page 1 needs
// anyway: so a list with such a filter is counted first, and an under
// filter that matches more than the page needs (its expected walk,
// (offset + page size) x table / matches, below the matches an IN reads)
// is walked, a few times the rows it should need and at most as many as
// the IN would read, falling back to the IN if the walk does not fill the
// page (matches bunched at the end).
//
// Such a count reads other tables, which change without a write of this
// one: it is kept (as a search's is, countcache.go) with the change
// numbers of this table and of every table its filters read, and counted
// again only when one of them moved.

// crossCountCache holds the counts of lists filtered through other
// tables, each with the change numbers it was counted at.
type crossCountCache struct {
	mu sync.Mutex
	m  map[string]crossCount
}

type crossCount struct {
	changes []int64
	n       int
}

func (c *crossCountCache) get(key string) (crossCount, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.m[key]
	return k, ok
}

func (c *crossCountCache) put(key string, changes []int64, n int) {
	if len(key) > countKeyMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]crossCount{}
	}
	if _, ok := c.m[key]; !ok && len(c.m) >= countCacheSize {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = crossCount{changes: changes, n: n}
}

// planCrossTable plans t, a list without searches, whose filters read
// other tables (see above); others it returns as they are.
func (r *Resource) planCrossTable(ctx context.Context, t tableSource) (source, error) {
	if t.scope != nil || !slices.ContainsFunc(t.q.Filters, crossTable) {
		return t, nil
	}
	n, total, err := r.crossCount(ctx, t.q.Filters)
	if err != nil {
		return nil, err
	}
	t.known = n
	offset := (t.q.Page - 1) * t.q.PageSize
	if t.q.Last {
		offset = (max(1, (n+t.q.PageSize-1)/t.q.PageSize) - 1) * t.q.PageSize
	}
	walk := float64(offset+t.q.PageSize) * float64(total) / float64(max(n, 1))
	if n == 0 || walk >= float64(n) {
		return t, nil
	}
	dense := false
	for k := range t.q.Filters {
		if f := &t.q.Filters[k]; f.Op == record.OpUnder && f.closure {
			f.dense, dense = true, true
		}
	}
	if dense {
		// A few times the rows it should need (MySQL reads every row of
		// the walk before it checks any), and never more than the IN.
		t.walk = int(min(float64(n), walkSpan*walk+float64(t.q.PageSize)))
	}
	return t, nil
}

// sparse returns filters with no filter walked (dense), for the page
// looked for again by IN after a walk that did not fill it.
func sparse(filters []Filter) []Filter {
	if !slices.ContainsFunc(filters, func(f Filter) bool { return f.dense }) {
		return filters
	}
	out := slices.Clone(filters)
	for k := range out {
		out[k].dense = false
	}
	return out
}

// crossCount counts the records filters select, with the size of the
// table (its kept count, an estimate when not trusted); from the count
// kept for them while no table they read has changed.
func (r *Resource) crossCount(ctx context.Context, filters []Filter) (n, total int, err error) {
	tables := []*db.Table{r.table}
	for _, f := range filters {
		if crossTable(f) {
			t := r.db.Table(r.targets[f.Field].res)
			if !slices.Contains(tables, t) {
				tables = append(tables, t)
			}
		}
	}
	numbered := true
	for _, t := range tables {
		numbered = numbered && r.db.Trusted(ctx, t.Name, db.CountStructure)
	}
	key := filtersKey(filters)
	kept, has := r.crossCounts.get(key)
	guard := numbered && has
	q := r.newSQL().Raw("SELECT ")
	if guard {
		q.Raw("CASE WHEN ")
		for k, t := range tables {
			if k > 0 {
				q.Raw(" AND ")
			}
			t.ChangeNumber(q).Raw(" = ").Arg(kept.changes[k])
		}
		q.Raw(" THEN -1 ELSE ")
	}
	q.Raw("(SELECT COUNT(*) FROM ").Ident(r.desc.Table).Raw(" AS ").Ident("r")
	r.where(q, "r", filters, noIndex)
	q.Raw(")")
	if guard {
		q.Raw(" END")
	}
	q.Raw(", ")
	r.table.KeptCount(q)
	dest := []any{&n, &total}
	changes := make([]int64, len(tables))
	if numbered {
		for k, t := range tables {
			q.Raw(", ")
			t.ChangeNumber(q)
			dest = append(dest, &changes[k])
		}
	}
	if err := db.QueryRow(ctx, r.db.Reader(), q.String(), q.Args, dest...); err != nil {
		return 0, 0, err
	}
	switch {
	case guard && n < 0:
		n = kept.n // not counted: no table had changed
	case numbered:
		r.crossCounts.put(key, changes, n)
	}
	return n, orLarge(total), nil
}
