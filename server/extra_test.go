package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"personnel/config"
	"personnel/server"
)

// The tests of extra fields run over every compiled resource that has
// them. The shipped departments and areas have none: cmd/resourcegen's
// end-to-end test runs these against a resource with one of each type.

// forEachExtra runs fn for every extra field of every compiled resource
// but references (refs_test.go).
func forEachExtra(t *testing.T, fn func(t *testing.T, a *api, r res, e config.ExtraField)) {
	has := func(d config.Resource) bool {
		return slices.ContainsFunc(d.Extra, func(e config.ExtraField) bool { return !e.IsRef() })
	}
	if !slices.ContainsFunc(server.CompiledResources(), has) {
		t.Skip("no compiled resource has extra fields; cmd/resourcegen's end-to-end test runs this with one that has")
	}
	forEachWhere(t, has, func(t *testing.T, a *api, r res) {
		for _, e := range r.Extra {
			if !e.IsRef() {
				t.Run(e.Name, func(t *testing.T) { fn(t, a, r, e) })
			}
		}
	})
}

// ascending are three valid values of e in ascending order, as JSON
// values; booleans have two.
func ascending(e config.ExtraField) []any {
	switch e.Type {
	case config.TypeInteger:
		lo := int64(0)
		if e.Min != nil {
			lo = *e.Min
		} else if e.Max != nil {
			lo = *e.Max - 2
		}
		return []any{lo, lo + 1, lo + 2}
	case config.TypeBoolean:
		return []any{false, true}
	case config.TypeDate:
		return []any{"2023-12-31", "2024-02-29", "2025-01-01"}
	case config.TypeChoice:
		cs := slices.Clone(e.Choices)
		slices.Sort(cs)
		out := []any{}
		for _, c := range cs {
			out = append(out, c)
		}
		return out
	}
	return []any{"alpha", "Beta", "gamma"}
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// param writes v as a query value.
func param(v any) string {
	if s, ok := v.(string); ok {
		return url.QueryEscape(s)
	}
	return fmt.Sprint(v)
}

func TestExtra_ACreateWithoutAnOptionalFieldStoresItsDefaultOrNull(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		id := a.create(r, "D-"+e.Name, "Defaults", nil)
		got := a.get(r, id).Extra[e.Name]
		if want := r.created()[e.Name]; got != want {
			t.Fatalf("%s = %s after a create without it, want %s", e.Name, got, want)
		}
	})
}

func TestExtra_ValuesAreStoredAndRenderedByType(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		for i, v := range ascending(e) {
			body := r.body(fmt.Sprintf("V%d-%s", i, e.Name), "Values", nil)
			body[e.Name] = v
			resp := a.do(http.MethodPost, r.coll(), body)
			if resp.Status != http.StatusCreated {
				t.Fatalf("create with %s=%v: %s", e.Name, v, resp)
			}
			rec := r.decodeRecord(t, resp.Body)
			if got := a.get(r, rec.ID).Extra[e.Name]; got != jsonOf(v) || rec.Extra[e.Name] != jsonOf(v) {
				t.Fatalf("%s = %s (answered %s), want %s", e.Name, got, rec.Extra[e.Name], jsonOf(v))
			}
		}
	})
}

