package server_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"personnel/config"
)

// seedNamed creates n records with codes C00..C(n-1), all named name, and
// returns their ids in creation order.
func seedNamed(a *api, r res, n int, name string) []int {
	a.t.Helper()
	ids := make([]int, n)
	for i := range ids {
		ids[i] = a.create(r, fmt.Sprintf("C%02d", i), name, nil)
	}
	return ids
}

func codes(recs []record) []string {
	out := make([]string, len(recs))
	for i, rec := range recs {
		out[i] = rec.Code
	}
	return out
}

func TestList_DefaultIsFirstTenByIDInTheEnvelope(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ids := seedNamed(a, r, 23, "Same")
		lb := a.list(r, "")
		if lb.Count != 23 || lb.Msg != "" || lb.Code != 0 || len(lb.Data) != 10 {
			t.Fatalf("envelope count=%d msg=%q code=%d len=%d", lb.Count, lb.Msg, lb.Code, len(lb.Data))
		}
		for i, rec := range lb.Data {
			if rec.ID != ids[i] {
				t.Fatalf("item %d has id %d, want %d (id order)", i, rec.ID, ids[i])
			}
		}
		if lb.Previous != nil || lb.Next == nil || *lb.Next != "http://example.com"+r.coll()+"?page=2" {
			t.Fatalf("previous %v next %v", lb.Previous, lb.Next)
		}
	})
}

func TestList_EmptyResultIsPageOneWithCountZero(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		lb := a.list(r, "")
		if lb.Count != 0 || len(lb.Data) != 0 || lb.Next != nil || lb.Previous != nil {
			t.Fatalf("empty list: %+v", lb)
		}
		if lb := a.list(r, "page=last"); lb.Count != 0 {
			t.Fatalf("page=last of nothing: %+v", lb)
		}
	})
}

func TestList_InvalidPageIs404(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 12, "x")
		for _, page := range []string{"0", "-1", "abc", "1.0", "", "4", "LAST", "99999999999999999999", "4611686018427387904"} {
			resp := a.do(http.MethodGet, r.query("page_size=5&page="+url.QueryEscape(page)), nil)
			wantError(t, resp, http.StatusNotFound)
			if !strings.Contains(string(resp.Body), `"msg":"Invalid page."`) {
				t.Errorf("page=%q: %s", page, resp)
			}
		}
	})
}

func TestList_PageIsReadAsPythonsIntAsDjangosPaginatorReadsIt(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 12, "x")
		want := a.list(r, "page_size=5&page=2")
		for _, page := range []string{"+2", " 2 ", "0_2", "\t2\n"} {
			lb := a.list(r, "page_size=5&page="+url.QueryEscape(page))
			if lb.Count != 12 || len(lb.Data) != len(want.Data) || lb.Data[0].ID != want.Data[0].ID {
				t.Errorf("page=%q: %+v, want page 2", page, lb)
			}
		}
		for _, page := range []string{"-2", "2_", "+", "2.0"} {
			wantError(t, a.do(http.MethodGet, r.query("page_size=5&page="+url.QueryEscape(page)), nil), http.StatusNotFound)
		}
	})
}

func TestList_PageLastAndCountOfMatches(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 12, "x")
		lb := a.list(r, "page_size=5&page=last")
		if lb.Count != 12 || len(lb.Data) != 2 || lb.Next != nil || lb.Previous == nil ||
			*lb.Previous != "http://example.com"+r.coll()+"?page=2&page_size=5" {
			t.Fatalf("page=last: count %d len %d next %v previous %v", lb.Count, len(lb.Data), lb.Next, lb.Previous)
		}
		if lb := a.list(r, "page_size=5&page=2"); lb.Count != 12 || lb.Previous == nil || *lb.Previous != "http://example.com"+r.coll()+"?page_size=5" {
			t.Fatalf("page 2: count %d previous %v (the link to page 1 drops page)", lb.Count, lb.Previous)
		}
	})
}

func TestList_PageSizeAboveTheMaximumIsClamped(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 7, "x")
		if lb := a.list(r, "page_size=999999999999999999999"); len(lb.Data) != 5 || lb.Count != 7 || lb.Next == nil {
			t.Fatalf("clamped page: len %d count %d next %v", len(lb.Data), lb.Count, lb.Next)
		}
	}, func(c *config.Config) { c.PageSizeMax = 5 })
}

