package server_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/server"
)

// The tests of references (ref and refs fields) run over every reference
// of every compiled resource. The shipped resources have none:
// cmd/resourcegen's end-to-end test runs these against the README's
// employee and a hierarchical resource whose references cascade, refer
// to itself and protect a list.

// refCase is one reference under test: the resource that has it, the
// field, and the resource it refers to.
type refCase struct {
	r, to res
	e     config.ExtraField
}

func (c refCase) many() bool { return c.e.Type == config.TypeRefs }

// compiledRefs lists the references of the compiled resources.
func compiledRefs() []refCase {
	var out []refCase
	for _, d := range server.CompiledResources() {
		for _, e := range d.Extra {
			if !e.IsRef() {
				continue
			}
			for _, t := range server.CompiledResources() {
				if t.Name == e.To {
					out = append(out, refCase{r: res{d}, to: res{t}, e: e})
				}
			}
		}
	}
	return out
}

// forEachRef runs fn on every backend for every reference of every
// compiled resource that which selects (nil: all), each in a subtest of
// its own over the backend's one database.
func forEachRef(t *testing.T, which func(refCase) bool, fn func(t *testing.T, a *api, c refCase)) {
	var cases []refCase
	for _, c := range compiledRefs() {
		if which == nil || which(c) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		t.Skip("no compiled resource has such a reference; cmd/resourcegen's end-to-end test runs this with the README's employee")
	}
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, b)
			for _, c := range cases {
				t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
					a := *a
					a.t = t
					c := refCase{r: res{a.withTargets(c.r.Resource)}, to: res{a.withTargets(c.to.Resource)}, e: c.e}
					fn(t, &a, c)
				})
			}
		})
	}
}

// code makes a code unique to the case, within the resource's limit.
func (c refCase) code(r res, what string, i int) string {
	s := fmt.Sprintf("%s-%s-%s-%d", what, c.r.Name, c.e.Name, i)
	if len(s) > r.Limits.Code {
		s = s[len(s)-r.Limits.Code:]
	}
	return s
}

// targets creates n records of the resource referred to.
func (c refCase) targets(a *api, what string, n int) []int {
	a.t.Helper()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = a.create(c.to, c.code(c.to, "T"+what, i), "Target "+strconv.Itoa(i), nil)
	}
	return ids
}

// value is the JSON value that refers to ids (one id, or a list).
func (c refCase) value(ids ...int) any {
	if c.many() {
		return append([]int{}, ids...)
	}
	if len(ids) == 0 {
		return nil
	}
	return ids[0]
}

// rendered is the value as the API renders it.
func (c refCase) rendered(ids ...int) string {
	if c.many() {
		sorted := slices.Clone(ids)
		slices.Sort(sorted)
		return jsonOf(append([]int{}, slices.Compact(sorted)...))
	}
	return jsonOf(c.value(ids...))
}

// create creates a record of c.r whose field refers to ids.
func (c refCase) create(a *api, what string, i int, ids ...int) int {
	a.t.Helper()
	body := c.r.body(c.code(c.r, what, i), "Referring", nil)
	body[c.e.Name] = c.value(ids...)
	resp := a.do(http.MethodPost, c.r.coll(), body)
	if resp.Status != http.StatusCreated {
		a.t.Fatalf("create with %s=%v: %s", c.e.Name, ids, resp)
	}
	return c.r.decodeRecord(a.t, resp.Body).ID
}

// field reads the field of record id as rendered.
func (c refCase) field(a *api, id int) string {
	a.t.Helper()
	return a.get(c.r, id).Extra[c.e.Name]
}

func TestRef_WritesTakeIdsAndReadsShowThem(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "W", 3)
		given := []int{ts[2], ts[0]}
		if c.many() {
			given = []int{ts[2], ts[0], ts[2]} // repeats count once
		}
		body := c.r.body(c.code(c.r, "W", 0), "Writes", nil)
		body[c.e.Name] = c.value(given...)
		resp := a.do(http.MethodPost, c.r.coll(), body)
		if resp.Status != http.StatusCreated {
			t.Fatalf("create: %s", resp)
		}
		id := c.r.decodeRecord(t, resp.Body).ID
		want := c.rendered(given...)
		if got := c.r.decodeRecord(t, resp.Body).Extra[c.e.Name]; got != want {
			t.Fatalf("create answered %s = %s, want %s", c.e.Name, got, want)
		}
		if got := c.field(a, id); got != want {
			t.Fatalf("read %s = %s, want %s (ascending ids)", c.e.Name, got, want)
		}
		// A string of digits is the same id, as for a parent.
		str := any(strconv.Itoa(ts[1]))
		if c.many() {
			str = []any{strconv.Itoa(ts[1])}
		}
		resp = a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: str})
		if got := c.field(a, id); resp.Status != http.StatusOK || got != c.rendered(ts[1]) {
			t.Fatalf("PATCH %s=%v: %s; stored %s", c.e.Name, str, resp, got)
		}
		// In a list too, each record with its own.
		other := c.create(a, "W", 1, ts[0])
		lb := a.list(c.r, "page_size=1000")
		seen := 0
		for _, rec := range lb.Data {
			switch rec.ID {
			case id:
				seen++
				if rec.Extra[c.e.Name] != c.rendered(ts[1]) {
					t.Errorf("listed %d with %s = %s", id, c.e.Name, rec.Extra[c.e.Name])
				}
			case other:
				seen++
				if rec.Extra[c.e.Name] != c.rendered(ts[0]) {
					t.Errorf("listed %d with %s = %s", other, c.e.Name, rec.Extra[c.e.Name])
				}
			}
		}
		if seen != 2 {
			t.Fatalf("the list shows %d of the 2 records", seen)
		}
	})
}

