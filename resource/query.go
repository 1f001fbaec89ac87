package resource

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"personnel/apierror"
	"personnel/casefold"
	"personnel/record"
)

// Filter is one parsed list filter.
type Filter struct {
	Field int          // index in the field table
	Op    record.Op    //
	Value record.Value // the operand; for record.OpIsNull, Int 1 means "is null"
	// closure says the target's closure answers an OpUnder filter
	// (planRefs); otherwise a walk of its table does. dense says the
	// records it selects are many, so that a page is found walking the
	// list's order and checking each record against the closure
	// (planCrossTable).
	closure, dense bool
}

// OrderBy is one ordering term: a field, or the id when record.Field is -1.
type OrderBy struct {
	Field  int
	Desc   bool
	Target bool // a reference, by the name of the record it refers to
}

// Query is a parsed list request.
type Query struct {
	Page     int  // from 1; ignored when Last
	Last     bool // page=last
	PageSize int
	Filters  []Filter  // combined with AND, in field-table order
	Search   []string  // search=: folded terms, each in some searched field
	Order    []OrderBy // empty: by id
}

// param is a filter parameter as the list reads it.
type param struct {
	name  string
	field int
	op    record.Op
}

// newParams lists every filter parameter of a resource: for each field and
// filter, our spelling (dept_name_icontains) and Django's
// (dept_name__icontains); an exact filter is the bare key, or key__exact.
func newParams(fs record.Fields) []param {
	var ps []param
	suffix := map[record.Op]string{record.OpExact: "exact", record.OpIContains: "icontains", record.OpGTE: "gte", record.OpLTE: "lte", record.OpIsNull: "isnull",
		record.OpIn: "in", record.OpUnder: "under"}
	for i, f := range fs.List {
		for _, op := range f.Filters {
			if op == record.OpExact {
				ps = append(ps, param{f.Key, i, op})
			} else {
				ps = append(ps, param{f.Key + "_" + suffix[op], i, op})
			}
			ps = append(ps, param{f.Key + "__" + suffix[op], i, op})
		}
	}
	return ps
}

// errInvalidPage is the 404 of a page that is not a page.
func errInvalidPage() error { return apierror.New(apierror.NotFound, "Invalid page.") }

// ParseQuery parses list parameters. A filter with an empty value is no
// filter. When a parameter is given more than once the last value counts,
// as in Django. Malformed filter values are all reported at once, as one
// 400 naming each parameter. page_size is read as Django REST Framework
// reads it (Python's int(), see pythonInt). Leniently, as DRF does,
// unknown parameters are ignored, unknown, malformed and repeated ordering
// terms are dropped, and a page_size that is not a positive integer means
// the default; when the resource is strict each of these is a 400 naming
// the parameter too. An endpoint that reads parameters of its own besides
// the list's names them in extra, so that strict mode knows them. A page
// that is not a positive integer or "last" is a 404.
func (r *Resource) ParseQuery(values url.Values, extra ...string) (Query, error) {
	q := Query{Page: 1, PageSize: DefaultPageSize}
	var errs []apierror.FieldError
	bad := func(param, msg string) { errs = append(errs, apierror.FieldError{Field: param, Msg: msg}) }

	if v, ok := last(values, "page_size"); ok {
		size, valid := pythonInt(v)
		switch {
		case valid && size > 0:
			q.PageSize = min(size, r.opts.PageSizeMax)
		case r.opts.StrictQuery:
			bad("page_size", "Enter a positive integer.")
		}
	}
	if v, ok := last(values, "ordering"); ok && v != "" {
		order, msg := r.parseOrdering(v)
		if msg != "" {
			bad("ordering", msg)
		}
		q.Order = order
	}
	for _, p := range r.params {
		v, ok := last(values, p.name)
		if !ok || v == "" {
			continue
		}
		if strings.IndexByte(v, 0) >= 0 {
			bad(p.name, msgNulChar)
			continue
		}
		val, msg := parseFilterValue(&r.fields.List[p.field], p.op, v)
		if msg != "" {
			bad(p.name, msg)
			continue
		}
		q.Filters = append(q.Filters, Filter{Field: p.field, Op: p.op, Value: val})
	}
	if v, ok := last(values, "search"); ok && v != "" {
		if strings.IndexByte(v, 0) >= 0 {
			bad("search", msgNulChar)
		} else {
			q.Search = searchTerms(v)
		}
	}
	if r.opts.StrictQuery {
		errs = append(errs, r.unknownParams(values, true, extra)...)
	}
	if len(errs) > 0 {
		return Query{}, apierror.Fields(errs...)
	}
	// Both spellings of one filter given: the comparison runs once.
	sort.SliceStable(q.Filters, func(i, j int) bool { return q.Filters[i].Field < q.Filters[j].Field })
	q.Filters = dedupFilters(q.Filters)
	if v, ok := last(values, "page"); ok {
		if v == "last" {
			q.Last = true
		} else if p, valid := pythonInt(v); valid && p > 0 && p != math.MaxInt {
			// Django's Paginator reads the page with int() too.
			q.Page = p
		} else {
			return Query{}, errInvalidPage()
		}
	}
	return q, nil
}

