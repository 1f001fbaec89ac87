package resource

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"personnel/apierror"
)

// Field identifies a sortable field of a resource.
type Field uint8

// The sortable fields.
const (
	FieldID Field = iota
	FieldCode
	FieldName
)

// OrderBy is one ordering term.
type OrderBy struct {
	Field Field
	Desc  bool
}

// Filters select records; nil means "not filtered". Filters combine with AND.
type Filters struct {
	Code, Name                 *string // exact, case-sensitive
	CodeContains, NameContains *string // case-insensitive substring
	Parent                     *int    // records whose parent is this id
	ParentIsNull               *bool   // true: roots only; false: non-roots only
}

// Query is a parsed list request.
type Query struct {
	Page     int  // from 1; ignored when Last
	Last     bool // page=last
	PageSize int
	Filters  Filters
	Order    []OrderBy // empty: by id
}

// errInvalidPage is the 404 of a page that is not a page.
func errInvalidPage() error { return apierror.New(apierror.NotFound, "Invalid page.") }

// ParseQuery parses list parameters. Unknown parameters are ignored, and a
// filter with an empty value is no filter. When a parameter is given more
// than once the last value counts, as in Django. Malformed page_size,
// ordering and filter values are all reported at once, as one 400 naming
// each parameter; a page that is not a positive integer or "last" is a 404.
func (r *Resource[T]) ParseQuery(values url.Values) (Query, error) {
	n := r.names
	q := Query{Page: 1, PageSize: DefaultPageSize}
	var errs []apierror.FieldError
	bad := func(param, msg string) { errs = append(errs, apierror.FieldError{Field: param, Msg: msg}) }

	if v, ok := last(values, "page_size"); ok {
		size, valid := positiveInt(v)
		if !valid {
			bad("page_size", "Enter a positive integer.")
		}
		q.PageSize = min(size, r.opts.PageSizeMax)
	}
	if v, ok := last(values, "ordering"); ok && v != "" {
		order, err := r.parseOrdering(v)
		if err != "" {
			bad("ordering", err)
		}
		q.Order = order
	}
	text := func(param string, dst **string) {
		if v, ok := last(values, param); ok && v != "" {
			*dst = &v
		}
	}
	text(n.code, &q.Filters.Code)
	text(n.name, &q.Filters.Name)
	text(n.codeContains, &q.Filters.CodeContains)
	text(n.nameContains, &q.Filters.NameContains)
	if v, ok := last(values, n.parent); ok && v != "" {
		id, valid := wholeNumber(v)
		if !valid {
			bad(n.parent, "Enter a whole number.")
		}
		q.Filters.Parent = &id
	}
	if v, ok := last(values, n.parentIsNull); ok && v != "" {
		switch strings.ToLower(v) {
		case "true", "1":
			t := true
			q.Filters.ParentIsNull = &t
		case "false", "0":
			f := false
			q.Filters.ParentIsNull = &f
		default:
			bad(n.parentIsNull, `Enter "true" or "false".`)
		}
	}
	if len(errs) > 0 {
		return Query{}, apierror.Fields(errs...)
	}
	if v, ok := last(values, "page"); ok {
		if v == "last" {
			q.Last = true
		} else if p, valid := positiveInt(v); valid && p != math.MaxInt {
			q.Page = p
		} else {
			return Query{}, errInvalidPage()
		}
	}
	return q, nil
}

// parseOrdering parses a comma-separated ordering. Terms after id or the
// code (both unique) cannot change the order and are dropped.
func (r *Resource[T]) parseOrdering(v string) ([]OrderBy, string) {
	var order []OrderBy
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
		switch name {
		case "id":
			o.Field = FieldID
		case r.names.code:
			o.Field = FieldCode
		case r.names.name:
			o.Field = FieldName
		default:
			return nil, fmt.Sprintf("Unknown field %q; use id, %s or %s, each optionally prefixed with '-'.", term, r.names.code, r.names.name)
		}
		order = append(order, o)
	}
	for i, o := range order {
		if o.Field != FieldName {
			return order[:i+1], ""
		}
	}
	return order, ""
}

// Encode returns the parameters that ParseQuery turns back into q.
func (r *Resource[T]) Encode(q Query) url.Values {
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
			name := map[Field]string{FieldID: "id", FieldCode: r.names.code, FieldName: r.names.name}[o.Field]
			if o.Desc {
				name = "-" + name
			}
			terms[i] = name
		}
		v.Set("ordering", strings.Join(terms, ","))
	}
	f := q.Filters
	for _, s := range []struct {
		param string
		val   *string
	}{{r.names.code, f.Code}, {r.names.name, f.Name}, {r.names.codeContains, f.CodeContains}, {r.names.nameContains, f.NameContains}} {
		if s.val != nil {
			v.Set(s.param, *s.val)
		}
	}
	if f.Parent != nil {
		v.Set(r.names.parent, strconv.Itoa(*f.Parent))
	}
	if f.ParentIsNull != nil {
		v.Set(r.names.parentIsNull, strconv.FormatBool(*f.ParentIsNull))
	}
	return v
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
