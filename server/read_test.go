package server_test

import (
	"net/http"
	"testing"
)

func TestRead_ReturnsRecordWithETag(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		parent := a.create(r, "P", "Parent", nil)
		id := a.create(r, "C", "Child", parent)
		resp := a.do(http.MethodGet, r.item(id), nil)
		if resp.Status != http.StatusOK || resp.Header.Get("ETag") == "" {
			t.Fatalf("read: %s (ETag %q)", resp, resp.Header.Get("ETag"))
		}
		rec := r.decodeRecord(t, resp.Body)
		if !rec.equal(record{ID: id, Code: "C", Name: "Child", Parent: &parent, Extra: r.created()}) {
			t.Fatalf("read %+v", rec)
		}
	})
}

func TestRead_UnknownOrNonNumericIDIs404(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "X", "X", nil)
		for _, id := range []string{"999999", "0", "-1", "abc", "1.0", "1e3", "%201", "99999999999999999999999"} {
			resp := a.do(http.MethodGet, r.coll()+id+"/", nil)
			wantError(t, resp, http.StatusNotFound)
			for _, m := range []string{http.MethodPut, http.MethodPatch} {
				wantError(t, a.do(m, r.coll()+id+"/", r.body("Y", "Y", omit)), http.StatusNotFound)
			}
			wantError(t, a.do(http.MethodDelete, r.coll()+id+"/", nil), http.StatusNotFound)
		}
	})
}

func TestUpdate_MissingRecordIs404EvenWithABadBody(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, m := range []string{http.MethodPut, http.MethodPatch} {
			wantError(t, a.do(m, r.item(999999), `{"`+r.Fields.Code+`": 5}`), http.StatusNotFound)
			wantError(t, a.do(m, r.item(999999), `not json`), http.StatusNotFound)
			wantError(t, a.do(m, r.item(999999), `{}`, "Content-Type", "text/plain"), http.StatusNotFound)
		}
	})
}