func dedupFilters(fs []Filter) []Filter {
	out := fs[:0]
	for i, f := range fs {
		dup := false
		for _, g := range fs[:i] {
			if g.Field == f.Field && g.Op == f.Op {
				dup = true
			}
		}
		if !dup {
			out = append(out, f)
		}
	}
	return out
}

// parseFilterValue parses the operand of a filter on f.
func parseFilterValue(f *record.Field, op record.Op, v string) (record.Value, string) {
	if op == record.OpIsNull {
		switch strings.ToLower(v) {
		case "true", "1":
			return record.Value{Int: 1, Valid: true}, ""
		case "false", "0":
			return record.Value{Valid: true}, ""
		}
		return record.Value{}, `Enter "true" or "false".`
	}
	if op == record.OpIContains {
		return record.Value{Str: casefold.Fold(v), Valid: true}, ""
	}
	if val, msg, ok := parseRefFilter(op, v); ok {
		return val, msg
	}
	switch f.Kind {
	case record.KindParent, record.KindRef, record.KindRefs:
		id, valid := wholeNumber(v)
		if !valid {
			return record.Value{}, "Enter a whole number."
		}
		return record.Value{Int: int64(id), Valid: true}, ""
	case record.KindInteger:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return record.Value{}, "Enter a whole number."
		}
		return record.Value{Int: n, Valid: true}, ""
	case record.KindBoolean:
		// django-filter's BooleanWidget lowers the value first.
		switch strings.ToLower(v) {
		case "true", "1":
			return record.Value{Int: 1, Valid: true}, ""
		case "false", "0":
			return record.Value{Valid: true}, ""
		}
		return record.Value{}, `Enter "true" or "false".`
	case record.KindChoice:
		if !slices.Contains(f.Choices, v) {
			return record.Value{}, msgInvalidChoice(v)
		}
		return record.Value{Str: v, Valid: true}, ""
	case record.KindDate:
		d, ok := parseDate(v)
		if !ok {
			return record.Value{}, "Enter a valid date (YYYY-MM-DD)."
		}
		return d, ""
	}
	return record.Value{Str: v, Valid: true}, ""
}

// parseOrdering parses a comma-separated ordering. Blank terms are
// skipped; terms after the id or a unique field cannot change the order
// and are dropped. Leniently, unknown, malformed and repeated terms are
// dropped too; strictly they are an error.
func (r *Resource) parseOrdering(v string) ([]OrderBy, string) {
	var order []OrderBy
	seen := map[int]bool{}
	done := false
	for _, term := range strings.Split(v, ",") {
		term = strings.TrimSpace(term)
		if term == "" {
			continue
		}
		o := OrderBy{}
		name := term
		if strings.HasPrefix(term, "-") {
			o.Desc, name = true, term[1:]
		}
		field, known := r.sortable[name]
		if i, byName := r.sortByTarget[name]; !known && byName {
			field, known, o.Target = i, true, true
		}
		if !known {
			if r.opts.StrictQuery {
				return nil, fmt.Sprintf("Unknown field %q; use %s, each optionally prefixed with '-'.", term, r.sortNames)
			}
			continue
		}
		if seen[field] {
			if r.opts.StrictQuery {
				return nil, fmt.Sprintf("The term %q repeats %s; give each field once.", term, name)
			}
			continue
		}
		if done {
			continue
		}
		seen[field] = true
		o.Field = field
		order = append(order, o)
		done = field < 0 || r.fields.List[field].Unique
	}
	return order, ""
}