func TestRef_UnknownOrMalformedIdsAre400InDjangoRESTFrameworksWords(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "U", 1)
		id := c.create(a, "U", 0, ts[0])
		before := a.get(c.r, id)
		type bad struct {
			value any
			msg   string
		}
		cases := []bad{
			{c.value(999999), `Invalid pk "999999" - object does not exist.`},
			{c.value(0), `Invalid pk "0" - object does not exist.`},
		}
		if c.many() {
			cases = append(cases,
				bad{3, `Expected a list of items but got type "int".`},
				bad{"abc", `Expected a list of items but got type "str".`},
				bad{map[string]any{}, `Expected a list of items but got type "dict".`},
				bad{[]any{ts[0], "abc"}, "Incorrect type. Expected pk value, received str."},
				bad{[]any{true}, "Incorrect type. Expected pk value, received bool."},
				bad{[]any{ts[0], 999999}, `Invalid pk "999999" - object does not exist.`},
				bad{[]any{nil}, `Invalid pk "None" - object does not exist.`},
				bad{nil, "This field may not be null."},
			)
		} else {
			cases = append(cases,
				bad{"abc", "Incorrect type. Expected pk value, received str."},
				bad{true, "Incorrect type. Expected pk value, received bool."},
				bad{[]int{ts[0]}, "Incorrect type. Expected pk value, received list."},
				bad{3.5, "Incorrect type. Expected pk value, received float."},
			)
			if c.e.Required {
				cases = append(cases, bad{nil, "This field may not be null."})
			}
		}
		if c.e.Required && c.many() {
			cases = append(cases, bad{[]int{}, "This list may not be empty."})
		}
		for i, b := range cases {
			body := c.r.body(c.code(c.r, "UB", i), "Bad", nil)
			body[c.e.Name] = b.value
			wantError(t, a.do(http.MethodPost, c.r.coll(), body), http.StatusBadRequest, c.e.Name, b.msg)
			wantError(t, a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: b.value}), http.StatusBadRequest, c.e.Name, b.msg)
			wantError(t, a.do(http.MethodPut, c.r.item(id), map[string]any{c.r.Fields.Code: before.Code, c.r.Fields.Name: "Renamed", c.e.Name: b.value}),
				http.StatusBadRequest, c.e.Name, b.msg)
		}
		// An unknown id and a taken code are reported together.
		body := c.r.body(before.Code, "Both", nil)
		body[c.e.Name] = c.value(999999)
		wantError(t, a.do(http.MethodPost, c.r.coll(), body), http.StatusBadRequest, c.e.Name, `Invalid pk "999999" - object does not exist.`, c.r.Fields.Code, "")
		if c.e.Required {
			body := c.r.body(c.code(c.r, "UR", 0), "Required", nil)
			delete(body, c.e.Name)
			wantError(t, a.do(http.MethodPost, c.r.coll(), body), http.StatusBadRequest, c.e.Name, "This field is required.")
		}
		if after := a.get(c.r, id); !after.equal(before) {
			t.Fatalf("refused writes changed the record: %+v, was %+v", after, before)
		}
		if c.to.Name == c.r.Name {
			wantError(t, a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value(id)}), http.StatusBadRequest,
				c.e.Name, "This "+c.r.Name+" cannot refer to itself.")
		}
	})
}

func TestRef_PutAndPatchKeepAnOmittedReferenceAndNullOrAnEmptyListClearsIt(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "K", 2)
		id := c.create(a, "K", 0, ts...)
		want := c.rendered(ts...)
		for _, m := range []string{http.MethodPut, http.MethodPatch} {
			resp := a.do(m, c.r.item(id), map[string]any{c.r.Fields.Code: c.code(c.r, "K", 0), c.r.Fields.Name: "Renamed " + m})
			if resp.Status != http.StatusOK || c.field(a, id) != want {
				t.Fatalf("%s without %s: %s; stored %s, want %s", m, c.e.Name, resp, c.field(a, id), want)
			}
		}
		if c.e.Required {
			return
		}
		resp := a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value()})
		if got := c.field(a, id); resp.Status != http.StatusOK || got != c.rendered() {
			t.Fatalf("PATCH %s=%v: %s; stored %s", c.e.Name, c.value(), resp, got)
		}
	})
}

func TestRef_AChangedReferenceIsAChangeOfTheRecord(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "E", 3)
		id := c.create(a, "E", 0, ts[0])
		etag := a.do(http.MethodGet, c.r.item(id), nil).Header.Get("ETag")
		next := []int{ts[1]}
		if c.many() {
			next = []int{ts[0], ts[2]}
		}
		if resp := a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value(next...)}); resp.Status != http.StatusOK {
			t.Fatalf("PATCH: %s", resp)
		}
		now := a.do(http.MethodGet, c.r.item(id), nil).Header.Get("ETag")
		if now == etag {
			t.Fatalf("the ETag %s did not change with %s", now, c.e.Name)
		}
		wantError(t, a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value(ts[0])}, "If-Match", etag), http.StatusPreconditionFailed)
		// The same list again changes nothing, and keeps the tag.
		a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value(next...)})
		if again := a.do(http.MethodGet, c.r.item(id), nil).Header.Get("ETag"); again != now {
			t.Fatalf("a PATCH that changes nothing changed the ETag")
		}
	})
}

// A structure kept beside a table is told of a changed reference as a
// change of that field, by whichever path it changes: a write of the
// record, or a delete of the record it refers to.
func TestRef_KeepersSeeAChangedReferenceAsAChangeOfTheField(t *testing.T) {
	cases := compiledRefs()
	if len(cases) == 0 {
		t.Skip("no compiled resource has a reference; cmd/resourcegen's end-to-end test runs this with the README's employee")
	}
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			cfg := b.Config(t)
			d := dbtest.MustOpen(t, cfg)
			rec := &recorder{}
			d.Keep(func(*db.Table) db.Keeper { return rec })
			a := newAPIOn(t, b, cfg, d)
			for _, c := range cases {
				t.Run(c.r.Name+"."+c.e.Name, func(t *testing.T) {
					a := *a
					a.t = t
					c := refCase{r: res{a.withTargets(c.r.Resource)}, to: res{a.withTargets(c.to.Resource)}, e: c.e}
					field := a.db.Table(c.r.Resource).Fields.ByKey(c.e.Name)
					ts := c.targets(&a, "S", 2)
					id := c.create(&a, "S", 0, ts[0])
					rec.take()
					a.do(http.MethodPatch, c.r.item(id), map[string]any{c.e.Name: c.value(ts[1])})
					want := fmt.Sprintf("%s update %d [%d]", c.r.Table, id, field)
					if got := rec.take(); !slices.Equal(got, []string{want}) {
						t.Fatalf("PATCH %s: the structure saw %q, want %q", c.e.Name, got, want)
					}
					if c.e.OnDelete == config.OnDeleteProtect || c.e.OnDelete == config.OnDeleteCascade {
						return
					}
					if resp := a.do(http.MethodDelete, c.to.item(ts[1]), nil); resp.Status != http.StatusNoContent {
						t.Fatalf("delete the target: %s", resp)
					}
					got := rec.take()
					if !slices.Contains(got, want) || !slices.Contains(got, fmt.Sprintf("%s delete %d", c.to.Table, ts[1])) {
						t.Fatalf("delete of the target: the structure saw %q, want %q and the delete", got, want)
					}
				})
			}
		})
	}
}

