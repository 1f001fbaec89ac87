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

func strict(c *config.Config) { c.StrictQuery = true }

// errorMessages returns the messages of each parameter of a 400.
func errorMessages(t *testing.T, resp *response) map[string][]string {
	t.Helper()
	var e struct {
		Errors map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal(resp.Body, &e); err != nil {
		t.Fatalf("error body: %v: %s", err, resp.Body)
	}
	return e.Errors
}

// Django REST Framework reads page_size with Python's int(): white space
// around it, a sign, underscores between digits and the digits of any
// script are all a number. "+" in a query string is a space already.
func TestList_PageSizeIsReadAsDjangoRESTFrameworkReadsIt(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 12, "x")
		for _, tc := range []struct {
			raw  string
			want int
		}{
			{"%2B1", 1}, {"+1", 1}, {"%201%20", 1}, {"%091", 1}, {"1_0", 10}, {"0_3", 3}, {"%D9%A1%D9%A2", 12}, {"007", 7},
			// Not a positive integer: the default page size.
			{"0", 10}, {"-1", 10}, {"abc", 10}, {"1__0", 10}, {"_1", 10}, {"1_", 10}, {"1.0", 10}, {"%2B-1", 10}, {"", 10},
		} {
			if lb := a.list(r, "page_size="+tc.raw); len(lb.Data) != tc.want {
				t.Errorf("page_size=%s: %d records, want %d", tc.raw, len(lb.Data), tc.want)
			}
		}
	})
}

func TestList_StrictModeRefusesAPageSizeThatIsNotAPositiveIntegerOnly(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 3, "x")
		for _, raw := range []string{"%2B1", "%201%20", "1_0"} {
			if lb := a.list(r, "page_size="+raw); lb.Count != 3 {
				t.Errorf("page_size=%s: %+v", raw, lb)
			}
		}
		for _, raw := range []string{"0", "-1", "abc", "1__0"} {
			wantError(t, a.do(http.MethodGet, r.query("page_size="+raw), nil), http.StatusBadRequest, "page_size", "Enter a positive integer.")
		}
	}, strict)
}

func TestList_StrictModeRefusesRepeatedOrderingTerms(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 3, "x")
		n := r.Fields.Name
		for _, ordering := range []string{n + ",-" + n, "-id,id", n + "," + r.Fields.Code + "," + n} {
			wantError(t, a.do(http.MethodGet, r.query("ordering="+url.QueryEscape(ordering)), nil), http.StatusBadRequest, "ordering", "")
		}
		// A term after a unique field cannot change the order: not an error.
		if lb := a.list(r, "ordering="+r.Fields.Code+","+n); lb.Count != 3 {
			t.Errorf("ordering by the code, then the name: %+v", lb)
		}
	}, strict)
}

func TestList_StrictModeRefusesUnknownParametersAndLookupsNamingEach(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 3, "x")
		c, n := r.Fields.Code, r.Fields.Name
		for _, tc := range []struct{ query, param, says string }{
			{"colour=blue", "colour", "Unknown parameter"},
			{"colour=", "colour", "Unknown parameter"},
			{n + "e=x", n + "e", "Unknown parameter"},
			{n + "__iexact=x", n + "__iexact", "has no iexact filter"},
			{c + "_isnull=true", c + "_isnull", "has no isnull filter"},
			{c + "__startswith=A", c + "__startswith", "has no startswith filter"},
		} {
			resp := a.do(http.MethodGet, r.query(tc.query), nil)
			wantError(t, resp, http.StatusBadRequest, tc.param, "")
			if msg := errorMessages(t, resp)[tc.param][0]; !strings.Contains(msg, tc.says) {
				t.Errorf("%s: %q does not say %q", tc.query, msg, tc.says)
			}
		}
		// Every unknown parameter is named at once, beside the other errors.
		resp := a.do(http.MethodGet, r.query("colour=blue&size=9&page_size=x"), nil)
		wantError(t, resp, http.StatusBadRequest, "colour", "", "size", "", "page_size", "")

		// What the list takes, search among them (whoever filters by it),
		// in both spellings of each filter.
		known := []string{"page=1", "page_size=5", "ordering=-id", "search=x", c + "=C01", c + "__exact=C01",
			c + "_icontains=C", c + "__icontains=C", n + "=x", n + "_icontains=x", n + "__icontains=x"}
		if r.Hierarchical() {
			p := r.Fields.Parent
			known = append(known, p+"=1", p+"_isnull=true", p+"__isnull=true", p+"__exact=1")
		}
		for _, q := range known {
			if resp := a.do(http.MethodGet, r.query(q), nil); resp.Status != http.StatusOK {
				t.Errorf("%s: %s", q, resp)
			}
		}
	}, strict)
}

func TestHierarchy_StrictModeRefusesUnknownParametersOfDescendantsAndTree(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "ROOT", "Root", nil)
		a.create(r, "KID", "Kid", id)
		wantError(t, a.do(http.MethodGet, r.item(id)+"descendants/?colour=1", nil), http.StatusBadRequest, "colour", "")
		if resp := a.do(http.MethodGet, r.item(id)+"descendants/?page_size=5&"+r.Fields.Code+"=KID", nil); resp.Status != http.StatusOK {
			t.Errorf("descendants with list parameters: %s", resp)
		}
		wantError(t, a.do(http.MethodGet, r.coll()+"tree/?colour=1&depth=x", nil), http.StatusBadRequest, "colour", "", "depth", "")
		wantError(t, a.do(http.MethodGet, r.coll()+"tree/?page_size=5", nil), http.StatusBadRequest, "page_size", "")
		if resp := a.do(http.MethodGet, r.coll()+"tree/?root="+itoa(id)+"&depth=1", nil); resp.Status != http.StatusOK {
			t.Errorf("tree with root and depth: %s", resp)
		}
	}, strict)
}