// Encode returns the parameters that ParseQuery turns back into q.
func (r *Resource) Encode(q Query) url.Values {
	v := url.Values{}
	if q.Last {
		v.Set("page", "last")
	} else if q.Page != 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if q.PageSize != DefaultPageSize {
		v.Set("page_size", strconv.Itoa(q.PageSize))
	}
	if len(q.Order) > 0 {
		terms := make([]string, len(q.Order))
		for i, o := range q.Order {
			name := "id"
			if o.Field >= 0 {
				name = r.fields.List[o.Field].Key
			}
			if o.Target {
				name += "__" + r.targets[o.Field].name().Key
			}
			if o.Desc {
				name = "-" + name
			}
			terms[i] = name
		}
		v.Set("ordering", strings.Join(terms, ","))
	}
	for _, f := range q.Filters {
		for _, p := range r.params {
			if p.field == f.Field && p.op == f.Op {
				v.Set(p.name, r.encodeValue(f))
				break
			}
		}
	}
	return v
}

func (r *Resource) encodeValue(f Filter) string {
	if v, ok := encodeRefFilter(f); ok {
		return v
	}
	switch {
	case f.Op == record.OpIsNull || r.fields.List[f.Field].Kind == record.KindBoolean:
		return strconv.FormatBool(f.Value.Int == 1)
	case f.Op == record.OpIContains:
		return f.Value.Str
	}
	switch r.fields.List[f.Field].Kind {
	case record.KindInteger, record.KindParent, record.KindRef, record.KindRefs:
		return strconv.FormatInt(f.Value.Int, 10)
	}
	return f.Value.Str
}

// last returns the last value of key, and whether it was given.
func last(values url.Values, key string) (string, bool) {
	vs := values[key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// positiveInt parses a string of ASCII digits above zero. A value too large
// for an int is still a positive integer; it returns math.MaxInt.
func positiveInt(s string) (int, bool) {
	if s == "" || len(s) > 1000 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if n > (math.MaxInt-d)/10 { // n*10+d would overflow
			n = math.MaxInt
			continue
		}
		n = n*10 + d
	}
	return n, n > 0
}

// wholeNumber parses an optionally signed string of ASCII digits. A value
// too large for an int names no record, so it becomes 0 (no record has id 0).
func wholeNumber(s string) (int, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, true
	}
	return n, true
}

// msgInvalidChoice is django-filter's message for a choice filter given a
// value that is not a choice (Django's ChoiceField).
func msgInvalidChoice(v string) string {
	return fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", v)
}

// listParamNames are the list's parameters besides its filters. search is
// read by the search filter; strict mode must know it whoever reads it.
var listParamNames = []string{"page", "page_size", "ordering", "search"}

// isListParam reports whether name is a parameter of the list.
func (r *Resource) isListParam(name string) bool {
	if slices.Contains(listParamNames, name) {
		return true
	}
	for _, p := range r.params {
		if p.name == name {
			return true
		}
	}
	return false
}

// CheckParams is strict mode's check of an endpoint that reads only the
// query parameters named in known (the tree's root and depth, say): when
// the resource is strict, any other parameter is a 400 naming it, all of
// them in one answer; otherwise, or when there is none, it returns nil.
func (r *Resource) CheckParams(values url.Values, known ...string) error {
	if !r.opts.StrictQuery {
		return nil
	}
	if errs := r.unknownParams(values, false, known); len(errs) > 0 {
		return apierror.Fields(errs...)
	}
	return nil
}

