package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/seed"
	"personnel/server"
)

// auditEntry is an audit entry as the API renders it.
type auditEntry struct {
	ID    int64  `json:"id"`
	At    string `json:"at"`
	Actor *struct {
		ID       int    `json:"id"`
		Username string `json:"username"`
		CLI      string `json:"cli"`
	} `json:"actor"`
	RequestID *string                       `json:"request_id"`
	Resource  string                        `json:"resource"`
	RecordID  int64                         `json:"record_id"`
	Action    string                        `json:"action"`
	Changes   map[string][2]json.RawMessage `json:"changes"`
}

// audit reads the audit entries q selects, newest first.
func (a *api) audit(q string) []auditEntry {
	a.t.Helper()
	resp := a.do(http.MethodGet, server.APIRoot+"/audit/?page_size=1000&"+q, nil)
	if resp.Status != http.StatusOK {
		a.t.Fatalf("audit: %s", resp)
	}
	var body struct {
		Count int          `json:"count"`
		Data  []auditEntry `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		a.t.Fatal(err)
	}
	return body.Data
}

// Every way of writing leaves exactly one entry per record it changes (a
// create, a PUT, a PATCH, a delete, the seed command's load), in its own
// transaction: who, which request, what, and only the fields that
// changed. A refused write, and a PUT that changes nothing, leave none.
func TestAudit_EveryWayOfWritingLeavesOneEntryPerChangedRecord(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		q := "resource=" + r.Name
		count := func() int { return len(a.audit(q)) }
		start := count()
		resp := a.do(http.MethodPost, r.coll(), r.body("AUD", "Audited", nil), "X-Request-ID", "req-create-1")
		if resp.Status != http.StatusCreated {
			t.Fatalf("create: %s", resp)
		}
		id := r.decodeRecord(t, resp.Body).ID
		entries := a.audit(q)
		if len(entries) != start+1 {
			t.Fatalf("%d entries after a create, want %d", len(entries), start+1)
		}
		e := entries[0]
		if e.Action != "create" || e.RecordID != int64(id) || e.Actor == nil || e.Actor.Username != testUser || e.Actor.ID == 0 ||
			e.RequestID == nil || *e.RequestID != "req-create-1" {
			t.Fatalf("create entry %+v", e)
		}
		if got := e.Changes[r.Fields.Code]; string(got[0]) != "null" || string(got[1]) != `"AUD"` {
			t.Fatalf("create entry's code is %s, want [null, \"AUD\"]", got)
		}
		if _, err := time.Parse(time.RFC3339Nano, e.At); err != nil || len(e.At) != len("2006-01-02T15:04:05.000000Z") {
			t.Fatalf("at %q is not RFC 3339 in UTC to the microsecond", e.At)
		}

		// A PUT that changes the name lists the name alone.
		a.do(http.MethodPut, r.item(id), map[string]any{r.Fields.Code: "AUD", r.Fields.Name: "Renamed"})
		e = a.audit(q)[0]
		if e.Action != "update" || len(e.Changes) != 1 || string(e.Changes[r.Fields.Name][0]) != `"Audited"` || string(e.Changes[r.Fields.Name][1]) != `"Renamed"` {
			t.Fatalf("update entry %+v", e)
		}
		// A PUT that changes nothing writes nothing; a refused write neither.
		a.do(http.MethodPut, r.item(id), map[string]any{r.Fields.Code: "AUD", r.Fields.Name: "Renamed"})
		wantError(t, a.do(http.MethodPost, r.coll(), r.body("aud", "dup", nil)), http.StatusBadRequest)
		wantError(t, a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "x"}, "If-Match", `"stale"`), http.StatusPreconditionFailed)
		if r.Hierarchical() {
			child := a.create(r, "AUD-CHILD", "c", id)
			wantError(t, a.do(http.MethodDelete, r.item(id), nil), http.StatusConflict)
			a.do(http.MethodDelete, r.item(child), nil)
			start += 2
		}
		if n := count(); n != start+2 {
			t.Fatalf("%d entries after writes that changed nothing or were refused, want %d", n, start+2)
		}
		a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Name: "Patched"})
		if resp := a.do(http.MethodDelete, r.item(id), nil); resp.Status != http.StatusNoContent {
			t.Fatalf("delete: %s", resp)
		}
		e = a.audit(q)[0]
		if e.Action != "delete" || e.RecordID != int64(id) || string(e.Changes[r.Fields.Name][0]) != `"Patched"` || string(e.Changes[r.Fields.Name][1]) != "null" {
			t.Fatalf("delete entry %+v", e)
		}
		if n := count(); n != start+4 {
			t.Fatalf("%d entries, want %d", n, start+4)
		}
		// The history of the record, deleted, is still there, newest first.
		resp = a.do(http.MethodGet, r.item(id)+"history/", nil)
		var h struct {
			Count int          `json:"count"`
			Data  []auditEntry `json:"data"`
		}
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &h) != nil || h.Count != 4 || h.Data[0].Action != "delete" || h.Data[3].Action != "create" {
			t.Fatalf("history: %s", resp)
		}

		// The seed command's bulk load: one entry per record, by the command.
		l := server.Loaders(a.db)[r.Name]
		ctx := cliContext("seed")
		if err := l.BulkLoad(ctx, func() error {
			return seed.Fill(ctx, l, seed.Options{Count: 5, Seed: 9, First: 500})
		}); err != nil {
			t.Fatal(err)
		}
		seeded := a.audit(q + "&action=create")
		var byCLI int
		for _, e := range seeded {
			if e.Actor != nil && e.Actor.CLI == "seed" {
				byCLI++
			}
		}
		if byCLI != 5 {
			t.Fatalf("%d entries by the seed command, want 5", byCLI)
		}
	})
}

// Nobody writes the audit trail through the API, and only editors read it
// (viewers too when PERSONNEL_AUDIT_VIEWERS is true).
func TestAudit_NobodyWritesItAndViewersReadItOnlyWhenAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(fmt.Sprint("viewers allowed ", allowed), func(t *testing.T) {
			forEach(t, func(t *testing.T, a *api, r res) {
				id := a.create(r, "A1", "a", nil)
				for _, path := range []string{server.APIRoot + "/audit/", r.item(id) + "history/"} {
					for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
						wantError(t, a.do(m, path, map[string]any{"action": "create"}), http.StatusMethodNotAllowed)
					}
				}
				a.addUser("vera-"+r.Name, auth.RoleViewer, testPassword)
				viewer := *a
				viewer.token = a.login("vera-"+r.Name, testPassword)
				for _, path := range []string{server.APIRoot + "/audit/", r.item(id) + "history/"} {
					resp := viewer.do(http.MethodGet, path, nil)
					if allowed && resp.Status != http.StatusOK {
						t.Fatalf("a viewer, allowed, reading %s: %s", path, resp)
					}
					if !allowed {
						wantError(t, resp, http.StatusForbidden)
					}
				}
			}, func(c *config.Config) { c.AuditViewers = allowed })
		})
	}
}

// The audit list's filters select entries, and a malformed one is a 400
// naming it.
func TestAudit_FiltersSelectEntriesAndMalformedOnesAre400(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		before := time.Now().UTC().Add(-time.Second)
		x := a.create(r, "FX", "x", nil)
		y := a.create(r, "FY", "y", nil)
		a.do(http.MethodPatch, r.item(x), map[string]any{r.Fields.Name: "x2"}, "X-Request-ID", "req-filter-x")
		for q, want := range map[string]int{
			fmt.Sprintf("resource=%s&record_id=%d", r.Name, x):                                                             2,
			fmt.Sprintf("resource=%s&record_id=%d&action=update", r.Name, x):                                               1,
			fmt.Sprintf("resource=%s&action=create&record_id=%d", r.Name, y):                                               1,
			"request_id=req-filter-x&resource=" + r.Name:                                                                   1,
			fmt.Sprintf("resource=%s&actor=%s&record_id=%d", r.Name, testUser, y):                                          1,
			fmt.Sprintf("resource=%s&actor=nobody&record_id=%d", r.Name, y):                                                0,
			fmt.Sprintf("resource=%s&record_id=%d&at_gte=%s", r.Name, y, url.QueryEscape(before.Format(time.RFC3339Nano))): 1,
			fmt.Sprintf("resource=%s&record_id=%d&at_lte=%s", r.Name, y, url.QueryEscape(before.Format(time.RFC3339Nano))): 0,
		} {
			if got := len(a.audit(q)); got != want {
				t.Errorf("%s: %d entries, want %d", q, got, want)
			}
		}
		for _, q := range []string{"record_id=abc", "action=rename", "at_gte=yesterday", "resource=nothing"} {
			wantError(t, a.do(http.MethodGet, server.APIRoot+"/audit/?"+q, nil), http.StatusBadRequest)
		}
	})
}

// PERSONNEL_AUDIT_RETENTION prunes the entries older than it, and no
// other.
func TestAudit_PruningDeletesEntriesOlderThanTheRetention(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		old := a.create(r, "OLD", "o", nil)
		a.create(r, "NEW", "n", nil)
		a.exec(a.db.SQL().Raw("UPDATE personnel_audit SET at = ").Arg(time.Now().Add(-48 * time.Hour).UnixMicro()).
			Raw(" WHERE resource = ").Arg(r.Name).Raw(" AND record_id = ").Arg(old))
		n, err := a.db.PruneAudit(context.Background(), 24*time.Hour)
		if err != nil || n < 1 {
			t.Fatalf("pruned %d (%v), want at least 1", n, err)
		}
		if left := a.audit("resource=" + r.Name + fmt.Sprintf("&record_id=%d", old)); len(left) != 0 {
			t.Fatalf("%d entries of the old record left", len(left))
		}
		if left := a.audit("resource=" + r.Name + "&action=create"); len(left) != 1 {
			t.Fatalf("%d recent entries left, want 1", len(left))
		}
	})
}

// cliContext is the context of a command of the command line.
func cliContext(command string) context.Context {
	return db.WithActor(context.Background(), db.Actor{Command: command})
}