func TestRef_ExpandShowsTheReferencedRecordsInEveryRead(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "X", 2)
		var parent any
		if c.r.Hierarchical() {
			parent = a.create(c.r, c.code(c.r, "XP", 0), "Expand parent", nil)
		}
		body := c.r.body(c.code(c.r, "X", 0), "Expanded", parent)
		body[c.e.Name] = c.value(ts...)
		resp := a.do(http.MethodPost, c.r.coll(), body)
		if resp.Status != http.StatusCreated {
			t.Fatalf("create: %s", resp)
		}
		id := c.r.decodeRecord(t, resp.Body).ID
		objects := make([]map[string]any, len(ts))
		for i, tid := range ts {
			tr := a.get(c.to, tid)
			objects[i] = map[string]any{"id": float64(tid), c.to.Fields.Code: tr.Code, c.to.Fields.Name: tr.Name}
		}
		var want any = objects[0]
		if c.many() {
			want = []any{objects[0], objects[1]}
		}
		check := func(what string, rec map[string]any) {
			t.Helper()
			if got := rec[c.e.Name]; jsonOf(got) != jsonOf(want) {
				t.Errorf("%s: %s = %s, want %s", what, c.e.Name, jsonOf(got), jsonOf(want))
			}
		}
		var find func(what string, data []map[string]any)
		find = func(what string, data []map[string]any) {
			t.Helper()
			for _, rec := range data {
				if rec["id"] == float64(id) {
					check(what, rec)
					return
				}
				if kids, ok := rec["children"].([]any); ok {
					var sub []map[string]any
					for _, k := range kids {
						sub = append(sub, k.(map[string]any))
					}
					find(what, sub)
				}
			}
		}
		decode := func(path string) map[string]any {
			t.Helper()
			resp := a.do(http.MethodGet, path, nil)
			var m map[string]any
			if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &m) != nil {
				t.Fatalf("GET %s: %s", path, resp)
			}
			return m
		}
		data := func(m map[string]any) []map[string]any {
			var out []map[string]any
			for _, d := range m["data"].([]any) {
				out = append(out, d.(map[string]any))
			}
			return out
		}
		check("read", decode(c.r.item(id)+"?expand="+c.e.Name))
		find("list", data(decode(c.r.query("page_size=1000&expand="+c.e.Name))))
		// Not expanded unless asked.
		if got := c.field(a, id); got != c.rendered(ts...) {
			t.Errorf("read without expand: %s = %s", c.e.Name, got)
		}
		if c.r.Hierarchical() {
			find("descendants", data(decode(c.r.item(parent)+"descendants/?expand="+c.e.Name)))
			find("tree", data(decode(c.r.coll()+"tree/?expand="+c.e.Name)))
		}
		for _, path := range []string{c.r.item(id) + "?expand=nope", c.r.query("expand=" + c.e.Name + ",nope")} {
			wantError(t, a.do(http.MethodGet, path, nil), http.StatusBadRequest, "expand", "")
		}
	})
}

// Expand keeps the records it rendered while their table is unchanged
// (resource/refs.go): a rename of one, or a write of another record of
// that table, shows at once, and a read with nothing written since is
// byte for byte the first.
func TestRef_ExpandShowsWritesToTheTargetsAtOnce(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "K", 3)
		id := c.create(a, "K", 0, ts[0], ts[1])
		filter := c.r.Fields.Code + "_icontains=" + strings.ToLower(c.code(c.r, "K", 0))
		paths := []string{c.r.item(id) + "?expand=" + c.e.Name, c.r.query(filter + "&expand=" + c.e.Name)}
		body := func(path string) string {
			t.Helper()
			resp := a.do(http.MethodGet, path, nil)
			if resp.Status != http.StatusOK {
				t.Fatalf("GET %s: %s", path, resp)
			}
			return string(resp.Body)
		}
		named := func(path, name string, want bool) {
			t.Helper()
			if got := body(path); strings.Contains(got, jsonOf(name)) != want {
				t.Errorf("GET %s: %s, want %q in it: %v", path, got, name, want)
			}
		}
		for _, path := range paths {
			first := body(path)
			if again := body(path); again != first {
				t.Errorf("GET %s again, nothing written: %s, first %s", path, again, first)
			}
		}
		rename := func(target int, name string) {
			t.Helper()
			if resp := a.do(http.MethodPatch, c.to.item(target), map[string]any{c.to.Fields.Name: name}); resp.Status != http.StatusOK {
				t.Fatalf("rename: %s", resp)
			}
		}
		rename(ts[0], "Renamed once")
		for _, path := range paths {
			named(path, "Renamed once", true)
		}
		// A write of a record not on the page, then of one on it.
		rename(ts[2], "Not on the page")
		for _, path := range paths {
			named(path, "Not on the page", false)
			named(path, "Renamed once", true)
		}
		rename(ts[0], "Renamed twice")
		for _, path := range paths {
			named(path, "Renamed twice", true)
			named(path, "Renamed once", false)
		}
	})
}

// An expanded page costs one statement more, for one field expanded or
// all of them, however many records it holds: counted, not timed.
func TestRef_ExpandCostsOneStatementPerPage(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "N", 4)
		for i := range 12 {
			c.create(a, "Q", i, ts[i%4], ts[(i+1)%4])
		}
		statements := func(query string) int64 {
			t.Helper()
			ctx, n := db.CountStatements(context.Background())
			req := httptest.NewRequest(http.MethodGet, c.r.query(query), nil).WithContext(ctx)
			if resp := a.serve(req); resp.Status != http.StatusOK {
				t.Fatalf("%s: %s", query, resp)
			}
			return n.Load()
		}
		// Filtered to this case's records, so that the page is as large
		// as asked; read twice, the first warming what is cached.
		filter := c.e.Name + "_in=" + strconv.Itoa(ts[0]) + "," + strconv.Itoa(ts[1]) + "," + strconv.Itoa(ts[2]) + "," + strconv.Itoa(ts[3])
		if !slices.Contains(c.e.Filters, config.FilterIn) {
			filter = c.r.Fields.Code + "_icontains=" + strings.ToLower("Q-"+c.r.Name+"-"+c.e.Name)
		}
		var all []string
		for _, e := range c.r.Extra {
			if e.IsRef() {
				all = append(all, e.Name)
			}
		}
		for _, size := range []int{3, 12} {
			q := fmt.Sprintf("%s&page_size=%d", filter, size)
			statements(q)
			plain, expanded := statements(q), statements(q+"&expand="+c.e.Name)
			if expanded-plain != 1 {
				t.Errorf("a page of %d: %d statements, %d expanded; want one more", size, plain, expanded)
			}
			// Every reference at once costs one statement more too.
			if everything := statements(q + "&expand=" + strings.Join(all, ",")); everything-plain != 1 {
				t.Errorf("a page of %d: %d statements, %d with %v expanded; want one more", size, plain, everything, all)
			}
		}
	})
}

