package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// childrenCounts lists with children_count=true and returns each record's
// count by id, checking that every record carries one.
func (a *api) childrenCounts(r res, path, q string) map[int]int {
	a.t.Helper()
	resp := a.do(http.MethodGet, path+"?"+q, nil)
	if resp.Status != http.StatusOK {
		a.t.Fatalf("%s?%s: %s", path, q, resp)
	}
	var page struct {
		Data []map[string]json.RawMessage
	}
	if err := json.Unmarshal(resp.Body, &page); err != nil {
		a.t.Fatal(err)
	}
	counts := map[int]int{}
	for _, m := range page.Data {
		raw, ok := m["children_count"]
		if !ok {
			a.t.Fatalf("a record without children_count: %v", m)
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			a.t.Fatalf("children_count %s: %v", raw, err)
		}
		delete(m, "children_count")
		rec := r.fromMap(a.t, m) // the record's own fields, exactly
		counts[rec.ID] = n
	}
	return counts
}

func TestList_ChildrenCountGivesEachRecordsNumberOfChildren(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "R", "Root", nil)
		other := a.create(r, "O", "Other root", nil)
		mid := a.create(r, "M", "Middle", root)
		a.create(r, "M2", "Middle two", root)
		for i, code := range []string{"L1", "L2", "L3"} {
			a.create(r, code, "Leaf "+itoa(i), mid)
		}
		want := map[int]int{root: 2, other: 0}
		if got := a.childrenCounts(r, r.coll(), r.Fields.Parent+"_isnull=true&children_count=true"); !equalCounts(got, want) {
			t.Errorf("roots: %v, want %v", got, want)
		}
		// Grandchildren do not count, whatever the page's length.
		for size := 1; size <= 3; size++ {
			got := a.childrenCounts(r, r.coll(), r.Fields.Parent+"="+itoa(root)+"&children_count=True&ordering=id&page_size="+itoa(size))
			if got[mid] != 3 || len(got) != min(size, 2) {
				t.Errorf("page_size %d: %v, want %d with 3", size, got, mid)
			}
		}
		got := a.childrenCounts(r, r.coll(), "children_count=1&page_size=100")
		if len(got) != 7 || got[root] != 2 || got[mid] != 3 || got[other] != 0 {
			t.Errorf("every record: %v", got)
		}
		if got := a.childrenCounts(r, r.item(root)+"descendants/", "children_count=true"); len(got) != 5 || got[mid] != 3 {
			t.Errorf("descendants of the root: %v", got)
		}
	})
}

func TestList_ChildrenCountLeftOutOrFalseChangesNothing(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "R", "Root", nil)
		a.create(r, "C", "Child", root)
		for _, q := range []string{"", "children_count=", "children_count=false", "children_count=0"} {
			a.list(r, q) // decodes each record insisting on exactly its fields
		}
	})
}

func TestList_ChildrenCountMalformedIs400(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		wantError(t, a.do(http.MethodGet, r.query("children_count=yes"), nil), http.StatusBadRequest, "children_count", `Enter "true" or "false".`)
	})
}

func equalCounts(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