func TestList_MalformedFilterValuesAre400NamingEachParameter(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 2, "x")
		p, isnull := r.Fields.Parent, r.Fields.Parent+"_isnull"
		for _, tc := range []struct{ query, param string }{
			{p + "=abc", p},
			{p + "=1.5", p},
			{isnull + "=maybe", isnull},
			{p + "__isnull=maybe", p + "__isnull"},
			{r.Fields.Name + "_icontains=a%00b", r.Fields.Name + "_icontains"},
			{r.Fields.Code + "=%00", r.Fields.Code},
		} {
			wantError(t, a.do(http.MethodGet, r.query(tc.query), nil), http.StatusBadRequest, tc.param, "")
		}
		resp := a.do(http.MethodGet, r.query(p+"=z&"+isnull+"=w"), nil)
		wantError(t, resp, http.StatusBadRequest, p, "", isnull, "")
		wantError(t, a.do(http.MethodGet, r.query(r.Fields.Code+"=%00"), nil), http.StatusBadRequest, r.Fields.Code, "Null characters are not allowed.")
	})
}

func TestList_StrictModeRefusesMalformedPageSizeAndOrdering(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 2, "x")
		for _, tc := range []struct{ query, param string }{
			{"page_size=0", "page_size"},
			{"page_size=-3", "page_size"},
			{"page_size=abc", "page_size"},
			{"page_size=", "page_size"},
			{"page_size=2.5", "page_size"},
			{"ordering=colour", "ordering"},
			{"ordering=" + r.Fields.Code + ",-nope", "ordering"},
			{"ordering=--id", "ordering"},
		} {
			wantError(t, a.do(http.MethodGet, r.query(tc.query), nil), http.StatusBadRequest, tc.param, "")
		}
		resp := a.do(http.MethodGet, r.query("page_size=x&ordering=y&"+r.Fields.Code+"=%00"), nil)
		wantError(t, resp, http.StatusBadRequest, "page_size", "", "ordering", "", r.Fields.Code, "")
	}, func(c *config.Config) { c.StrictQuery = true })
}

func TestList_LenientModeDropsUnknownOrderingAndFallsBackToTheDefaultPageSize(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ids := seedNamed(a, r, 12, "x")
		n, c := r.Fields.Name, r.Fields.Code
		for _, tc := range []struct {
			query   string
			wantLen int
			first   int // id of the first record
		}{
			{"page_size=0", 10, ids[0]},
			{"page_size=abc", 10, ids[0]},
			{"page_size=", 10, ids[0]},
			{"page_size=-3", 10, ids[0]},
			{"ordering=colour", 10, ids[0]},
			{"ordering=--id", 10, ids[0]},
			{"ordering=colour,-id", 10, ids[11]},
			{"ordering=-" + c + ",nope," + n, 10, ids[11]},
			{"ordering=dept_name,area_name,-id", 10, ids[11]}, // a client's bug the real server forgives
			{"ordering=-id,id", 10, ids[11]},
			{"ordering=" + n + ",-" + n + ",-id", 10, ids[11]}, // the repeated term is dropped
		} {
			lb := a.list(r, tc.query)
			if len(lb.Data) != tc.wantLen || lb.Data[0].ID != tc.first || lb.Count != 12 {
				t.Errorf("%s: %d records from id %d (count %d), want %d from id %d", tc.query, len(lb.Data), lb.Data[0].ID, lb.Count, tc.wantLen, tc.first)
			}
		}
		// Thousands of ordering terms make a small ORDER BY, not a 500.
		many := strings.Repeat(n+",-"+n+",", 3000) + "-id"
		if lb := a.list(r, "ordering="+url.QueryEscape(many)); lb.Count != 12 {
			t.Errorf("ordering with 6,000 terms: count %d", lb.Count)
		}
	})
}

func TestList_DjangoLookupSpellingsAreSynonyms(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "ROOT", "Sales", nil)
		a.create(r, "KID", "Presales", root)
		a.create(r, "OTHER", "Marketing", nil)
		n, p := r.Fields.Name, r.Fields.Parent
		for ours, django := range map[string]string{
			n + "_icontains=SALES": n + "__icontains=SALES",
			p + "_isnull=true":     p + "__isnull=true",
			r.Fields.Code + "=KID": r.Fields.Code + "__exact=KID",
		} {
			want, got := a.list(r, ours), a.list(r, django)
			if !slices.Equal(codes(want.Data), codes(got.Data)) || got.Count == 3 {
				t.Errorf("%s gives %v, %s gives %v", ours, codes(want.Data), django, codes(got.Data))
			}
		}
	})
}

