package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"personnel/db"
	"personnel/resource"
	"personnel/server"

	"personnel/config"
)

// forest creates, in this order:
//
//	R1 ── A ── A1 ── A1x
//	   │    └─ A2
//	   └─ B ── B1
//	R2 ── C
//
// and returns the ids by code.
func forest(a *api, r res) map[string]int {
	a.t.Helper()
	ids := map[string]int{}
	for _, n := range []struct{ code, parent string }{
		{"R1", ""}, {"A", "R1"}, {"A1", "A"}, {"A1x", "A1"}, {"A2", "A"}, {"B", "R1"}, {"B1", "B"}, {"R2", ""}, {"C", "R2"},
	} {
		var parent any
		if n.parent != "" {
			parent = ids[n.parent]
		}
		ids[n.code] = a.create(r, n.code, "Name "+n.code, parent)
	}
	return ids
}

func TestDescendants_AreEveryRecordBelowAtAnyDepth(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		for _, tc := range []struct {
			of   string
			want []string
		}{
			{"R1", []string{"A", "A1", "A1x", "A2", "B", "B1"}},
			{"A", []string{"A1", "A1x", "A2"}},
			{"R2", []string{"C"}},
			{"A1x", nil},
		} {
			lb := r.decodeList(t, a.do(http.MethodGet, r.item(ids[tc.of])+"descendants/", nil))
			if got := codes(lb.Data); !slices.Equal(got, tc.want) || lb.Count != len(tc.want) {
				t.Errorf("descendants of %s: %v (count %d), want %v", tc.of, got, lb.Count, tc.want)
			}
		}
		wantError(t, a.do(http.MethodGet, r.item(999999)+"descendants/", nil), http.StatusNotFound)
		wantError(t, a.do(http.MethodGet, r.coll()+"abc/descendants/", nil), http.StatusNotFound)
		if resp := a.do(http.MethodGet, strings.TrimSuffix(r.item(ids["A"])+"descendants", "/"), nil); resp.Status != http.StatusOK {
			t.Errorf("without the trailing slash: %s", resp)
		}
	})
}

func TestDescendants_TakeTheListParameters(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		base := r.item(ids["R1"]) + "descendants/"
		get := func(q string) listBody { return r.decodeList(t, a.do(http.MethodGet, base+"?"+q, nil)) }
		if got := codes(get(r.Fields.Code + "_icontains=a1").Data); !slices.Equal(got, []string{"A1", "A1x"}) {
			t.Errorf("filtered: %v", got)
		}
		if got := codes(get("ordering=-" + r.Fields.Name).Data); !slices.Equal(got, []string{"B1", "B", "A2", "A1x", "A1", "A"}) {
			t.Errorf("ordered: %v", got)
		}
		if got := codes(get(r.Fields.Parent + "=" + itoa(ids["A"])).Data); !slices.Equal(got, []string{"A1", "A2"}) {
			t.Errorf("parent filter: %v", got)
		}
		// Walking next visits every descendant once, links keep the parameters.
		var seen []string
		next := "http://example.com" + base + "?page_size=4&ordering=" + r.Fields.Code
		for next != "" {
			u, _ := url.Parse(next)
			if !strings.HasSuffix(u.Path, "/descendants/") || u.Query().Get("ordering") != r.Fields.Code {
				t.Fatalf("link %s", next)
			}
			lb := r.decodeList(t, a.do(http.MethodGet, u.RequestURI(), nil))
			if lb.Count != 6 {
				t.Fatalf("count %d on a page, want 6", lb.Count)
			}
			seen = append(seen, codes(lb.Data)...)
			next = ""
			if lb.Next != nil {
				next = *lb.Next
			}
		}
		if !slices.Equal(seen, []string{"A", "A1", "A1x", "A2", "B", "B1"}) {
			t.Errorf("walked %v", seen)
		}
		wantError(t, a.do(http.MethodGet, base+"?page_size=4&page=3", nil), http.StatusNotFound)
		if lb := r.decodeList(t, a.do(http.MethodGet, base+"?ordering=nope", nil)); lb.Count != 6 {
			t.Errorf("an unknown ordering term: count %d, want 6", lb.Count)
		}
	})
}