func TestExtra_InvalidValuesAre400InDjangoRESTFrameworksWords(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		type bad struct {
			value any
			msg   string
		}
		var cases []bad
		switch e.Type {
		case config.TypeInteger:
			cases = []bad{{"abc", "A valid integer is required."}, {1.5, "A valid integer is required."}, {true, "A valid integer is required."}}
			if e.Min != nil {
				cases = append(cases, bad{*e.Min - 1, fmt.Sprintf("Ensure this value is greater than or equal to %d.", *e.Min)})
			}
			if e.Max != nil {
				cases = append(cases, bad{*e.Max + 1, fmt.Sprintf("Ensure this value is less than or equal to %d.", *e.Max)})
			}
		case config.TypeBoolean:
			cases = []bad{{"maybe", "Must be a valid boolean."}, {2, "Must be a valid boolean."}}
		case config.TypeDate:
			msg := "Date has wrong format. Use one of these formats instead: YYYY-MM-DD."
			cases = []bad{{"2024-13-01", msg}, {"2023-02-29", msg}, {"01/02/2024", msg}, {20240101, msg}}
		case config.TypeChoice:
			cases = []bad{{"no-such-choice", `"no-such-choice" is not a valid choice.`}}
		case config.TypeString:
			cases = []bad{{strings.Repeat("x", e.MaxLength+1), fmt.Sprintf("Ensure this field has no more than %d characters.", e.MaxLength)},
				{12, "Not a valid string."}, {"a\x00b", "Null characters are not allowed."}}
		}
		if e.Required {
			cases = append(cases, bad{nil, "This field may not be null."})
		}
		id := a.create(r, "KEEP-"+e.Name, "Keep", nil)
		before := a.get(r, id)
		for i, c := range cases {
			body := r.body(fmt.Sprintf("B%d-%s", i, e.Name), "Bad", nil)
			body[e.Name] = c.value
			wantError(t, a.do(http.MethodPost, r.coll(), body), http.StatusBadRequest, e.Name, c.msg)
			wantError(t, a.do(http.MethodPatch, r.item(id), map[string]any{e.Name: c.value}), http.StatusBadRequest, e.Name, c.msg)
		}
		if e.Required {
			body := r.body("REQ-"+e.Name, "Required", nil)
			delete(body, e.Name)
			wantError(t, a.do(http.MethodPost, r.coll(), body), http.StatusBadRequest, e.Name, "This field is required.")
		}
		if after := a.get(r, id); !after.equal(before) {
			t.Fatalf("refused writes changed the record: %+v, was %+v", after, before)
		}
	})
}

func TestExtra_PutAndPatchKeepAnOmittedFieldAndNullClearsAnOptionalOne(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		vs := ascending(e)
		body := r.body("K-"+e.Name, "Kept", nil)
		body[e.Name] = vs[1]
		id := r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID
		for _, m := range []string{http.MethodPut, http.MethodPatch} {
			resp := a.do(m, r.item(id), map[string]any{r.Fields.Code: "K-" + e.Name, r.Fields.Name: "Renamed"})
			if got := r.decodeRecord(t, resp.Body).Extra[e.Name]; resp.Status != http.StatusOK || got != jsonOf(vs[1]) {
				t.Fatalf("%s without %s: %s", m, e.Name, resp)
			}
		}
		resp := a.do(http.MethodPatch, r.item(id), map[string]any{e.Name: vs[0]})
		if got := a.get(r, id).Extra[e.Name]; resp.Status != http.StatusOK || got != jsonOf(vs[0]) {
			t.Fatalf("PATCH %s: %s; stored %s", e.Name, resp, got)
		}
		if e.Required {
			return
		}
		resp = a.do(http.MethodPatch, r.item(id), map[string]any{e.Name: nil})
		if got := a.get(r, id).Extra[e.Name]; resp.Status != http.StatusOK || got != "null" {
			t.Fatalf("PATCH %s null: %s; stored %s", e.Name, resp, got)
		}
	})
}

func TestExtra_TheETagChangesWithAnExtraField(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		vs := ascending(e)
		body := r.body("E-"+e.Name, "ETag", nil)
		body[e.Name] = vs[0]
		id := r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID
		before := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag")
		a.do(http.MethodPatch, r.item(id), map[string]any{e.Name: vs[1]})
		if after := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag"); after == before {
			t.Fatalf("ETag %s did not change when %s did", after, e.Name)
		}
		wantError(t, a.do(http.MethodPatch, r.item(id), map[string]any{e.Name: vs[0]}, "If-Match", before), http.StatusPreconditionFailed)
	})
}