func TestList_UnknownParametersAreIgnoredAndEmptyFiltersAreNoFilters(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 3, "x")
		q := "colour=blue&" + r.Fields.Code + "=&" + r.Fields.Name + "_icontains=&ordering="
		if r.Hierarchical() {
			q += "&" + r.Fields.Parent + "=&" + r.Fields.Parent + "_isnull="
		}
		if lb := a.list(r, q); lb.Count != 3 {
			t.Fatalf("count %d, want 3", lb.Count)
		}
	})
}

// Walking next from page 1 (and previous back from the last page) must
// visit every record exactly once in every ordering, even when many records
// share a name across page boundaries.
func TestList_WalkingNextAndPreviousVisitsEveryRecordExactlyOnce(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		names := []string{"Sales", "sales", "SALES", "Ärzte", "ärzte", "Zeta", "alpha"}
		var want []int
		for i := 0; i < 29; i++ {
			want = append(want, a.create(r, fmt.Sprintf("K%02d", 29-i), names[i%len(names)], nil))
		}
		slices.Sort(want)
		c, n := r.Fields.Code, r.Fields.Name
		for _, ordering := range []string{"", "id", "-id", c, "-" + c, n, "-" + n, n + ",-id", "-" + n + ",id", n + "," + c} {
			var seen []int
			next := "http://example.com" + r.query("page_size=4&ordering="+url.QueryEscape(ordering)+"&unrelated=kept")
			var pages []listBody
			for next != "" {
				u, _ := url.Parse(next)
				if u.Query().Get("unrelated") != "kept" || u.Query().Get("ordering") != ordering {
					t.Fatalf("link %s lost a parameter", next)
				}
				lb := a.list(r, u.RawQuery)
				pages = append(pages, lb)
				for _, rec := range lb.Data {
					seen = append(seen, rec.ID)
				}
				next = ""
				if lb.Next != nil {
					next = *lb.Next
				}
			}
			var back []int
			for i := len(pages) - 1; i >= 0; i-- {
				prev := pages[i].Previous
				if (i == 0) != (prev == nil) {
					t.Fatalf("ordering %q: page %d previous %v", ordering, i+1, prev)
				}
				for j := len(pages[i].Data) - 1; j >= 0; j-- {
					back = append(back, pages[i].Data[j].ID)
				}
			}
			sorted := slices.Clone(seen)
			slices.Sort(sorted)
			if !slices.Equal(sorted, want) {
				t.Fatalf("ordering %q: walked %v, want each of %v once", ordering, seen, want)
			}
			slices.Reverse(back)
			if !slices.Equal(back, seen) {
				t.Fatalf("ordering %q: previous links disagree with next links", ordering)
			}
		}
	})
}

func TestList_OrderingIgnoresCaseThenExactValueThenIDInTheLastDirection(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		type rec struct{ code, name string }
		recs := []rec{{"b2", "b"}, {"A1", "A"}, {"a3", "a"}, {"B4", "B"}, {"é5", "é"}, {"E6", "E"}, {"z7", "a"}, {"Ä8", "Ä"}}
		ids := map[string]int{}
		for _, x := range recs {
			ids[x.code] = a.create(r, x.code, x.name, nil)
		}
		get := func(ordering string) []string {
			return codes(a.list(r, "page_size=100&ordering="+url.QueryEscape(ordering)).Data)
		}
		// By folded name, then exact name (code point order: "A" < "a"),
		// then id: a3 and z7 share the name "a" and z7 was created later.
		wantAsc := []string{"A1", "a3", "z7", "B4", "b2", "E6", "Ä8", "é5"}
		if got := get(r.Fields.Name); !slices.Equal(got, wantAsc) {
			t.Errorf("ordering=%s: %v, want %v", r.Fields.Name, got, wantAsc)
		}
		wantDesc := slices.Clone(wantAsc)
		slices.Reverse(wantDesc)
		if got := get("-" + r.Fields.Name); !slices.Equal(got, wantDesc) {
			t.Errorf("ordering=-%s: %v, want %v (ties by id descending)", r.Fields.Name, got, wantDesc)
		}
		// Codes are unique ignoring case, so their folded order is total.
		wantCodes := []string{"A1", "a3", "b2", "B4", "E6", "z7", "Ä8", "é5"}
		if got := get(r.Fields.Code); !slices.Equal(got, wantCodes) {
			t.Errorf("ordering=%s: %v, want %v", r.Fields.Code, got, wantCodes)
		}
		if got := get("-id"); got[0] != "Ä8" || got[7] != "b2" {
			t.Errorf("ordering=-id: %v", got)
		}
	})
}