func TestAncestors_RunFromTheRootDownToTheParent(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		for _, tc := range []struct {
			of   string
			want []string
		}{
			{"A1x", []string{"R1", "A", "A1"}},
			{"B", []string{"R1"}},
			{"R2", nil},
		} {
			lb := r.decodeList(t, a.do(http.MethodGet, r.item(ids[tc.of])+"ancestors/?page_size=1", nil))
			if got := codes(lb.Data); !slices.Equal(got, tc.want) || lb.Count != len(tc.want) || lb.Next != nil || lb.Previous != nil {
				t.Errorf("ancestors of %s: %v (count %d, next %v), want %v unpaged", tc.of, got, lb.Count, lb.Next, tc.want)
			}
		}
		wantError(t, a.do(http.MethodGet, r.item(999999)+"ancestors/", nil), http.StatusNotFound)
	})
}

// getTree fetches a tree and renders it as "A(B(C),D)" for comparison.
func getTree(t *testing.T, a *api, r res, query string) string {
	t.Helper()
	resp := a.do(http.MethodGet, r.coll()+"tree/?"+query, nil)
	if resp.Status != http.StatusOK {
		t.Fatalf("tree?%s: %s", query, resp)
	}
	var body struct {
		Code *int
		Msg  *string
		Data []map[string]json.RawMessage
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Code == nil || *body.Code != 0 || body.Msg == nil || *body.Msg != "" {
		t.Fatalf("tree envelope: %s", resp.Body)
	}
	var render func(nodes []map[string]json.RawMessage) string
	render = func(nodes []map[string]json.RawMessage) string {
		var parts []string
		for _, n := range nodes {
			var kids []map[string]json.RawMessage
			if err := json.Unmarshal(n["children"], &kids); err != nil || kids == nil {
				t.Fatalf("node without a children list: %v", n)
			}
			delete(n, "children")
			rec := r.fromMap(t, n)
			s := rec.Code
			if len(kids) > 0 {
				s += "(" + render(kids) + ")"
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ",")
	}
	return render(body.Data)
}

func TestTree_NestsTheForestOrARootToADepth(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		for _, tc := range []struct{ query, want string }{
			{"", "R1(A(A1(A1x),A2),B(B1)),R2(C)"},
			{"depth=0", "R1,R2"},
			{"depth=1", "R1(A,B),R2(C)"},
			{"root=" + itoa(ids["A"]), "A(A1(A1x),A2)"},
			{"root=" + itoa(ids["A"]) + "&depth=1", "A(A1,A2)"},
			{"root=" + itoa(ids["A1x"]), "A1x"},
			{"root=&depth=", "R1(A(A1(A1x),A2),B(B1)),R2(C)"},
		} {
			if got := getTree(t, a, r, tc.query); got != tc.want {
				t.Errorf("tree?%s = %s, want %s", tc.query, got, tc.want)
			}
		}
		wantError(t, a.do(http.MethodGet, r.coll()+"tree/?root=999999", nil), http.StatusNotFound)
		wantError(t, a.do(http.MethodGet, r.coll()+"tree/?root=x&depth=-1", nil), http.StatusBadRequest, "root", "", "depth", "")
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			resp := a.do(m, r.coll()+"tree/", `{}`)
			wantError(t, resp, http.StatusMethodNotAllowed)
			if resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
				t.Errorf("%s tree: Allow %q", m, resp.Header.Get("Allow"))
			}
		}
	})
}