func TestExtra_FiltersSelectByValueInBothSpellings(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		vs := ascending(e)
		ids := map[string]int{}
		for i, v := range vs {
			body := r.body(fmt.Sprintf("F%d-%s", i, e.Name), "Filtered", nil)
			body[e.Name] = v
			ids[jsonOf(v)] = r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID
		}
		var nullID int
		if !e.Required {
			body := r.body("FNULL-"+e.Name, "Filtered", nil)
			body[e.Name] = nil
			nullID = r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID
		}
		ours := map[int]bool{nullID: nullID != 0}
		for _, id := range ids {
			ours[id] = true
		}
		// Other subtests write to the same table: only this one's records count.
		got := func(query string) []int {
			lb := a.list(r, query+"&page_size=1000")
			out := []int{}
			for _, rec := range lb.Data {
				if ours[rec.ID] {
					out = append(out, rec.ID)
				}
			}
			return out
		}
		check := func(query string, want ...int) {
			t.Helper()
			if g := got(query); !slices.Equal(g, want) {
				t.Errorf("%s: ids %v, want %v", query, g, want)
			}
		}
		mid := vs[1]
		for _, f := range e.Filters {
			switch f {
			case config.FilterExact:
				check(e.Name+"="+param(mid), ids[jsonOf(mid)])
				check(e.Name+"__exact="+param(mid), ids[jsonOf(mid)])
				if e.Type == config.TypeBoolean {
					check(e.Name+"=1", ids["true"])
					check(e.Name+"=True", ids["true"])
					check(e.Name+"=False", ids["false"])
				}
			case config.FilterIContains:
				check(e.Name+"_icontains=ETA", ids[jsonOf("Beta")])
				check(e.Name+"__icontains=%25", []int{}...)
			case config.FilterGTE:
				check(e.Name+"_gte="+param(mid), ids[jsonOf(vs[1])], ids[jsonOf(vs[2])])
				check(e.Name+"__gte="+param(mid), ids[jsonOf(vs[1])], ids[jsonOf(vs[2])])
			case config.FilterLTE:
				check(e.Name+"_lte="+param(mid), ids[jsonOf(vs[0])], ids[jsonOf(vs[1])])
				check(e.Name+"__lte="+param(mid), ids[jsonOf(vs[0])], ids[jsonOf(vs[1])])
			case config.FilterIsNull:
				check(e.Name+"_isnull=true", nullID)
				var valued []int
				for _, id := range ids {
					valued = append(valued, id)
				}
				slices.Sort(valued)
				check(e.Name+"__isnull=false", valued...)
			}
		}
		if e.Type == config.TypeInteger || e.Type == config.TypeDate {
			for _, f := range e.Filters {
				if f == config.FilterExact || f == config.FilterGTE {
					name := map[string]string{config.FilterExact: e.Name, config.FilterGTE: e.Name + "_gte"}[f]
					wantError(t, a.do(http.MethodGet, r.query(name+"=not-a-value"), nil), http.StatusBadRequest, name, "")
				}
			}
		}
	})
}

func TestExtra_OrderingSortsByTheFieldThenID(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		if !e.Ordering {
			return
		}
		vs := ascending(e)
		var want []int
		for i := len(vs) - 1; i >= 0; i-- { // created in descending order
			for j := 0; j < 2; j++ {
				body := r.body(fmt.Sprintf("O%d%d-%s", i, j, e.Name), "Ordered", nil)
				body[e.Name] = vs[i]
				want = append(want, r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID)
			}
		}
		// Ascending by the field, each pair of equal values by id.
		var asc []int
		for i := len(want) - 2; i >= 0; i -= 2 {
			asc = append(asc, want[i], want[i+1])
		}
		// Other subtests write to the same table: only this one's records count.
		ids := func(lb listBody) []int {
			var out []int
			for _, rec := range lb.Data {
				if slices.Contains(want, rec.ID) {
					out = append(out, rec.ID)
				}
			}
			return out
		}
		if got := ids(a.list(r, "page_size=1000&ordering="+e.Name)); !slices.Equal(got, asc) {
			t.Errorf("ordering=%s: %v, want %v", e.Name, got, asc)
		}
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		if got := ids(a.list(r, "page_size=1000&ordering=-"+e.Name)); !slices.Equal(got, desc) {
			t.Errorf("ordering=-%s: %v, want %v", e.Name, got, desc)
		}
	})
}