func TestList_ExactFiltersAreCaseSensitive(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "HR", "Human Resources", nil)
		a.create(r, "Ärzte", "Ärzte", nil)
		for _, tc := range []struct {
			param, value string
			want         int
		}{
			{r.Fields.Code, "HR", 1}, {r.Fields.Code, "hr", 0}, {r.Fields.Code, "HR ", 0}, {r.Fields.Code, "H", 0},
			{r.Fields.Name, "Human Resources", 1}, {r.Fields.Name, "human resources", 0}, {r.Fields.Name, "Human Resources ", 0},
			{r.Fields.Code, "Ärzte", 1}, {r.Fields.Code, "ärzte", 0}, {r.Fields.Code, "ÄRZTE", 0},
		} {
			if lb := a.list(r, tc.param+"="+url.QueryEscape(tc.value)); lb.Count != tc.want {
				t.Errorf("%s=%q: count %d, want %d", tc.param, tc.value, lb.Count, tc.want)
			}
		}
	})
}

func TestList_IcontainsFoldsEveryLetterAndTakesWildcardsLiterally(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for i, name := range []string{"Ärzte", "отдел кадров", "Straße", "100% Sales", "100 Sales", "a_b", "axb", `back\slash`, "ΣΊΣΥΦΟΣ"} {
			a.create(r, fmt.Sprintf("N%d", i), name, nil)
		}
		a.create(r, "ÄRZ-01", "x", nil)
		for _, tc := range []struct {
			param, value string
			want         []string
		}{
			{r.Fields.Name, "ÄRZTE", []string{"Ärzte"}},
			{r.Fields.Name, "ärz", []string{"Ärzte"}},
			{r.Fields.Name, "ОТДЕЛ", []string{"отдел кадров"}},
			{r.Fields.Name, "STRASSE", []string{"Straße"}},
			{r.Fields.Name, "σίσυφος", []string{"ΣΊΣΥΦΟΣ"}},
			{r.Fields.Name, "100%", []string{"100% Sales"}},
			{r.Fields.Name, "%", []string{"100% Sales"}},
			{r.Fields.Name, "_", []string{"a_b"}},
			{r.Fields.Name, "a_b", []string{"a_b"}},
			{r.Fields.Name, `\`, []string{`back\slash`}},
			{r.Fields.Name, "SALES", []string{"100 Sales", "100% Sales"}},
			{r.Fields.Code, "ärz-0", []string{"x"}},
		} {
			lb := a.list(r, tc.param+"_icontains="+url.QueryEscape(tc.value)+"&page_size=100")
			var got []string
			for _, rec := range lb.Data {
				got = append(got, rec.Name)
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) || lb.Count != len(tc.want) {
				t.Errorf("%s_icontains=%q: %v (count %d), want %v", tc.param, tc.value, got, lb.Count, tc.want)
			}
		}
	})
}

func TestList_ParentFilters(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "R", "Root", nil)
		c1 := a.create(r, "C1", "Child", root)
		a.create(r, "C2", "Child", root)
		a.create(r, "G1", "Grandchild", c1)
		p, isnull := r.Fields.Parent, r.Fields.Parent+"_isnull"
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{p + "=" + itoa(root), []string{"C1", "C2"}},
			{p + "=" + itoa(c1), []string{"G1"}},
			{p + "=999999", nil},
			{p + "=-4", nil},
			{p + "=99999999999999999999", nil},
			{isnull + "=true", []string{"R"}},
			{isnull + "=false", []string{"C1", "C2", "G1"}},
			{isnull + "=False&" + r.Fields.Name + "=Child", []string{"C1", "C2"}},
			{p + "=" + itoa(root) + "&" + r.Fields.Code + "_icontains=2", []string{"C2"}},
			{p + "=" + itoa(root) + "&" + isnull + "=true", nil},
		} {
			lb := a.list(r, tc.query)
			if got := codes(lb.Data); !slices.Equal(got, tc.want) || lb.Count != len(tc.want) {
				t.Errorf("%s: %v (count %d), want %v", tc.query, got, lb.Count, tc.want)
			}
		}
	})
}

func TestList_LinksComeFromThePublicURLWhenConfigured(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 3, "x")
		lb := a.list(r, "page_size=1&page=2")
		if lb.Next == nil || *lb.Next != "https://hr.example.org/gw"+r.coll()+"?page=3&page_size=1" {
			t.Fatalf("next %v", lb.Next)
		}
	}, func(c *config.Config) { c.PublicURL, _ = url.Parse("https://hr.example.org/gw") })
}

func TestList_ForwardedHeadersAreBelievedOnlyFromTrustedProxies(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		seedNamed(a, r, 2, "x")
		for _, tc := range []struct {
			remote, want string
		}{
			{"10.1.2.3:5555", "https://api.example.net"},
			{"192.0.2.9:5555", "http://example.com"},
		} {
			req := newRequest(http.MethodGet, r.query("page_size=1"))
			req.RemoteAddr = tc.remote
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-Host", "api.example.net")
			lb := r.decodeList(t, a.serve(req))
			if lb.Next == nil || !strings.HasPrefix(*lb.Next, tc.want+r.coll()) {
				t.Errorf("from %s: next %v, want it to start with %s", tc.remote, lb.Next, tc.want)
			}
		}
	}, func(c *config.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} })
}

func TestList_IcontainsPagesInBothDirectionsAndCombines(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "ROOT", "Headquarters", nil)
		var want []int
		for i := 0; i < 25; i++ {
			var parent any
			if i%2 == 0 {
				parent = root
			}
			want = append(want, a.create(r, fmt.Sprintf("SAL-%02d", i), fmt.Sprintf("Sales Team %d", i), parent))
		}
		a.create(r, "OTHER", "Purchasing", nil)
		walk := func(q string) ([]int, int) {
			var got []int
			count := -1
			next := "http://example.com" + r.query(q)
			for next != "" {
				u, _ := url.Parse(next)
				lb := a.list(r, u.RawQuery)
				count = lb.Count
				for _, rec := range lb.Data {
					got = append(got, rec.ID)
				}
				next = ""
				if lb.Next != nil {
					next = *lb.Next
				}
			}
			return got, count
		}
		n := r.Fields.Name + "_icontains"
		c := r.Fields.Code + "_icontains"
		if got, count := walk(n + "=SALES&page_size=10"); !slices.Equal(got, want) || count != 25 {
			t.Errorf("search, id order: %v (count %d)", got, count)
		}
		rev := slices.Clone(want)
		slices.Reverse(rev)
		if got, _ := walk(n + "=sales&page_size=10&ordering=-id"); !slices.Equal(got, rev) {
			t.Errorf("search, -id: %v", got)
		}
		if got, count := walk(n + "=team+1&" + c + "=sal-1"); count != 10 || len(got) != 10 {
			t.Errorf("code and name together: %v (count %d)", got, count)
		}
		var evens []int
		for i, id := range want {
			if i%2 == 0 {
				evens = append(evens, id)
			}
		}
		if got, count := walk(n + "=sales&" + r.Fields.Parent + "=" + itoa(root) + "&page_size=5"); !slices.Equal(got, evens) || count != 13 {
			t.Errorf("search with a parent filter: %v (count %d)", got, count)
		}
		if got, count := walk(n + "=am&page_size=10"); count != 25 || len(got) != 25 {
			t.Errorf("a two-letter search: %d found (count %d)", len(got), count)
		}
	})
}

// A text filter whose value is not UTF-8 (a query string may hold any
// bytes) matches nothing, on every backend: stored text is always UTF-8,
// and PostgreSQL refuses such a value rather than compare it.
func TestList_TextFilterNotUTF8MatchesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "abc", "abc", nil)
		for _, q := range []string{r.Fields.Code + "=%ff", r.Fields.Name + "__icontains=%ff%fe", r.Fields.Code + "__icontains=a%c3"} {
			if got := a.list(r, q); got.Count != 0 || len(got.Data) != 0 {
				t.Errorf("%s: %d records, want none", q, got.Count)
			}
		}
	})
}