func TestTree_OverTheNodeLimitIs400AskingForRootOrDepth(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		resp := a.do(http.MethodGet, r.coll()+"tree/", nil)
		wantError(t, resp, http.StatusBadRequest)
		if !strings.Contains(string(resp.Body), "root=") || !strings.Contains(string(resp.Body), "depth=") {
			t.Fatalf("the 400 does not say how to ask for less: %s", resp.Body)
		}
		if got := getTree(t, a, r, "root="+itoa(ids["A"])); got != "A(A1(A1x),A2)" {
			t.Fatalf("a subtree within the limit: %s", got)
		}
		if got := getTree(t, a, r, "depth=1"); got != "R1(A,B),R2(C)" {
			t.Fatalf("fewer levels within the limit: %s", got)
		}
	}, func(c *config.Config) { c.TreeNodeLimit = 5 })
}

func TestHierarchy_MovingASubtreeMovesEverythingBelowIt(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		if resp := a.do(http.MethodPatch, r.item(ids["A"]), map[string]any{r.Fields.Parent: ids["C"]}); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		if got := getTree(t, a, r, ""); got != "R1(B(B1)),R2(C(A(A1(A1x),A2)))" {
			t.Fatalf("tree after the move: %s", got)
		}
		if got := codes(a.list(r, "").Data); len(got) != 9 {
			t.Fatalf("records lost in the move: %v", got)
		}
		anc := r.decodeList(t, a.do(http.MethodGet, r.item(ids["A1x"])+"ancestors/", nil))
		if got := codes(anc.Data); !slices.Equal(got, []string{"R2", "C", "A", "A1"}) {
			t.Fatalf("ancestors after the move: %v", got)
		}
		desc := r.decodeList(t, a.do(http.MethodGet, r.item(ids["R1"])+"descendants/", nil))
		if got := codes(desc.Data); !slices.Equal(got, []string{"B", "B1"}) {
			t.Fatalf("descendants of the old root: %v", got)
		}
	})
}

func TestHierarchy_DeepChainsAreFollowedToTheEnd(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		const depth = 60
		var ids []int
		var parent any
		for i := 0; i < depth; i++ {
			id := a.create(r, fmt.Sprintf("L%02d", i), "level", parent)
			ids = append(ids, id)
			parent = id
		}
		anc := r.decodeList(t, a.do(http.MethodGet, r.item(ids[depth-1])+"ancestors/", nil))
		if anc.Count != depth-1 || anc.Data[0].ID != ids[0] || anc.Data[depth-2].ID != ids[depth-2] {
			t.Fatalf("ancestors of the deepest: count %d", anc.Count)
		}
		desc := r.decodeList(t, a.do(http.MethodGet, r.item(ids[0])+"descendants/?page_size=100", nil))
		if desc.Count != depth-1 {
			t.Fatalf("descendants of the top: count %d", desc.Count)
		}
		if got := getTree(t, a, r, "root="+itoa(ids[0])+"&depth=2"); got != "L00(L01(L02))" {
			t.Fatalf("tree to depth 2: %s", got)
		}
	})
}

// Descendants in id order with no filter take a shorter road (the ids of
// the subtree alone); paging through it must agree with the long one.
func TestDescendants_PagingInIDOrderVisitsEachOnce(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ids := forest(a, r)
		base := r.item(ids["R1"]) + "descendants/"
		for _, tc := range []struct {
			ordering string
			want     []string
		}{
			{"", []string{"A", "A1", "A1x", "A2", "B", "B1"}},
			{"-id", []string{"B1", "B", "A2", "A1x", "A1", "A"}},
		} {
			var seen []string
			next := "http://example.com" + base + "?page_size=4&ordering=" + tc.ordering
			for next != "" {
				u, _ := url.Parse(next)
				lb := r.decodeList(t, a.do(http.MethodGet, u.RequestURI(), nil))
				if lb.Count != 6 {
					t.Fatalf("ordering %q: count %d", tc.ordering, lb.Count)
				}
				seen = append(seen, codes(lb.Data)...)
				next = ""
				if lb.Next != nil {
					next = *lb.Next
				}
			}
			if !slices.Equal(seen, tc.want) {
				t.Errorf("ordering %q: walked %v, want %v", tc.ordering, seen, tc.want)
			}
		}
		last := r.decodeList(t, a.do(http.MethodGet, base+"?page_size=4&page=last", nil))
		if got := codes(last.Data); !slices.Equal(got, []string{"B", "B1"}) || last.Count != 6 {
			t.Errorf("page=last: %v (count %d)", got, last.Count)
		}
		wantError(t, a.do(http.MethodGet, base+"?page_size=4&page=3", nil), http.StatusNotFound)
	})
}