func TestRef_FiltersSelectByIdListNullAndTheTargetsCodeAndName(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "F", 3)
		var ids []int
		for i, tid := range ts {
			if c.many() {
				ids = append(ids, c.create(a, "F", i, tid, ts[(i+1)%3]))
			} else {
				ids = append(ids, c.create(a, "F", i, tid))
			}
		}
		none := 0
		if !c.e.Required {
			none = c.create(a, "F", 9)
		}
		ours := map[int]bool{none: none != 0}
		for _, id := range ids {
			ours[id] = true
		}
		check := func(query string, want ...int) {
			t.Helper()
			lb := a.list(c.r, query+"&page_size=1000")
			got := []int{}
			for _, rec := range lb.Data {
				if ours[rec.ID] {
					got = append(got, rec.ID)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, append([]int{}, want...)) {
				t.Errorf("%s: ids %v, want %v", query, got, want)
			}
		}
		// Record i refers to ts[i] (and, for a list, to ts[i+1] too).
		with := func(k int) []int {
			if c.many() {
				return []int{ids[k], ids[(k+2)%3]}
			}
			return []int{ids[k]}
		}
		tr := a.get(c.to, ts[1])
		for _, f := range c.e.Filters {
			switch f {
			case config.FilterExact:
				check(c.e.Name+"="+strconv.Itoa(ts[1]), with(1)...)
				check(c.e.Name+"__exact="+strconv.Itoa(ts[1]), with(1)...)
				check(c.e.Name + "=999999")
				check(c.e.Name+"__"+c.to.Fields.Code+"="+tr.Code, with(1)...)
				check(c.e.Name + "__" + c.to.Fields.Code + "__exact=" + strings.ToLower(tr.Code)) // case-sensitive
				check(c.e.Name+"__"+c.to.Fields.Code+"__icontains="+strings.ToLower(tr.Code), with(1)...)
				check(c.e.Name+"__"+c.to.Fields.Name+"="+escape(tr.Name), with(1)...)
				check(c.e.Name+"__"+c.to.Fields.Name+"__icontains="+escape(strings.ToUpper("target")), ids...)
				wantError(t, a.do(http.MethodGet, c.r.query(c.e.Name+"=x"), nil), http.StatusBadRequest, c.e.Name, "")
			case config.FilterIn:
				want := append(with(0), with(2)...)
				slices.Sort(want)
				want = slices.Compact(want)
				check(c.e.Name+"_in="+strconv.Itoa(ts[0])+","+strconv.Itoa(ts[2]), want...)
				check(c.e.Name+"__in="+strconv.Itoa(ts[2])+",999999,"+strconv.Itoa(ts[0]), want...)
				wantError(t, a.do(http.MethodGet, c.r.query(c.e.Name+"_in=1,x"), nil), http.StatusBadRequest, c.e.Name+"_in", "")
			case config.FilterIsNull:
				if none != 0 {
					check(c.e.Name+"_isnull=true", none)
				}
				check(c.e.Name+"__isnull=false", ids...)
			case config.FilterUnder:
				check(c.e.Name+"_under="+strconv.Itoa(ts[1]), with(1)...)
			}
		}
	})
}

