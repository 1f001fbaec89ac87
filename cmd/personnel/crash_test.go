package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"personnel/casefold"
	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/server"
)

// record is what the ledger knows of one record.
type record struct {
	name      string
	parent    string // code of the parent, "" for a root
	deleted   bool
	uncertain bool // an operation on it was in flight when the server died
}

// ledger keeps every write the server acknowledged.
type ledger struct {
	mu sync.Mutex
	m  map[string]*record // by code
}

// client talks to one running server.
type client struct {
	base, token string
	http        *http.Client
}

func (c *client) call(ctx context.Context, method, path string, body any) (int, map[string]any, error) {
	var rd *bytes.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	req.Header.Set("Authorization", "JWT "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}

// writer owns the records it creates, so their histories are sequential:
// the ledger holds, for each, the state of the last acknowledged write.
func writer(ctx context.Context, c *client, l *ledger, w, round int) {
	rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
	ids := map[string]int{} // code -> id, of this writer's live records
	var mine []string
	const api = "/personnel/api/departments/"
	for i := 0; ctx.Err() == nil; i++ {
		op := rng.IntN(10)
		switch {
		case op < 5 || len(mine) < 3: // create
			code := fmt.Sprintf("W%d-R%d-%d", w, round, i)
			rec := &record{name: "created " + code}
			body := map[string]any{"dept_code": code, "dept_name": rec.name}
			if len(mine) > 0 && rng.IntN(2) == 0 {
				rec.parent = mine[rng.IntN(len(mine))]
				body["parent_dept"] = ids[rec.parent]
			}
			l.mu.Lock()
			rec.uncertain = true
			l.m[code] = rec
			l.mu.Unlock()
			status, resp, err := c.call(ctx, http.MethodPost, api, body)
			if err != nil {
				return // in flight when the server died: stays uncertain
			}
			l.mu.Lock()
			if status == http.StatusCreated {
				rec.uncertain = false
				ids[code] = int(resp["id"].(float64))
				mine = append(mine, code)
			} else {
				delete(l.m, code)
			}
			l.mu.Unlock()
		case op < 7: // rename
			code := mine[rng.IntN(len(mine))]
			name := fmt.Sprintf("renamed %d/%d", round, i)
			l.mu.Lock()
			rec := l.m[code]
			rec.uncertain = true
			l.mu.Unlock()
			status, _, err := c.call(ctx, http.MethodPatch, fmt.Sprintf("%s%d/", api, ids[code]), map[string]any{"dept_name": name})
			if err != nil {
				return
			}
			l.mu.Lock()
			if status == http.StatusOK {
				rec.name = name
			}
			rec.uncertain = false
			l.mu.Unlock()
		case op < 9: // move under another of this writer's records, or to the top
			code := mine[rng.IntN(len(mine))]
			target := mine[rng.IntN(len(mine))]
			var parent any
			if rng.IntN(3) > 0 {
				parent = ids[target]
			}
			l.mu.Lock()
			rec := l.m[code]
			rec.uncertain = true
			l.mu.Unlock()
			status, _, err := c.call(ctx, http.MethodPatch, fmt.Sprintf("%s%d/", api, ids[code]), map[string]any{"parent_dept": parent})
			if err != nil {
				return
			}
			l.mu.Lock()
			if status == http.StatusOK {
				rec.parent = ""
				if parent != nil {
					rec.parent = target
				}
			}
			rec.uncertain = false
			l.mu.Unlock()
		default: // delete a record with no children
			code := mine[rng.IntN(len(mine))]
			l.mu.Lock()
			busy := false
			for _, other := range l.m {
				if other.parent == code && !other.deleted {
					busy = true
				}
			}
			rec := l.m[code]
			if !busy {
				rec.uncertain = true
			}
			l.mu.Unlock()
			if busy {
				continue
			}
			status, _, err := c.call(ctx, http.MethodDelete, fmt.Sprintf("%s%d/", api, ids[code]), nil)
			if err != nil {
				return
			}
			l.mu.Lock()
			if status == http.StatusNoContent {
				rec.deleted = true
				delete(ids, code)
				mine = removeString(mine, code)
			}
			rec.uncertain = false
			l.mu.Unlock()
		}
	}
}

func removeString(s []string, v string) []string {
	for i, x := range s {
		if x == v {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// stored lists every department through the API: code -> (id, name, parent id).
func stored(t *testing.T, c *client) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for page := 1; ; page++ {
		status, body, err := c.call(context.Background(), http.MethodGet, fmt.Sprintf("/personnel/api/departments/?page_size=1000&page=%d", page), nil)
		if err != nil || status != http.StatusOK {
			t.Fatalf("listing after the crash: %d %v", status, err)
		}
		for _, item := range body["data"].([]any) {
			rec := item.(map[string]any)
			out[rec["dept_code"].(string)] = rec
		}
		if body["next"] == nil {
			return out
		}
	}
}

// TestCrash_AcknowledgedWritesSurviveKill9 drives concurrent writes at the
// real binary, kills it with SIGKILL at a random moment, restarts it, and
// checks that every write it acknowledged is there and every invariant
// holds, over several rounds on one database.
func TestCrash_AcknowledgedWritesSurviveKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server several times")
	}
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			env := []string{"PERSONNEL_DB_DRIVER=" + cfg.DBDriver, "PERSONNEL_DB_DSN=" + cfg.DBDSN,
				"PERSONNEL_JWT_SECRET=" + string(cfg.JWTSecret)}
			l := &ledger{m: map[string]*record{}}
			var acknowledged int
			for round := 0; round < 4; round++ {
				s := start(t, env...)
				c := &client{base: "http://" + s.addr, token: s.login(t), http: &http.Client{Timeout: 10 * time.Second}}
				if round > 0 {
					check(t, l, c)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				for w := 0; w < 8; w++ {
					wg.Add(1)
					go func() { defer wg.Done(); writer(ctx, c, l, w, round) }()
				}
				time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
				s.cmd.Process.Kill() // SIGKILL: no shutdown, no flush
				<-s.done
				cancel()
				wg.Wait()
			}
			s := start(t, env...)
			c := &client{base: "http://" + s.addr, token: s.login(t), http: &http.Client{Timeout: 10 * time.Second}}
			acknowledged = check(t, l, c)
			s.cmd.Process.Signal(os.Interrupt)
			<-s.done
			checkDerived(t, cfg)
			t.Logf("%d acknowledged records checked after 4 crashes", acknowledged)
		})
	}
}