func TestHierarchy_LenientModeIgnoresUnknownParametersOfTheTree(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		a.create(r, "ROOT", "Root", nil)
		if resp := a.do(http.MethodGet, r.coll()+"tree/?colour=1&page_size=5", nil); resp.Status != http.StatusOK {
			t.Errorf("%s", resp)
		}
	})
}

// forEachExtraWith is forEachExtra on servers adjusted by adjust.
func forEachExtraWith(t *testing.T, fn func(t *testing.T, a *api, r res, e config.ExtraField), adjust ...func(*config.Config)) {
	has := func(d config.Resource) bool { return len(d.Extra) > 0 }
	if !slices.ContainsFunc(server.CompiledResources(), has) {
		t.Skip("no compiled resource has extra fields; cmd/resourcegen's end-to-end test runs this with one that has")
	}
	forEachWhere(t, has, func(t *testing.T, a *api, r res) {
		for _, e := range r.Extra {
			t.Run(e.Name, func(t *testing.T) { fn(t, a, r, e) })
		}
	}, adjust...)
}

func TestExtra_StrictModeRefusesLookupsAFieldDoesNotDeclare(t *testing.T) {
	forEachExtraWith(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		for _, lookup := range []string{config.FilterExact, config.FilterIContains, config.FilterGTE, config.FilterLTE, config.FilterIsNull, "iexact"} {
			if e.HasFilter(lookup) {
				continue
			}
			name := e.Name + "__" + lookup
			resp := a.do(http.MethodGet, r.query(name+"=1"), nil)
			wantError(t, resp, http.StatusBadRequest, name, "")
			if msg := errorMessages(t, resp)[name][0]; !strings.Contains(msg, e.Name+" has no "+lookup+" filter") {
				t.Errorf("%s: %q", name, msg)
			}
		}
	}, strict)
}

// django-filter's ChoiceFilter refuses a value that is not a choice, in
// Django's words, rather than matching nothing.
func TestExtra_AChoiceFilterWithANonChoiceIs400InDjangoFiltersWords(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		if e.Type != config.TypeChoice || !e.HasFilter(config.FilterExact) {
			return
		}
		for _, name := range []string{e.Name, e.Name + "__exact"} {
			resp := a.do(http.MethodGet, r.query(name+"=bogus"), nil)
			wantError(t, resp, http.StatusBadRequest, name, "Select a valid choice. bogus is not one of the available choices.")
		}
		if lb := a.list(r, e.Name+"="+url.QueryEscape(e.Choices[0])); lb.Code != 0 {
			t.Errorf("a choice: %+v", lb)
		}
	})
}

// django-filter lowers a boolean filter's value: true, false, 1 and 0 in
// any letter case.
func TestExtra_BooleanFiltersTakeTrueFalseOneAndZeroInAnyLetterCase(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		if e.Type != config.TypeBoolean || !e.HasFilter(config.FilterExact) {
			return
		}
		ids := map[bool]int{}
		for _, v := range []bool{true, false} {
			body := r.body(fmt.Sprintf("BOOL-%v-%s", v, e.Name), "Boolean", nil)
			body[e.Name] = v
			ids[v] = r.decodeRecord(t, a.do(http.MethodPost, r.coll(), body).Body).ID
		}
		for raw, want := range map[string]bool{"true": true, "TRUE": true, "tRuE": true, "1": true, "false": false, "FALSE": false, "fAlSe": false, "0": false} {
			lb := a.list(r, e.Name+"="+raw+"&page_size=1000")
			var found []int
			for _, rec := range lb.Data {
				if rec.ID == ids[true] || rec.ID == ids[false] {
					found = append(found, rec.ID)
				}
			}
			if !slices.Equal(found, []int{ids[want]}) {
				t.Errorf("%s=%s: %v, want only %d", e.Name, raw, found, ids[want])
			}
		}
		wantError(t, a.do(http.MethodGet, r.query(e.Name+"=yes"), nil), http.StatusBadRequest, e.Name, "")
	})
}

// Python's dates, and so DRF's, begin with year 1; PostgreSQL refuses year
// 0, which Go's calendar has. Every backend answers DRF's 400.
func TestExtra_ADateBeforeYearOneIs400InBodiesAndFilters(t *testing.T) {
	forEachExtra(t, func(t *testing.T, a *api, r res, e config.ExtraField) {
		if e.Type != config.TypeDate {
			return
		}
		body := r.body("Y0-"+e.Name, "Year zero", nil)
		body[e.Name] = "0000-01-01"
		wantError(t, a.do(http.MethodPost, r.coll(), body), http.StatusBadRequest, e.Name,
			"Date has wrong format. Use one of these formats instead: YYYY-MM-DD.")
		body[e.Name] = "0001-01-01"
		if resp := a.do(http.MethodPost, r.coll(), body); resp.Status != http.StatusCreated {
			t.Errorf("year 1: %s", resp)
		}
		for _, f := range e.Filters {
			name := map[string]string{config.FilterExact: e.Name, config.FilterGTE: e.Name + "_gte", config.FilterLTE: e.Name + "__lte"}[f]
			if name != "" {
				wantError(t, a.do(http.MethodGet, r.query(name+"=0000-01-01"), nil), http.StatusBadRequest, name, "")
			}
		}
	})
}
