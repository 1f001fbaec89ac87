package server_test

import (
	"net/http"
	"sync"
	"testing"
)

func TestUpdate_ReplacesCodeAndName(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "OLD", "Old name", nil)
		resp := a.do(http.MethodPut, r.item(id), r.body(" NEW ", "New name", omit))
		if resp.Status != http.StatusOK {
			t.Fatalf("put: %s", resp)
		}
		want := record{ID: id, Code: "NEW", Name: "New name", Extra: r.created()}
		if got := r.decodeRecord(t, resp.Body); !got.equal(want) {
			t.Fatalf("put answered %+v, want %+v", got, want)
		}
		if got := a.get(r, id); !got.equal(want) {
			t.Fatalf("stored %+v, want %+v", got, want)
		}
	})
}

func TestUpdate_RequiresCodeAndName(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "A", "A", nil)
		wantError(t, a.do(http.MethodPut, r.item(id), map[string]any{r.Fields.Name: "x"}), http.StatusBadRequest, r.Fields.Code, "This field is required.")
		wantError(t, a.do(http.MethodPut, r.item(id), map[string]any{r.Fields.Code: "x"}), http.StatusBadRequest, r.Fields.Name, "This field is required.")
		if got := a.get(r, id); got.Code != "A" {
			t.Fatalf("a refused PUT changed the record: %+v", got)
		}
	})
}

func TestUpdate_ParentOmittedIsKeptNullClearsIDSets(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		p1 := a.create(r, "P1", "P1", nil)
		p2 := a.create(r, "P2", "P2", nil)
		id := a.create(r, "C", "C", p1)
		put := func(parent any) record {
			t.Helper()
			resp := a.do(http.MethodPut, r.item(id), r.body("C", "C", parent))
			if resp.Status != http.StatusOK {
				t.Fatalf("put parent %v: %s", parent, resp)
			}
			return a.get(r, id)
		}
		if got := put(omit); !sameParent(got.Parent, &p1) {
			t.Fatalf("omitted parent: got %v, want %d kept", got.Parent, p1)
		}
		if got := put(p2); !sameParent(got.Parent, &p2) {
			t.Fatalf("parent id: got %v, want %d", got.Parent, p2)
		}
		if got := put(nil); got.Parent != nil {
			t.Fatalf("null parent: got %v, want cleared", *got.Parent)
		}
	})
}

func TestPatch_ChangesOnlyTheFieldsGiven(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		p := a.create(r, "P", "P", nil)
		id := a.create(r, "C", "Child", p)
		resp := a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "Renamed"})
		want := record{ID: id, Code: "C", Name: "Renamed", Parent: &p, Extra: r.created()}
		if got := r.decodeRecord(t, resp.Body); resp.Status != http.StatusOK || !got.equal(want) {
			t.Fatalf("patch: %s", resp)
		}
		resp = a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Parent: nil})
		if got := r.decodeRecord(t, resp.Body); got.Parent != nil || got.Name != "Renamed" {
			t.Fatalf("patch parent null: %s", resp)
		}
	})
}

func TestPatch_EmptyObjectChangesNothingAnd200(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "E", "Empty", nil)
		before := a.get(r, id)
		resp := a.do(http.MethodPatch, r.item(id), `{}`)
		if resp.Status != http.StatusOK || !r.decodeRecord(t, resp.Body).equal(before) {
			t.Fatalf("patch {}: %s", resp)
		}
		wantError(t, a.do(http.MethodPatch, r.item(999999), `{}`), http.StatusNotFound)
	})
}

func TestUpdate_ParentRules(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		top := a.create(r, "TOP", "Top", nil)
		mid := a.create(r, "MID", "Mid", top)
		low := a.create(r, "LOW", "Low", mid)
		for _, tc := range []struct {
			name   string
			id     int
			parent any
			msg    string
		}{
			{"itself", top, top, "This " + r.Name + " cannot be its own parent."},
			{"its child", top, mid, ""},
			{"its grandchild", top, low, ""},
			{"a missing record", mid, 999999, `Invalid pk "999999" - object does not exist.`},
			{"a digit string naming itself", mid, "2", ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.name == "a digit string naming itself" {
					tc.parent = itoa(mid)
				}
				before := a.get(r, tc.id)
				for _, m := range []string{http.MethodPut, http.MethodPatch} {
					resp := a.do(m, r.item(tc.id), r.body("NEWCODE", "New", tc.parent))
					wantError(t, resp, http.StatusBadRequest, r.Fields.Parent, tc.msg)
				}
				if after := a.get(r, tc.id); !after.equal(before) {
					t.Fatalf("a refused update changed the record: %+v -> %+v", before, after)
				}
			})
		}
		// Moving a subtree elsewhere is fine, and so is re-saving the same parent.
		other := a.create(r, "OTHER", "Other", nil)
		if resp := a.do(http.MethodPatch, r.item(mid), map[string]any{r.Fields.Parent: other}); resp.Status != http.StatusOK {
			t.Fatalf("move subtree: %s", resp)
		}
		if resp := a.do(http.MethodPatch, r.item(mid), map[string]any{r.Fields.Parent: other}); resp.Status != http.StatusOK {
			t.Fatalf("same parent again: %s", resp)
		}
		if resp := a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: low}); resp.Status != http.StatusOK {
			t.Fatalf("top under its former grandchild after the move: %s", resp)
		}
	})
}

func TestUpdate_DuplicateCodeIs400ButOwnCodeInOtherCaseIsFine(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "HR", "Human Resources", nil)
		id := a.create(r, "it", "IT", nil)
		wantError(t, a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Code: "hR"}), http.StatusBadRequest,
			r.Fields.Code, r.Name+" with this "+r.Fields.Code+" already exists.")
		resp := a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Code: "IT"})
		if resp.Status != http.StatusOK || r.decodeRecord(t, resp.Body).Code != "IT" {
			t.Fatalf("recasing its own code: %s", resp)
		}
	})
}

func TestPatch_ConcurrentPatchesOfDifferentFieldsBothTakeEffect(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		p := a.create(r, "PARENT", "Parent", nil)
		for round := 0; round < 10; round++ {
			id := a.create(r, "R"+itoa(round), "before", nil)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, body := range []map[string]any{
				{r.Fields.Name: "after"},
				{r.Fields.Parent: p},
				{r.Fields.Code: "S" + itoa(round)},
			} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					if resp := a.do(http.MethodPatch, r.item(id), body); resp.Status != http.StatusOK {
						t.Errorf("patch %v: %s", body, resp)
					}
				}()
			}
			close(start)
			wg.Wait()
			got := a.get(r, id)
			if got.Name != "after" || !sameParent(got.Parent, &p) || got.Code != "S"+itoa(round) {
				t.Fatalf("round %d: a concurrent patch was lost: %+v", round, got)
			}
		}
	})
}

func TestUpdate_ReportsATakenCodeAndABadParentTogether(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		a.create(r, "TAKEN", "Taken", nil)
		id := a.create(r, "MINE", "Mine", nil)
		resp := a.do(http.MethodPut, r.item(id), r.body("taken", "Mine", id))
		wantError(t, resp, http.StatusBadRequest,
			r.Fields.Code, r.Name+" with this "+r.Fields.Code+" already exists.",
			r.Fields.Parent, "This "+r.Name+" cannot be its own parent.")
	})
}
