package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// A JSON array POSTed to a collection creates every element, in order
// (201 with the created records), parents given by id.
func TestBulkCreate_CreatesEveryElementInOrder(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		var parent any
		if r.Hierarchical() {
			parent = a.create(r, "BULK-P", "Parent", nil)
		}
		resp := a.do(http.MethodPost, r.coll(), []any{r.body("BULK-1", "One", parent), r.body("BULK-2", "Two", nil)})
		if resp.Status != http.StatusCreated {
			t.Fatalf("bulk create: %s", resp)
		}
		var got []json.RawMessage
		if err := json.Unmarshal(resp.Body, &got); err != nil || len(got) != 2 {
			t.Fatalf("answer %s", resp.Body)
		}
		first, second := r.decodeRecord(t, got[0]), r.decodeRecord(t, got[1])
		if first.Code != "BULK-1" || second.Code != "BULK-2" || second.ID <= first.ID {
			t.Fatalf("created %+v %+v", first, second)
		}
		if r.Hierarchical() && (first.Parent == nil || *first.Parent != parent.(int)) {
			t.Fatalf("parent %v, want %v", first.Parent, parent)
		}
		if !a.get(r, first.ID).equal(first) {
			t.Fatal("the answer is not what was stored")
		}
	})
}

// A bad element creates none, and the 400 lists one object per element:
// {} for a valid one, the field errors of a bad one.
func TestBulkCreate_ABadElementCreatesNoneAndErrorsAlignWithElements(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "BULK-TAKEN", "Taken", nil)
		before := a.list(r, "").Count
		resp := a.do(http.MethodPost, r.coll(), []any{
			r.body("BULK-OK", "Fine", nil),
			r.body("BULK-X", "", nil),
			r.body("bulk-taken", "Taken again", nil),
			"not an object",
		})
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("bulk create: %s", resp)
		}
		var body struct {
			Errors []map[string][]string `json:"errors"`
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil || len(body.Errors) != 4 {
			t.Fatalf("errors are not a list of 4: %s", resp.Body)
		}
		if len(body.Errors[0]) != 0 || body.Errors[1][r.Fields.Name][0] != "This field is required." ||
			len(body.Errors[3]["non_field_errors"]) != 1 {
			t.Fatalf("errors %v", body.Errors)
		}
		if after := a.list(r, "").Count; after != before {
			t.Fatalf("%d records after a refused bulk create, %d before", after, before)
		}
		// A code taken by a record is found once every element decodes.
		resp = a.do(http.MethodPost, r.coll(), []any{r.body("BULK-OK", "Fine", nil), r.body("bulk-taken", "Taken again", nil)})
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("bulk create of a taken code: %s", resp)
		}
		if err := json.Unmarshal(resp.Body, &body); err != nil || len(body.Errors) != 2 || len(body.Errors[0]) != 0 || len(body.Errors[1][r.Fields.Code]) != 1 {
			t.Fatalf("errors %s", resp.Body)
		}
		if after := a.list(r, "").Count; after != before {
			t.Fatalf("%d records after a refused bulk create, %d before", after, before)
		}
	})
}
