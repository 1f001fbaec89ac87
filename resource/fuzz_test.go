package resource

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"personnel/apierror"
	"personnel/config"
	"personnel/jsonbody"
	"personnel/record"
)

// fuzzResource is a resource with a field of every kind, and no database:
// what parsing and validation need. strict makes its queries strict.
func fuzzResource(strict bool) *Resource {
	desc := config.Resource{Name: "department", Path: "departments", Table: "personnel_department",
		Fields: config.ResourceFields{Code: "dept_code", Name: "dept_name", Parent: "parent_dept"},
		Limits: config.ResourceLimits{Code: 50, Name: 100},
		Extra: []config.ExtraField{
			{Name: "level", Type: config.TypeInteger, Min: config.Int64(0), Max: config.Int64(100), Filters: []string{"exact", "gte", "lte", "isnull"}, Ordering: true},
			{Name: "note", Type: config.TypeString, MaxLength: 20, Filters: []string{"exact", "icontains"}, Ordering: true},
			{Name: "active", Type: config.TypeBoolean, Default: config.String("true"), Filters: []string{"exact"}},
			{Name: "grade", Type: config.TypeChoice, Choices: []string{"junior", "senior"}, Required: true, Filters: []string{"exact"}},
			{Name: "valid_from", Type: config.TypeDate, Filters: []string{"gte", "lte"}, Ordering: true},
			{Name: "head", Type: config.TypeRef, To: "department", OnDelete: config.OnDeleteSetNull, Filters: []string{"exact", "in", "isnull", "under"}, Ordering: true},
			{Name: "zones", Type: config.TypeRefs, To: "area", OnDelete: config.OnDeleteRemove, Filters: []string{"exact", "in", "isnull", "under"}},
		}}
	area := config.Resource{Name: "area", Path: "areas", Table: "personnel_area",
		Fields: config.ResourceFields{Code: "area_code", Name: "area_name", Parent: "parent_area"}, Limits: config.ResourceLimits{Code: 50, Name: 100}}
	return newResource(desc, nil, Options{PageSizeMax: 1000, StrictQuery: strict, Resources: []config.Resource{desc, area}})
}

// A parsed query has sane bounds and round-trips: encoding it and parsing
// the result gives the same query. A malformed one is a 400 naming only
// parameters that were given, or the 404 of an invalid page. Both query
// modes are held to this.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{
		"", "page=2&page_size=50", "page=last", "page=0", "page_size=abc", "page_size=99999999999999999999",
		"ordering=-dept_name,id", "ordering=dept_code, -dept_name", "ordering=nope", "ordering=,,-id",
		"dept_code=HR&dept_name=Human%20Resources", "dept_name_icontains=%C3%84rzte", "dept_code_icontains=100%25_x",
		"parent_dept=7", "parent_dept=-1", "parent_dept=x", "parent_dept_isnull=True", "parent_dept_isnull=maybe",
		"dept_code=a&dept_code=b", "page=3&page=x", "unknown=1", "%zz", "page_size=1000&page=999999999999",
		"level__gte=3&level_lte=x", "valid_from_gte=2024-02-30", "active=True&grade=lead", "note__icontains=%00",
		"ordering=-level,level,note,-valid_from,id", "dept_name__icontains=a&dept_name_icontains=b",
		"page_size=%2B1", "page_size=%201_0%20", "grade=bogus", "active=TRUE", "colour=x&dept_name__iexact=y", "valid_from_lte=0000-01-01",
		"head=3&head_in=1,%202,2", "head__in=x", "head_isnull=true&zones_under=4", "zones=7&zones__in=3,-1",
		"head__dept_code=HR&head__dept_name__icontains=%C3%84", "zones__area_code__exact=a&zones__area_name=b",
		"ordering=-head__dept_name,head", "ordering=head__area_name", "head_under=99999999999999999999",
	} {
		f.Add(seed)
	}
	lenient, strict := fuzzResource(false), fuzzResource(true)
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return // the server refuses what it cannot parse before this
		}
		checkQuery(t, lenient, raw, values)
		checkQuery(t, strict, raw, values)
	})
}