// department_under=X selects the records whose department is X or lies
// below it: checked against the same selection worked out in Go, over
// random trees, answered from the closure and (untrusted) by a walk.
func TestRef_UnderSelectsTheRecordsOfASubtreeAsAWalkInGoDoes(t *testing.T) {
	under := func(c refCase) bool { return slices.Contains(c.e.Filters, config.FilterUnder) }
	forEachRef(t, under, func(t *testing.T, a *api, c refCase) {
		rng := rand.New(rand.NewPCG(uint64(len(c.r.Name)), uint64(len(c.e.Name))))
		// A random forest of 40 records of the target.
		parent := map[int]int{}
		var nodes []int
		for i := range 40 {
			var p any
			if len(nodes) > 0 && rng.IntN(5) > 0 {
				p = nodes[rng.IntN(len(nodes))]
			}
			id := a.create(c.to, c.code(c.to, "TT", i), "Tree", p)
			if p != nil {
				parent[id] = p.(int)
			}
			nodes = append(nodes, id)
		}
		// 60 records referring to random ones.
		refers := map[int][]int{}
		for i := range 60 {
			var refs []int
			for range 1 + rng.IntN(2) {
				refs = append(refs, nodes[rng.IntN(len(nodes))])
			}
			if !c.many() {
				refs = refs[:1]
			}
			refers[c.create(a, "U", i, refs...)] = refs
		}
		below := func(n, x int) bool {
			for cur, ok := n, true; ok; cur, ok = parent[cur] {
				if cur == x {
					return true
				}
			}
			return false
		}
		check := func(how string, a *api) {
			for _, x := range nodes {
				var want []int
				for id, refs := range refers {
					if slices.ContainsFunc(refs, func(n int) bool { return below(n, x) }) {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				// Page by page: where a page holds few of many matches, it
				// is found walking the list (planCrossTable).
				size := 1000
				if len(want) >= 10 {
					size = 3
				}
				got := []int{}
				for page := 1; ; page++ {
					lb := a.list(c.r, fmt.Sprintf("%s_under=%d&page_size=%d&page=%d", c.e.Name, x, size, page))
					for _, rec := range lb.Data {
						if refers[rec.ID] != nil {
							got = append(got, rec.ID)
						}
					}
					if lb.Next == nil {
						break
					}
				}
				if !slices.Equal(got, append([]int{}, want...)) {
					t.Fatalf("%s: %s_under=%d: %v, want %v", how, c.e.Name, x, got, want)
				}
			}
		}
		check("from the closure", a)
		// A replica that finds the closure untrusted walks the table.
		untrust(a, c.to)
		check("by a walk", a.replica(t))
	})
}

func TestRef_OrderingByTheIdAndByTheTargetsName(t *testing.T) {
	sortable := func(c refCase) bool { return c.e.Ordering }
	forEachRef(t, sortable, func(t *testing.T, a *api, c refCase) {
		// Targets whose names sort the other way round from their ids.
		var ts []int
		for i, name := range []string{"zulu", "Mike", "alpha"} {
			ts = append(ts, a.create(c.to, c.code(c.to, "TO", i), name, nil))
		}
		var ids []int
		for i := range 6 {
			ids = append(ids, c.create(a, "O", i, ts[i%3]))
		}
		order := func(q string) []int {
			var out []int
			for _, rec := range a.list(c.r, "page_size=1000&ordering="+q).Data {
				if slices.Contains(ids, rec.ID) {
					out = append(out, rec.ID)
				}
			}
			return out
		}
		byID := []int{ids[0], ids[3], ids[1], ids[4], ids[2], ids[5]}
		if got := order(c.e.Name); !slices.Equal(got, byID) {
			t.Errorf("ordering=%s: %v, want %v", c.e.Name, got, byID)
		}
		byName := []int{ids[2], ids[5], ids[1], ids[4], ids[0], ids[3]}
		if got := order(c.e.Name + "__" + c.to.Fields.Name); !slices.Equal(got, byName) {
			t.Errorf("ordering=%s__%s: %v, want %v", c.e.Name, c.to.Fields.Name, got, byName)
		}
		desc := slices.Clone(byName)
		slices.Reverse(desc)
		if got := order("-" + c.e.Name + "__" + c.to.Fields.Name); !slices.Equal(got, desc) {
			t.Errorf("ordering=-%s__%s: %v, want %v", c.e.Name, c.to.Fields.Name, got, desc)
		}
	})
}

// dangling counts the references to records that do not exist, behind
// the service's back.
func dangling(a *api, c refCase) int {
	a.t.Helper()
	q := a.db.SQL()
	if c.many() {
		owner, target := c.r.RefsColumns(c.e)
		q.Raw("SELECT COUNT(*) FROM ").Ident(c.r.RefsTable(c.e)).Raw(" AS ").Ident("p").Raw(" WHERE NOT EXISTS (SELECT 1 FROM ").
			Ident(c.to.Table).Raw(" AS ").Ident("t").Raw(" WHERE ").Col("t", "id").Raw(" = ").Col("p", target).Raw(") OR NOT EXISTS (SELECT 1 FROM ").
			Ident(c.r.Table).Raw(" AS ").Ident("o").Raw(" WHERE ").Col("o", "id").Raw(" = ").Col("p", owner).Raw(")")
	} else {
		col := config.RefColumn(c.e)
		q.Raw("SELECT COUNT(*) FROM ").Ident(c.r.Table).Raw(" AS ").Ident("o").Raw(" WHERE ").Col("o", col).Raw(" IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ").
			Ident(c.to.Table).Raw(" AS ").Ident("t").Raw(" WHERE ").Col("t", "id").Raw(" = ").Col("o", col).Raw(")")
	}
	var n int
	if err := db.QueryRow(context.Background(), a.db.Reader(), q.String(), q.Args, &n); err != nil {
		a.t.Fatal(err)
	}
	return n
}

func TestRef_DeletingAReferencedRecordFollowsTheFieldsRule(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "D", 2)
		var held []int
		for i := range 3 {
			held = append(held, c.create(a, "D", i, ts...))
		}
		resp := a.do(http.MethodDelete, c.to.item(ts[0]), nil)
		switch c.e.OnDelete {
		case config.OnDeleteProtect:
			wantError(t, resp, http.StatusConflict)
			msg := fmt.Sprintf("3 %s records refer to it (%s)", c.r.Name, c.e.Name)
			if !strings.Contains(string(resp.Body), msg) {
				t.Fatalf("the 409 does not say %q: %s", msg, resp)
			}
			a.get(c.to, ts[0])
			for _, id := range held {
				if got := c.field(a, id); got != c.rendered(ts...) {
					t.Fatalf("a refused delete changed %d: %s", id, got)
				}
			}
		case config.OnDeleteCascade:
			if resp.Status != http.StatusNoContent {
				t.Fatalf("delete: %s", resp)
			}
			for _, id := range held {
				wantError(t, a.do(http.MethodGet, c.r.item(id), nil), http.StatusNotFound)
			}
		case config.OnDeleteSetNull, config.OnDeleteRemove:
			if resp.Status != http.StatusNoContent {
				t.Fatalf("delete: %s", resp)
			}
			want := c.rendered(ts[1:]...)
			if !c.many() {
				want = "null"
			}
			for _, id := range held {
				if got := c.field(a, id); got != want {
					t.Fatalf("after the delete %d has %s = %s, want %s", id, c.e.Name, got, want)
				}
			}
		default:
			t.Fatalf("unknown rule %q", c.e.OnDelete)
		}
		if n := dangling(a, c); n != 0 {
			t.Fatalf("%d references to records that do not exist", n)
		}
		if err := a.db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// A delete that cascades to records of a hierarchy deletes those below
// first; one that would cascade to a record others (not reached) name as
// their parent is refused and changes nothing.
func TestRef_ACascadeThroughAHierarchyGoesFromTheLeavesOrNotAtAll(t *testing.T) {
	cascade := func(c refCase) bool { return c.e.OnDelete == config.OnDeleteCascade && c.r.Hierarchical() }
	forEachRef(t, cascade, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "H", 2)
		mk := func(i, target int, parent any) int {
			body := c.r.body(c.code(c.r, "H", i), "Cascaded", parent)
			body[c.e.Name] = c.value(target)
			resp := a.do(http.MethodPost, c.r.coll(), body)
			if resp.Status != http.StatusCreated {
				t.Fatalf("create: %s", resp)
			}
			return c.r.decodeRecord(t, resp.Body).ID
		}
		top := mk(0, ts[0], nil)
		mid := mk(1, ts[0], top)
		leaf := mk(2, ts[0], mid)
		other := mk(3, ts[1], top) // refers to the other target, below top
		resp := a.do(http.MethodDelete, c.to.item(ts[0]), nil)
		wantError(t, resp, http.StatusConflict)
		for _, id := range []int{top, mid, leaf, other} {
			a.get(c.r, id)
		}
		a.get(c.to, ts[0])
		if resp := a.do(http.MethodPatch, c.r.item(other), map[string]any{c.r.Fields.Parent: nil}); resp.Status != http.StatusOK {
			t.Fatalf("move: %s", resp)
		}
		if resp := a.do(http.MethodDelete, c.to.item(ts[0]), nil); resp.Status != http.StatusNoContent {
			t.Fatalf("delete: %s", resp)
		}
		for _, id := range []int{top, mid, leaf} {
			wantError(t, a.do(http.MethodGet, c.r.item(id), nil), http.StatusNotFound)
		}
		a.get(c.r, other)
		if err := a.db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// A delete of a record and a create of one that refers to it, at the same
// time, never both succeed under protect (the create share-locks what it
// refers to, the delete locks it for update), and never leave a
// reference to a record that is gone under any rule.
func TestRef_ADeleteRacingACreateThatRefersToItNeverLeavesADanglingReference(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		both := 0
		for i := range 12 {
			tid := a.create(c.to, c.code(c.to, "TR", i), "Raced", nil)
			body := c.r.body(c.code(c.r, "R", i), "Racing", nil)
			body[c.e.Name] = c.value(tid)
			var created, deleted int
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				created = a.do(http.MethodPost, c.r.coll(), body).Status
			}()
			go func() {
				defer wg.Done()
				deleted = a.do(http.MethodDelete, c.to.item(tid), nil).Status
			}()
			wg.Wait()
			if created != http.StatusCreated && created != http.StatusBadRequest || deleted != http.StatusNoContent && deleted != http.StatusConflict {
				t.Fatalf("round %d: create %d, delete %d", i, created, deleted)
			}
			if created == http.StatusCreated && deleted == http.StatusNoContent {
				both++
				if c.e.OnDelete == config.OnDeleteProtect {
					t.Fatalf("round %d: the create and the delete both succeeded under protect", i)
				}
			}
		}
		if n := dangling(a, c); n != 0 {
			t.Fatalf("%d references to records that do not exist", n)
		}
		t.Logf("%d of 12 rounds had both succeed (%s)", both, c.e.OnDelete)
	})
}

