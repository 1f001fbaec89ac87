package server_test

import (
	"net/http"
	"testing"
)

func TestDelete_Returns204AndTheRecordIsGone(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "GONE", "Gone", nil)
		resp := a.do(http.MethodDelete, r.item(id), nil)
		if resp.Status != http.StatusNoContent || len(resp.Body) != 0 {
			t.Fatalf("delete: %s", resp)
		}
		wantError(t, a.do(http.MethodGet, r.item(id), nil), http.StatusNotFound)
		wantError(t, a.do(http.MethodDelete, r.item(id), nil), http.StatusNotFound)
	})
}

func TestDelete_OfAParentIs409AndChangesNothing(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		p := a.create(r, "P", "Parent", nil)
		c := a.create(r, "C", "Child", p)
		wantError(t, a.do(http.MethodDelete, r.item(p), nil), http.StatusConflict)
		if got := a.get(r, c); !sameParent(got.Parent, &p) {
			t.Fatalf("child changed: %+v", got)
		}
		a.get(r, p)
		// Once the child is gone the parent can go.
		if resp := a.do(http.MethodDelete, r.item(c), nil); resp.Status != http.StatusNoContent {
			t.Fatal(resp)
		}
		if resp := a.do(http.MethodDelete, r.item(p), nil); resp.Status != http.StatusNoContent {
			t.Fatal(resp)
		}
	})
}
