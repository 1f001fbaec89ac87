package resource

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"personnel/apierror"
	"personnel/config"
	"personnel/jsonbody"
)

// fuzzResource is a resource with its names and limits, and no database:
// what parsing and validation need.
func fuzzResource() *Resource[struct{}] {
	desc := config.Resource{Name: "department", Path: "departments", Table: "personnel_department",
		Fields: config.ResourceFields{Code: "dept_code", Name: "dept_name", Parent: "parent_dept"},
		Limits: config.ResourceLimits{Code: 50, Name: 100}}
	return &Resource[struct{}]{desc: desc, names: newNames(desc), opts: Options{PageSizeMax: 1000}}
}

// A parsed query has sane bounds and round-trips: encoding it and parsing
// the result gives the same query. A malformed one is a 400 naming the
// parameters, or the 404 of an invalid page.
func FuzzParseQuery(f *testing.F) {
	for _, seed := range []string{
		"", "page=2&page_size=50", "page=last", "page=0", "page_size=abc", "page_size=99999999999999999999",
		"ordering=-dept_name,id", "ordering=dept_code, -dept_name", "ordering=nope", "ordering=,,-id",
		"dept_code=HR&dept_name=Human%20Resources", "dept_name_icontains=%C3%84rzte", "dept_code_icontains=100%25_x",
		"parent_dept=7", "parent_dept=-1", "parent_dept=x", "parent_dept_isnull=True", "parent_dept_isnull=maybe",
		"dept_code=a&dept_code=b", "page=3&page=x", "unknown=1", "%zz", "page_size=1000&page=999999999999",
	} {
		f.Add(seed)
	}
	r := fuzzResource()
	f.Fuzz(func(t *testing.T, raw string) {
		values, err := url.ParseQuery(raw)
		if err != nil {
			return // the server parses leniently; only well-formed queries are compared
		}
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
		again, err := r.ParseQuery(r.Encode(q))
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("ParseQuery(%q) = %+v, but its encoding %q parses to %+v, %v", raw, q, r.Encode(q).Encode(), again, err)
		}
	})
}

// A body either validates into an input that satisfies every rule (and
// survives being encoded and decoded again), or is a 400 whose field
// errors name only fields the resource has.
func FuzzDecodeInput(f *testing.F) {
	for _, seed := range []string{
		`{"dept_code":"HR","dept_name":"Human Resources"}`, `{"dept_code":"  HR  ","dept_name":"x","parent_dept":"12"}`,
		`{"dept_code":"","dept_name":null}`, `{"parent_dept":3.0}`, `{"parent_dept":"+3"}`, `{"parent_dept":true}`,
		`{"parent_dept":{}}`, `{"parent_dept":-4}`, `{"parent_dept":"99999999999999999999"}`, `{"dept_code":"a\u0000b"}`,
		`{"dept_code":12}`, `{}`, `[]`, `"x"`, `{"dept_code":"Ärzte","dept_name":"ОТДЕЛ 部署"}`, `{"id":5,"other":[1,2]}`,
		`{"dept_code":"` + strings.Repeat("x", 51) + `"}`, `{"dept_name":"` + strings.Repeat("名", 100) + `"}`,
	} {
		f.Add([]byte(seed), true)
		f.Add([]byte(seed), false)
	}
	r := fuzzResource()
	known := map[string]bool{"dept_code": true, "dept_name": true, "parent_dept": true, "non_field_errors": true}
	f.Fuzz(func(t *testing.T, body []byte, full bool) {
		m, err := jsonbody.Parse(body)
		if err != nil {
			if ae := apierror.As(err); ae.Kind != apierror.Invalid {
				t.Fatalf("Parse(%q): kind %v, want Invalid", body, ae.Kind)
			}
			return
		}
		in, err := r.DecodeInput(m, full)
		if err != nil {
			ae := apierror.As(err)
			if ae.Kind != apierror.Invalid || len(ae.Fields) == 0 {
				t.Fatalf("DecodeInput(%q) = %v: want a 400 with field errors", body, err)
			}
			for _, fe := range ae.Fields {
				if !known[fe.Field] || fe.Msg == "" {
					t.Fatalf("DecodeInput(%q): field error %+v", body, fe)
				}
			}
			return
		}
		checkText := func(name string, v *string, limit int) {
			if v == nil {
				if full && name != "parent" {
					t.Fatalf("DecodeInput(%q, full): %s missing but accepted", body, name)
				}
				return
			}
			if *v == "" || strings.TrimSpace(*v) != *v || strings.ContainsRune(*v, 0) ||
				utf8.RuneCountInString(*v) > limit || !utf8.ValidString(*v) {
				t.Fatalf("DecodeInput(%q): accepted %s %q", body, name, *v)
			}
		}
		checkText("code", in.Code, r.desc.Limits.Code)
		checkText("name", in.Name, r.desc.Limits.Name)
		if in.Parent != nil && *in.Parent < 1 {
			t.Fatalf("DecodeInput(%q): accepted parent %d", body, *in.Parent)
		}
		// The accepted input, encoded again, decodes to itself.
		out := map[string]any{}
		if in.Code != nil {
			out["dept_code"] = *in.Code
		}
		if in.Name != nil {
			out["dept_name"] = *in.Name
		}
		if in.ParentSet {
			out["parent_dept"] = in.Parent
		}
		data, _ := json.Marshal(out)
		m2, err := jsonbody.Parse(data)
		if err != nil {
			t.Fatalf("re-encoded %s: %v", data, err)
		}
		again, err := r.DecodeInput(m2, full)
		if err != nil || !reflect.DeepEqual(again, in) {
			t.Fatalf("DecodeInput(%q) = %+v, re-encoded as %s decodes to %+v, %v", body, in, data, again, err)
		}
	})
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