func TestRef_TheOpenAPIDocumentTypesReferences(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(a.do(http.MethodGet, server.APIRoot+"/openapi.json", nil).Body, &doc); err != nil {
			t.Fatal(err)
		}
		one, summary := camel(c.r.Name), camel(c.to.Name)+"Summary"
		read := string(doc.Components.Schemas[one].Properties[c.e.Name])
		write := string(doc.Components.Schemas[one+"Create"].Properties[c.e.Name])
		if !strings.Contains(read, `"#/components/schemas/`+summary+`"`) || !strings.Contains(read, `"integer"`) {
			t.Errorf("%s of %s is not an id or an expanded %s: %s", c.e.Name, one, summary, read)
		}
		var named struct {
			Path string `json:"x-personnel-ref"`
		}
		if err := json.Unmarshal([]byte(read), &named); err != nil || named.Path != c.to.Path {
			t.Errorf("%s of %s does not name the path it refers to (x-personnel-ref %q): %s", c.e.Name, one, c.to.Path, read)
		}
		if c.many() != strings.Contains(read, `"array"`) || c.many() != strings.Contains(write, `"array"`) || !strings.Contains(write, `"integer"`) {
			t.Errorf("%s: read %s, write %s", c.e.Name, read, write)
		}
		for _, key := range []string{"id", c.to.Fields.Code, c.to.Fields.Name} {
			if _, ok := doc.Components.Schemas[summary].Properties[key]; !ok {
				t.Errorf("%s has no %s", summary, key)
			}
		}
	})
}

// escape escapes a query value.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", "%20"), "&", "%26")
}

// A file carries a reference by its record's code, under <name>_code
// (<name>_codes, separated by ";", for a list): an export writes the
// codes, an import of it changes nothing in any format, and an import
// finds a code's record ignoring letter case, or reports the row.
func TestRef_FilesCarryReferencesByTheirCodes(t *testing.T) {
	forEachRef(t, nil, func(t *testing.T, a *api, c refCase) {
		ts := c.targets(a, "F", 2)
		id := c.create(a, "F", 0, ts...)
		col, want := c.e.Name+"_code", c.code(c.to, "TF", 0)
		if c.many() {
			col, want = col+"s", want+";"+c.code(c.to, "TF", 1)
		}
		q := c.r.Fields.Code + "=" + url.QueryEscape(c.code(c.r, "F", 0))
		resp := a.do(http.MethodGet, c.r.export(q+"&format=csv"), nil)
		recs, err := csv.NewReader(bytes.NewReader(resp.Body)).ReadAll()
		if resp.Status != http.StatusOK || err != nil || len(recs) != 2 {
			t.Fatalf("export: %v: %s", err, resp)
		}
		at := slices.Index(recs[0], col)
		if at < 0 || slices.Contains(recs[0], c.e.Name) {
			t.Fatalf("the export's header %q has no %s column, or has %s", recs[0], col, c.e.Name)
		}
		if recs[1][at] != want {
			t.Fatalf("exported %s = %q, want %q", col, recs[1][at], want)
		}
		c.roundTrips(t, a, q, id, ts...)

		// Written by hand: codes in another letter case, one code no
		// record has.
		header := slices.DeleteFunc(c.r.fileHeader(), func(h string) bool { return h == c.e.Name })
		row := func(code, refs string) []string {
			full := c.r.fileRow(code, "By code", "")
			if k := slices.Index(c.r.fileHeader(), c.e.Name); k >= 0 {
				full = slices.Delete(full, k, k+1)
			}
			return append(full, refs)
		}
		newCode, badCode := c.code(c.r, "F", 1), c.code(c.r, "F", 2)
		file := csvOf(append(header, col), row(newCode, strings.ToLower(want)), row(badCode, "NOPE-"+c.e.Name))
		resp = a.importFile(c.r, "", "text/csv", file)
		var res importResult
		if resp.Status != http.StatusBadRequest || json.Unmarshal(resp.Body, &res) != nil {
			t.Fatalf("import of a file with an unknown code: %s", resp)
		}
		msg := fmt.Sprintf("Object with %s=NOPE-%s does not exist.", c.to.Fields.Code, c.e.Name)
		if len(res.Rows) != 1 || res.Rows[0].Row != 3 || !slices.Equal(res.Rows[0].Errors[col], []string{msg}) {
			t.Fatalf("an unknown code: %+v, want row 3 with %s: [%s]", res.Rows, col, msg)
		}
		if got := a.codes(c.r, c.r.Fields.Code+"="+url.QueryEscape(newCode)); len(got) != 0 {
			t.Fatalf("a refused file wrote %q", got)
		}
		res = a.imported(c.r, "", "text/csv", csvOf(append(header, col), row(newCode, strings.ToLower(want))))
		if res.Created != 1 {
			t.Fatalf("import by code: %+v", res)
		}
		created := a.list(c.r, c.r.Fields.Code+"="+url.QueryEscape(newCode)).Data
		if len(created) != 1 || created[0].Extra[c.e.Name] != c.rendered(ts...) {
			t.Fatalf("imported %+v, want %s = %s", created, c.e.Name, c.rendered(ts...))
		}

		// A JSON file may give a list as an array of codes.
		if c.many() {
			h, vals := append(slices.Clone(header), col), row(c.code(c.r, "F", 3), "")
			obj := map[string]any{col: []string{c.code(c.to, "TF", 1), c.code(c.to, "TF", 0)}}
			for k, name := range h[:len(h)-1] {
				obj[name] = vals[k]
			}
			body, _ := json.Marshal([]any{obj})
			if res := a.imported(c.r, "", "application/json", body); res.Created != 1 {
				t.Fatalf("a JSON array of codes: %+v", res)
			}
			got := a.list(c.r, c.r.Fields.Code+"="+url.QueryEscape(c.code(c.r, "F", 3))).Data
			if len(got) != 1 || got[0].Extra[c.e.Name] != c.rendered(ts...) {
				t.Fatalf("imported from JSON %+v, want %s = %s", got, c.e.Name, c.rendered(ts...))
			}
		}

		// Ids and codes for one field is one too many.
		resp = a.importFile(c.r, "", "text/csv", csvOf(append(header, c.e.Name, col)))
		if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "keep one") {
			t.Fatalf("a file with %s and %s: %s", c.e.Name, col, resp)
		}
	})
}