// check compares what is stored with the ledger and the invariants, and
// returns how many records were certain.
func check(t *testing.T, l *ledger, c *client) int {
	t.Helper()
	got := stored(t, c)
	byID := map[int]string{}
	folded := map[string]string{}
	for code, rec := range got {
		byID[int(rec["id"].(float64))] = code
		if other, dup := folded[casefold.Fold(code)]; dup {
			t.Fatalf("codes %q and %q are the same ignoring case", code, other)
		}
		folded[casefold.Fold(code)] = code
	}
	for code, rec := range got { // no orphan, no cycle
		seen := map[string]bool{}
		for cur := rec; cur["parent_dept"] != nil; {
			parent, ok := byID[int(cur["parent_dept"].(float64))]
			if !ok {
				t.Fatalf("%s has a parent that does not exist", code)
			}
			if seen[parent] {
				t.Fatalf("cycle through %s", parent)
			}
			seen[parent] = true
			cur = got[parent]
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	certain := 0
	for code, want := range l.m {
		if want.uncertain {
			continue
		}
		certain++
		have, ok := got[code]
		switch {
		case want.deleted && ok:
			t.Fatalf("%s was deleted (acknowledged) but is back", code)
		case want.deleted:
		case !ok:
			t.Fatalf("%s was created (acknowledged) but is gone", code)
		case have["dept_name"] != want.name:
			t.Fatalf("%s: name %q, acknowledged %q", code, have["dept_name"], want.name)
		default:
			parent := ""
			if have["parent_dept"] != nil {
				parent = byID[int(have["parent_dept"].(float64))]
			}
			if parent != want.parent {
				t.Fatalf("%s: parent %q, acknowledged %q", code, parent, want.parent)
			}
		}
	}
	// What was in flight has settled one way or the other.
	for _, rec := range l.m {
		rec.uncertain = false
	}
	for code, rec := range l.m {
		have, ok := got[code]
		if !ok {
			rec.deleted = true
			continue
		}
		rec.deleted = false
		rec.name = have["dept_name"].(string)
		rec.parent = ""
		if have["parent_dept"] != nil {
			rec.parent = byID[int(have["parent_dept"].(float64))]
		}
	}
	return certain
}

// checkDerived checks that every structure kept beside every table agrees
// with its table: the substring indexes, the closures with their subtree
// counts, and the record, block and change counts.
func checkDerived(t *testing.T, cfg *config.Config) {
	t.Helper()
	d, err := db.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	server.Loaders(d) // registers every compiled resource's table
	if err := d.Check(context.Background()); err != nil {
		t.Fatalf("a structure disagrees with its table: %v", err)
	}
}
