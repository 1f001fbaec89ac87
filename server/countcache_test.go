package server_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// searchCounts are the searches whose counts a replica keeps, each by
// another path of the planner: a word the substring index counts alone, a
// phrase longer than its grams (counted through the index, then checked),
// and two searches together.
func searchCounts(r res) map[string]string {
	n, c := r.Fields.Name+"_icontains=", r.Fields.Code+"_icontains="
	return map[string]string{
		"word":   n + "zebrafish",
		"phrase": n + url.QueryEscape("zebrafish garden unit"),
		"both":   n + "zebrafish&" + c + "zg",
	}
}

// A count kept by one replica must follow every write, whichever replica
// made it: creates, renames into and out of the search, deletes.
func TestList_SearchCountsFollowEveryWriteOfEveryReplica(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		b := a.replica(t)
		first := a.create(r, "ZG0", "Zebrafish Garden Unit 0", nil)
		for i := 1; i < 12; i++ {
			a.create(r, fmt.Sprintf("ZG%d", i), fmt.Sprintf("Zebrafish Garden Unit %d", i), nil)
		}
		other := a.create(r, "OTHER-1", "Koala House", nil)
		want := 12
		check := func(step string) {
			t.Helper()
			for k, replica := range []*api{a, b, a, b} { // each twice: the second from what it kept
				for name, q := range searchCounts(r) {
					lb := replica.list(r, q+"&page_size=5")
					if lb.Count != want {
						t.Fatalf("%s: %s counted %d by replica %d, want %d", step, name, lb.Count, k%2, want)
					}
				}
			}
		}
		check("before any write")

		id := b.create(r, "ZG-NEW", "Zebrafish Garden Unit New", nil)
		want++
		check("after a create by the other replica")

		if resp := a.do(http.MethodPatch, r.item(first), map[string]any{r.Fields.Name: "Walrus Pool"}); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		want--
		check("after a rename out of the search")

		if resp := b.do(http.MethodPatch, r.item(other), map[string]any{r.Fields.Name: "Zebrafish Garden Unit Koala", r.Fields.Code: "ZG-OTHER"}); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		want++
		check("after a rename into the search")

		if resp := a.do(http.MethodDelete, r.item(id), nil); resp.Status != http.StatusNoContent {
			t.Fatal(resp)
		}
		want--
		check("after a delete")
	})
}

// The counts are kept, not counted again: a record deleted behind the
// service's back (no change number moves) leaves the kept counts as they
// were, until the change number moves.
func TestList_SearchCountsAreKeptUntilTheTableChanges(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		var last int
		for i := range 12 {
			last = a.create(r, fmt.Sprintf("ZG%d", i), fmt.Sprintf("Zebrafish Garden Unit %d", i), nil)
		}
		counts := func(step string, want int) {
			t.Helper()
			for name, q := range searchCounts(r) {
				if lb := a.list(r, q+"&page_size=5"); lb.Count != want {
					t.Fatalf("%s: %s counted %d, want %d", step, name, lb.Count, want)
				}
			}
		}
		counts("counted", 12)
		a.exec(a.db.SQL().Raw("DELETE FROM ").Ident(r.Table).Raw(" WHERE ").Ident("id").Raw(" = ").Arg(last))
		counts("kept, though a record went behind the service's back", 12)
		// The repair for writes behind the service's back: the rebuild
		// moves the change number on, so nothing kept is used again.
		if err := a.db.Reindex(t.Context(), true, nil, nil); err != nil {
			t.Fatal(err)
		}
		counts("after a reindex", 11)
		a.create(r, "OTHER-1", "Koala House", nil)
		counts("after a write that does not match", 11)
		a.create(r, "ZG-NEW", "Zebrafish Garden Unit New", nil)
		counts("after a write that does", 12)
	})
}