// roundTrips exports the record of c.r that query q selects, id, in
// every format and imports each file back: nothing changes, and its
// field c.e still refers to ts.
func (c refCase) roundTrips(t *testing.T, a *api, q string, id int, ts ...int) {
	t.Helper()
	for _, format := range []string{"csv", "xlsx", "json"} {
		resp := a.do(http.MethodGet, c.r.export(q+"&format="+format), nil)
		ct := map[string]string{"csv": "text/csv", "xlsx": xlsxType, "json": "application/json"}[format]
		if res := a.imported(c.r, "", ct, resp.Body); res.Unchanged != 1 || res.Created+res.Updated != 0 {
			t.Fatalf("%s round trip: %+v", format, res)
		}
	}
	if got := c.field(a, id); got != c.rendered(ts...) {
		t.Fatalf("after the round trips %s = %s, want %s", c.e.Name, got, c.rendered(ts...))
	}
}

// fileOf is a CSV file of c.r's rows by code and name, with field c.e
// by codes in its code column: each row is code, name, codes.
func (c refCase) fileOf(rows ...[3]string) []byte {
	col := c.e.Name + "_code"
	if c.many() {
		col += "s"
	}
	header := slices.DeleteFunc(c.r.fileHeader(), func(h string) bool { return h == c.e.Name })
	out := [][]string{append(header, col)}
	for _, r := range rows {
		full := c.r.fileRow(r[0], r[1], "")
		if k := slices.Index(c.r.fileHeader(), c.e.Name); k >= 0 {
			full = slices.Delete(full, k, k+1)
		}
		out = append(out, append(full, r[2]))
	}
	return csvOf(out...)
}