// The hierarchy queries follow MaxDepth levels: no write may make a chain
// deeper, so no answer is ever cut off.
func TestHierarchy_AChainDeeperThanTheBoundIsRefusedNamingTheParent(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		// Depths 0 .. MaxDepth-1, the deepest allowed.
		ids := deepChain(t, a, r, "D%04d", resource.MaxDepth)
		a = a.replica(t)
		deepest := ids[len(ids)-1]
		msg := fmt.Sprintf("This %s cannot be placed under %s %d: the hierarchy would be more than %d levels deep.", r.Name, r.Name, deepest, resource.MaxDepth)
		wantError(t, a.do(http.MethodPost, r.coll(), r.body("TOO-DEEP", "x", deepest)), http.StatusBadRequest, r.Fields.Parent, msg)
		loose := a.create(r, "LOOSE", "x", nil)
		wantError(t, a.do(http.MethodPatch, r.item(loose), map[string]any{r.Fields.Parent: deepest}), http.StatusBadRequest, r.Fields.Parent, msg)
		// A subtree of two levels fits under the one but last, not under the last.
		top := a.create(r, "TOP", "x", nil)
		a.create(r, "BELOW", "x", top)
		wantError(t, a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: ids[len(ids)-2]}), http.StatusBadRequest, r.Fields.Parent, "")
		if resp := a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: ids[len(ids)-3]}); resp.Status != http.StatusOK {
			t.Fatalf("a move within the bound: %s", resp)
		}
		// The deepest record's ancestors: every one of them, none cut off.
		below := r.decodeList(t, a.do(http.MethodGet, r.query(r.Fields.Code+"=BELOW"), nil)).Data[0].ID
		anc := r.decodeList(t, a.do(http.MethodGet, r.item(below)+"ancestors/", nil))
		want := append(ids[:len(ids)-2:len(ids)-2], top)
		var got []int
		for _, rec := range anc.Data {
			got = append(got, rec.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ancestors of the deepest record: %d of them, want all %d", len(got), len(want))
		}
	})
}

// deepChain stores a chain of n records of r (codes from format and their
// depth), each the parent of the next: loaded side by side and chained
// behind the service's back, which leaves the closure untrusted
// (building the closure of a chain a thousand deep would take half a
// million rows, minutes in SQLite under the race detector), so every
// check of it walks the table, as a replica does until a rebuild; ask
// through a.replica(t). It returns the ids, root first.
func deepChain(t *testing.T, a *api, r res, format string, n int) []int {
	t.Helper()
	ctx := context.Background()
	recs := make([]resource.NewRecord, n)
	for i := range recs {
		recs[i] = resource.NewRecord{Code: fmt.Sprintf(format, i), Name: "deep"}
	}
	ids, err := server.Loaders(a.db)[r.Name].Load(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	err = a.db.InTx(ctx, func(tx db.Tx) error {
		for i := 1; i < len(ids); i++ {
			s := a.db.SQL().Raw("UPDATE ").Ident(r.Table).Raw(" SET ").Ident(r.Fields.Parent + "_id").Raw(" = ").Arg(ids[i-1]).
				Raw(" WHERE ").Ident("id").Raw(" = ").Arg(ids[i])
			if _, err := tx.ExecContext(ctx, s.String(), s.Args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a.exec(a.db.SQL().Raw("UPDATE personnel_derived SET trusted = 0 WHERE table_name = ").Arg(r.Table).
		Raw(" AND structure = ").Arg(db.ClosureStructure))
	return ids
}