func checkQuery(t *testing.T, r *Resource, raw string, values url.Values) {
	q, err := r.ParseQuery(values)
	if err != nil {
		var ae *apierror.Error
		if !errors.As(err, &ae) {
			t.Fatalf("ParseQuery(%q) returned a non-API error %v", raw, err)
		}
		switch ae.Kind {
		case apierror.Invalid:
			if len(ae.Fields) == 0 {
				t.Fatalf("ParseQuery(%q): a 400 naming no parameter", raw)
			}
			for _, fe := range ae.Fields {
				if _, given := values[fe.Field]; !given {
					t.Fatalf("ParseQuery(%q): blames %q, which was not given", raw, fe.Field)
				}
				if !r.opts.StrictQuery && (fe.Field == "page_size" || fe.Field == "ordering") {
					t.Fatalf("ParseQuery(%q): lenient, but blames %q", raw, fe.Field)
				}
			}
		case apierror.NotFound:
			if ae.Msg != "Invalid page." {
				t.Fatalf("ParseQuery(%q): 404 %q", raw, ae.Msg)
			}
		default:
			t.Fatalf("ParseQuery(%q): unexpected kind %v", raw, ae.Kind)
		}
		return
	}
	if q.PageSize < 1 || q.PageSize > r.opts.PageSizeMax || (!q.Last && q.Page < 1) {
		t.Fatalf("ParseQuery(%q) = %+v: out of bounds", raw, q)
	}
	seen := map[int]bool{}
	for _, o := range q.Order {
		if seen[o.Field] {
			t.Fatalf("ParseQuery(%q): ordering repeats a field: %+v", raw, q.Order)
		}
		seen[o.Field] = true
	}
	again, err := r.ParseQuery(r.Encode(q))
	if err != nil || !reflect.DeepEqual(again, q) {
		t.Fatalf("ParseQuery(%q) = %+v, but its encoding %q parses to %+v, %v", raw, q, r.Encode(q).Encode(), again, err)
	}
}

// A body either validates into an input that satisfies every rule of its
// fields (and survives being encoded and decoded again), or is a 400 whose
// field errors name only fields the resource has.
func FuzzDecodeInput(f *testing.F) {
	for _, seed := range []string{
		`{"dept_code":"HR","dept_name":"Human Resources"}`, `{"dept_code":"  HR  ","dept_name":"x","parent_dept":"12"}`,
		`{"dept_code":"","dept_name":null}`, `{"parent_dept":3.0}`, `{"parent_dept":"+3"}`, `{"parent_dept":true}`,
		`{"parent_dept":{}}`, `{"parent_dept":-4}`, `{"parent_dept":"99999999999999999999"}`, `{"dept_code":"a\u0000b"}`,
		`{"dept_code":12}`, `{}`, `[]`, `"x"`, `{"dept_code":"Ärzte","dept_name":"ОТДЕЛ 部署"}`, `{"id":5,"other":[1,2]}`,
		`{"dept_code":"` + strings.Repeat("x", 51) + `"}`, `{"dept_name":"` + strings.Repeat("名", 100) + `"}`,
		`{"level":"7","note":" x ","active":"True","grade":"senior","valid_from":"2024-02-29"}`,
		`{"level":101,"note":null,"active":2,"grade":"lead","valid_from":"2023-02-29"}`, `{"level":3.0,"grade":null}`,
		`{"head":"3","zones":[3,1,"3"]}`, `{"head":null,"zones":[]}`, `{"zones":3}`, `{"zones":[null]}`, `{"zones":null}`,
		`{"head":[1],"zones":[true]}`, `{"zones":[0]}`, `{"zones":{"a":1}}`,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	r := fuzzResource(false)
	f.Fuzz(func(t *testing.T, body []byte, full bool) {
		mode := ModePatch
		if full {
			mode = ModeCreate
		}
		m, err := jsonbody.Parse(body)
		if err != nil {
			if ae := apierror.As(err); ae.Kind != apierror.Invalid {
				t.Fatalf("Parse(%q): kind %v, want Invalid", body, ae.Kind)
			}
			return
		}
		in, err := r.DecodeInput(m, mode)
		if err != nil {
			ae := apierror.As(err)
			if ae.Kind != apierror.Invalid || len(ae.Fields) == 0 {
				t.Fatalf("DecodeInput(%q) = %v: want a 400 with field errors", body, err)
			}
			for _, fe := range ae.Fields {
				if (fe.Field != "non_field_errors" && r.fields.ByKey(fe.Field) < 0) || fe.Msg == "" {
					t.Fatalf("DecodeInput(%q): field error %+v", body, fe)
				}
			}
			return
		}
		out := map[string]json.RawMessage{}
		for i := range r.fields.List {
			fd := &r.fields.List[i]
			if !in.Given[i] {
				if mode == ModeCreate && fd.Required {
					t.Fatalf("DecodeInput(%q, create): %s missing but accepted", body, fd.Key)
				}
				continue
			}
			checkValue(t, body, fd, in.Values[i])
			out[fd.Key] = expansion(nil).appendRef(nil, i, fd.Kind, in.Values[i])
		}
		// The accepted input, rendered as the API renders it, decodes to itself.
		data, _ := json.Marshal(out)
		m2, err := jsonbody.Parse(data)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", data, err)
		}
		again, err := r.DecodeInput(m2, mode)
		if err != nil || !reflect.DeepEqual(again, in) {
			t.Fatalf("DecodeInput(%q) = %+v, re-encoded as %s decodes to %+v, %v", body, in, data, again, err)
		}
	})
}