// A code may hold the ";" that separates a list's codes in a cell, or
// the "\" that escapes it: an export writes it behind a "\" in CSV and
// XLSX, and as an element of an array in JSON, and an import of each
// finds the same records, while codes without either keep their plain
// "A;B" (TestRef_FilesCarryReferencesByTheirCodes).
func TestRef_CodesHoldingTheSeparatorOrABackslashRoundTripInEveryFormat(t *testing.T) {
	forEachRef(t, refCase.many, func(t *testing.T, a *api, c refCase) {
		codes := []string{c.code(c.to, "Q;1", 0), c.code(c.to, `Q\2`, 1), c.code(c.to, `Q\;3\`, 2)}
		ts := make([]int, len(codes))
		for i, code := range codes {
			ts[i] = a.create(c.to, code, "Odd "+strconv.Itoa(i), nil)
		}
		id := c.create(a, "Q", 0, ts...)
		col := c.e.Name + "_codes"
		q := c.r.Fields.Code + "=" + url.QueryEscape(c.code(c.r, "Q", 0))
		escaped := strings.NewReplacer(`\`, `\\`, ";", `\;`)
		var cells []string
		for _, code := range codes { // created in id order, as exported
			cells = append(cells, escaped.Replace(code))
		}
		wantCell := strings.Join(cells, ";")
		resp := a.do(http.MethodGet, c.r.export(q+"&format=csv"), nil)
		recs, err := csv.NewReader(bytes.NewReader(resp.Body)).ReadAll()
		if resp.Status != http.StatusOK || err != nil || len(recs) != 2 || slices.Index(recs[0], col) < 0 {
			t.Fatalf("export: %v: %s", err, resp)
		}
		if got := recs[1][slices.Index(recs[0], col)]; got != wantCell {
			t.Fatalf("CSV: %s = %q, want %q", col, got, wantCell)
		}
		resp = a.do(http.MethodGet, c.r.export(q+"&format=json"), nil)
		var objs []map[string]json.RawMessage
		if err := json.Unmarshal(resp.Body, &objs); err != nil || len(objs) != 1 || string(objs[0][col]) != jsonOf(codes) {
			t.Fatalf("JSON: %s = %s, want %s (%v)", col, objs, jsonOf(codes), err)
		}
		c.roundTrips(t, a, q, id, ts...)
		// A new record from the escaped cell, as a person would copy it.
		fresh := c.code(c.r, "Q", 1)
		file := c.fileOf([3]string{fresh, "Copied", wantCell})
		if res := a.imported(c.r, "", "text/csv", file); res.Created != 1 {
			t.Fatalf("import of %q: %+v", wantCell, res)
		}
		got := a.list(c.r, c.r.Fields.Code+"="+url.QueryEscape(fresh)).Data
		if len(got) != 1 || got[0].Extra[c.e.Name] != c.rendered(ts...) {
			t.Fatalf("imported %+v, want %s = %s", got, c.e.Name, c.rendered(ts...))
		}
	})
}

// ownRef selects the references of a resource to its own records.
func ownRef(c refCase) bool { return c.to.Name == c.r.Name }

// A reference to the resource's own records may name, by its code, a
// record the same file creates, in a row above or below: one import
// writes them all and then sets those references, so that the records
// refer to each other by their new ids, the audit trail's and the change
// feed's last word on each is its final value, and an existing record
// that changes only by such a reference counts as updated.
func TestRef_AFileMayReferToRecordsItCreates(t *testing.T) {
	forEachRef(t, ownRef, func(t *testing.T, a *api, c refCase) {
		stored := c.create(a, "LS", 0)
		existing := c.create(a, "LE", 0)
		codeA, codeB := c.code(c.r, "LA", 0), c.code(c.r, "LB", 0)
		storedCode, existingCode := c.code(c.r, "LS", 0), c.code(c.r, "LE", 0)
		// B, first, names A, below it, and (a list) a stored record; A
		// names B back, in another letter case; the existing record,
		// otherwise unchanged, names A.
		bRefs, aRefs := codeA, strings.ToLower(codeB)
		if c.many() {
			bRefs = codeA + ";" + storedCode
		}
		file := c.fileOf([3]string{codeB, "Later B", bRefs}, [3]string{codeA, "Later A", aRefs}, [3]string{existingCode, "Referring", codeA})
		feedStart := a.changes(c.r, "", "&limit=1000").Cursor
		res := a.imported(c.r, "", "text/csv", file)
		if res.Created != 2 || res.Updated != 1 || res.Unchanged != 0 || len(res.Rows) != 0 {
			t.Fatalf("import: %+v, want 2 created and 1 updated", res)
		}
		idOf := func(code string) int {
			got := a.list(c.r, c.r.Fields.Code+"="+url.QueryEscape(code)).Data
			if len(got) != 1 {
				t.Fatalf("%s: %d records", code, len(got))
			}
			return got[0].ID
		}
		idA, idB := idOf(codeA), idOf(codeB)
		want := map[int]string{idB: c.rendered(idA), idA: c.rendered(idB), existing: c.rendered(idA)}
		if c.many() {
			want[idB] = c.rendered(idA, stored)
		}
		feed := a.changes(c.r, feedStart, "&limit=1000")
		for id, w := range want {
			if got := c.field(a, id); got != w {
				t.Errorf("record %d: %s = %s, want %s", id, c.e.Name, got, w)
			}
			entries := a.audit(fmt.Sprintf("resource=%s&record_id=%d", c.r.Name, id))
			var last bytes.Buffer
			if len(entries) == 0 || json.Compact(&last, entries[0].Changes[c.e.Name][1]) != nil || last.String() != w {
				t.Errorf("record %d: the newest audit entry has %s = %s, want %s", id, c.e.Name, last.String(), w)
			}
			var final map[string]json.RawMessage
			for _, ch := range feed.Changes {
				if ch.ID == id {
					final = nil
					_ = json.Unmarshal(ch.Record, &final)
				}
			}
			last.Reset()
			if json.Compact(&last, final[c.e.Name]) != nil || last.String() != w {
				t.Errorf("record %d: the change feed's last change has %s = %s, want %s", id, c.e.Name, final[c.e.Name], w)
			}
		}

		// A code neither stored nor in the file is still unknown, and
		// the file writes nothing.
		codeC := c.code(c.r, "LC", 0)
		resp := a.importFile(c.r, "", "text/csv", c.fileOf([3]string{codeC, "Later C", "NOPE-" + c.e.Name}))
		var bad importResult
		col := c.e.Name + "_code"
		if c.many() {
			col += "s"
		}
		msg := fmt.Sprintf("Object with %s=NOPE-%s does not exist.", c.r.Fields.Code, c.e.Name)
		if resp.Status != http.StatusBadRequest || json.Unmarshal(resp.Body, &bad) != nil || len(bad.Rows) != 1 ||
			!slices.Equal(bad.Rows[0].Errors[col], []string{msg}) {
			t.Fatalf("an unknown code: %s, want row 2 with %s: [%s]", resp, col, msg)
		}
		if got := a.codes(c.r, c.r.Fields.Code+"="+url.QueryEscape(codeC)); len(got) != 0 {
			t.Fatalf("a refused file wrote %q", got)
		}
	})
}

// A row of a file that names itself is refused as the API refuses a
// record that refers to itself, whether it creates its record or
// updates it, and the file writes nothing.
func TestRef_AFileRowThatNamesItselfIsRefusedAsTheAPIRefusesIt(t *testing.T) {
	forEachRef(t, ownRef, func(t *testing.T, a *api, c refCase) {
		col := c.e.Name + "_code"
		if c.many() {
			col += "s"
		}
		other := c.code(c.r, "NO", 0)
		existing := c.code(c.r, "NE", 0)
		c.create(a, "NE", 0)
		for _, code := range []string{c.code(c.r, "NN", 0), existing} {
			self := code
			if c.many() {
				self = other + ";" + code
			}
			resp := a.importFile(c.r, "", "text/csv", c.fileOf([3]string{other, "Other", ""}, [3]string{code, "Itself", self}))
			var res importResult
			msg := "This " + c.r.Name + " cannot refer to itself."
			if resp.Status != http.StatusBadRequest || json.Unmarshal(resp.Body, &res) != nil || len(res.Rows) != 1 ||
				res.Rows[0].Row != 3 || !slices.Equal(res.Rows[0].Errors[col], []string{msg}) {
				t.Fatalf("%s naming itself: %s, want row 3 with %s: [%s]", code, resp, col, msg)
			}
			if got := a.codes(c.r, c.r.Fields.Code+"="+url.QueryEscape(other)); len(got) != 0 {
				t.Fatalf("a refused file wrote %q", got)
			}
		}
	})
}