// unknownParams returns an error for each parameter of values, by name,
// that is not one of extra nor, for an endpoint that takes the list's
// parameters (list), one of those. Where a name starts with a field's key,
// its message says which filters the field offers instead.
func (r *Resource) unknownParams(values url.Values, list bool, extra []string) []apierror.FieldError {
	var unknown []string
	for name := range values {
		if !slices.Contains(extra, name) && !(list && r.isListParam(name)) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	var names []string
	if list { // its parameters, filters in our spelling
		names = append(names, listParamNames...)
		for _, p := range r.params {
			if !strings.Contains(p.name, "__") {
				names = append(names, p.name)
			}
		}
	}
	names = append(names, extra...)
	takes := "Unknown parameter; this endpoint takes none."
	if len(names) > 0 {
		takes = "Unknown parameter; this endpoint takes " + strings.Join(names, ", ") + "."
	}
	errs := make([]apierror.FieldError, len(unknown))
	for i, name := range unknown {
		msg := takes
		if m := r.unknownLookup(name); list && m != "" {
			msg = m
		}
		errs[i] = apierror.FieldError{Field: name, Msg: msg}
	}
	return errs
}

// unknownLookup explains a parameter that names a field of the resource
// with a lookup the field does not offer (dept_name__iexact, level_isnull),
// or returns "" when name does not start with a field's key. The longest
// key that fits is the field meant.
func (r *Resource) unknownLookup(name string) string {
	field, lookup := -1, ""
	for i, f := range r.fields.List {
		rest, ok := strings.CutPrefix(name, f.Key+"__")
		if !ok {
			rest, ok = strings.CutPrefix(name, f.Key+"_")
		}
		if ok && rest != "" && (field < 0 || len(f.Key) > len(r.fields.List[field].Key)) {
			field, lookup = i, rest
		}
	}
	if field < 0 {
		return ""
	}
	var filters []string
	for _, p := range r.params {
		if p.field == field && !strings.Contains(p.name, "__") {
			filters = append(filters, p.name)
		}
	}
	key := r.fields.List[field].Key
	if len(filters) == 0 {
		return fmt.Sprintf("%s has no %s filter; it has no filters.", key, lookup)
	}
	return fmt.Sprintf("%s has no %s filter; its filters are %s.", key, lookup, strings.Join(filters, ", "))
}

// joinInvalid combines the 400s of an endpoint's parameter checks into
// one that names every parameter at fault. It returns nil when every
// error is nil, and the first error that is not a 400 naming parameters
// as it is.
func joinInvalid(errs ...error) error {
	var fields []apierror.FieldError
	for _, err := range errs {
		if err == nil {
			continue
		}
		var ae *apierror.Error
		if !errors.As(err, &ae) || ae.Kind != apierror.Invalid || len(ae.Fields) == 0 {
			return err
		}
		fields = append(fields, ae.Fields...)
	}
	if len(fields) == 0 {
		return nil
	}
	return apierror.Fields(fields...)
}

// pythonInt parses s as Python's int() parses a string, which is how
// Django REST Framework reads page_size: white space around it (Python's
// str.isspace), an optional sign, then decimal digits of any script
// ("١٢" is 12) with single underscores between digits ("1_0" is 10). A
// value beyond int's range saturates, since it is clamped to the maximum
// page size anyway.
func pythonInt(s string) (int, bool) {
	s = strings.TrimFunc(s, pythonSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || len(s) > 4000 { // CPython refuses strings of over 4300 digits
		return 0, false
	}
	n, prev := 0, '_'
	for _, c := range s {
		if c == '_' {
			if prev == '_' {
				return 0, false // leading or doubled
			}
			prev = c
			continue
		}
		if !unicode.IsDigit(c) {
			return 0, false
		}
		d := digitValue(c)
		if n > (math.MaxInt-d)/10 {
			n = math.MaxInt
		} else {
			n = n*10 + d
		}
		prev = c
	}
	if prev == '_' {
		return 0, false // trailing
	}
	if neg {
		n = -n
	}
	return n, true
}

// pythonSpace reports whether Python's str.isspace holds for c: Unicode's
// white space and the information separators U+001C to U+001F.
func pythonSpace(c rune) bool { return unicode.IsSpace(c) || c >= 0x1c && c <= 0x1f }

// digitValue is the value of a decimal digit (Unicode category Nd). Every
// script's digits are encoded as runs of ten in order from zero, so the
// value is the distance from the start of the run, modulo ten.
func digitValue(c rune) int {
	if c <= '9' {
		return int(c - '0')
	}
	zero := c
	for unicode.IsDigit(zero - 1) {
		zero--
	}
	return int(c-zero) % 10
}

// searchTerms splits a search= value as Django REST Framework's
// SearchFilter does: on white space and commas, a double-quoted phrase
// kept whole; each term folded.
func searchTerms(v string) []string {
	var terms []string
	var cur strings.Builder
	quoted := false
	flush := func() {
		if t := strings.TrimSpace(cur.String()); t != "" {
			terms = append(terms, casefold.Fold(t))
		}
		cur.Reset()
	}
	for _, c := range v {
		switch {
		case c == '"':
			quoted = !quoted
			if !quoted {
				flush()
			}
		case !quoted && (c == ',' || unicode.IsSpace(c)):
			flush()
		default:
			cur.WriteRune(c)
		}
	}
	flush()
	return terms
}