// checkValue fails when v breaks a rule of f.
func checkValue(t *testing.T, body []byte, f *record.Field, v record.Value) {
	t.Helper()
	if !v.Valid {
		if !f.Nullable {
			t.Fatalf("DecodeInput(%q): accepted null %s", body, f.Key)
		}
		return
	}
	bad := false
	switch f.Kind {
	case record.KindText:
		bad = (v.Str == "" && !f.Nullable) || strings.TrimSpace(v.Str) != v.Str || strings.ContainsRune(v.Str, 0) ||
			utf8.RuneCountInString(v.Str) > f.MaxLen || !utf8.ValidString(v.Str)
	case record.KindChoice:
		bad = !slices.Contains(f.Choices, v.Str)
	case record.KindInteger:
		bad = f.Min != nil && v.Int < *f.Min || f.Max != nil && v.Int > *f.Max
	case record.KindBoolean:
		bad = v.Int != 0 && v.Int != 1
	case record.KindDate:
		_, err := time.Parse(time.DateOnly, v.Str)
		bad = err != nil
	case record.KindParent, record.KindRef:
		bad = v.Int < 1 || v.Int > math.MaxInt
	case record.KindRefs:
		bad = !slices.IsSorted(v.IDs) || len(slices.Compact(slices.Clone(v.IDs))) != len(v.IDs) || f.Required && len(v.IDs) == 0 ||
			slices.ContainsFunc(v.IDs, func(id int64) bool { return id < 1 })
	}
	if bad {
		t.Fatalf("DecodeInput(%q): accepted %s %+v", body, f.Key, v)
	}
}

// A path id is accepted exactly when it is ASCII digits naming a positive
// int (leading zeros allowed), and then it is that number.
func FuzzParseID(f *testing.F) {
	for _, seed := range []string{"1", "007", "0", "-1", "+1", "1.0", "1e3", " 1", "abc", "", "9223372036854775807", "99999999999999999999", "١٢"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseID(s)
		n, err := strconv.ParseUint(s, 10, 64)
		digits := s != "" && strings.Trim(s, "0123456789") == ""
		want := digits && err == nil && n >= 1 && n < math.MaxInt
		if ok != want || (ok && uint64(id) != n) {
			t.Fatalf("parseID(%q) = %d, %v; want ok=%v (%d)", s, id, ok, want, n)
		}
	})
}
