package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

func TestETag_ChangesWhenTheRecordChanges(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "E", "Tagged", nil)
		first := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag")
		if first == "" || first[0] != '"' {
			t.Fatalf("ETag %q is not a strong tag", first)
		}
		if again := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag"); again != first {
			t.Fatalf("ETag of an unchanged record changed: %s -> %s", first, again)
		}
		if same := a.do(http.MethodPatch, r.item(id), `{}`).Header.Get("ETag"); same != first {
			t.Fatalf("a PATCH that changes nothing changed the ETag")
		}
		patched := a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "Retagged"}).Header.Get("ETag")
		if patched == first || patched != a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag") {
			t.Fatalf("ETag after an update %s (before %s) disagrees with a read", patched, first)
		}
	})
}

func TestIfMatch_AStaleTagIs412AndChangesNothing(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "S", "Shared", nil)
		tag := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag") // both editors read this
		// The first editor saves, with the tag it read.
		if resp := a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "First"}, "If-Match", tag); resp.Status != http.StatusOK {
			t.Fatalf("first save: %s", resp)
		}
		// The second editor's tag is stale now, whatever the method.
		wantError(t, a.do(http.MethodPut, r.item(id), r.body("S", "Second", omit), "If-Match", tag), http.StatusPreconditionFailed)
		wantError(t, a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "Second"}, "If-Match", tag), http.StatusPreconditionFailed)
		wantError(t, a.do(http.MethodDelete, r.item(id), nil, "If-Match", tag), http.StatusPreconditionFailed)
		if got := a.get(r, id); got.Name != "First" {
			t.Fatalf("a refused write changed the record: %+v", got)
		}
		current := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag")
		if resp := a.do(http.MethodDelete, r.item(id), nil, "If-Match", current); resp.Status != http.StatusNoContent {
			t.Fatalf("delete with the current tag: %s", resp)
		}
	})
}

func TestIfMatch_StarListsAndWeakTags(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "T", "Tags", nil)
		tag := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag")
		for _, tc := range []struct {
			ifMatch string
			status  int
		}{
			{"*", http.StatusOK},
			{`"stale", ` + tag, http.StatusOK},
			{"W/" + tag, http.StatusPreconditionFailed}, // If-Match compares strongly
			{`"stale"`, http.StatusPreconditionFailed},
		} {
			resp := a.do(http.MethodPatch, r.item(id), `{}`, "If-Match", tc.ifMatch)
			if resp.Status != tc.status {
				t.Errorf("If-Match %s: %s, want %d", tc.ifMatch, resp, tc.status)
			}
		}
		wantError(t, a.do(http.MethodPatch, r.item(999999), `{}`, "If-Match", "*"), http.StatusNotFound)
	})
}

// Concurrent writes that all hold the same tag: the check runs inside each
// write's transaction, so exactly one wins.
func TestIfMatch_ConcurrentWritesWithOneTagLetExactlyOneThrough(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for round := 0; round < 5; round++ {
			id := a.create(r, fmt.Sprintf("RACE%d", round), "start", nil)
			tag := a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag")
			var reqs []func() *response
			for i := 0; i < 6; i++ {
				name := fmt.Sprintf("writer %d", i)
				reqs = append(reqs, func() *response {
					return a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: name}, "If-Match", tag)
				})
			}
			st := concurrently(a, reqs...)
			if count(st, 200) != 1 || count(st, 412) != len(st)-1 {
				t.Fatalf("round %d: statuses %v, want one 200 and the rest 412", round, st)
			}
		}
	})
}
