package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"personnel/db"
	"personnel/db/dbtest"
	store "personnel/record"
	"personnel/seed"
	"personnel/server"
)

// feedPage is one answer of a change feed.
type feedPage struct {
	Cursor  string `json:"cursor"`
	More    bool   `json:"more"`
	Changes []struct {
		Op     string          `json:"op"`
		ID     int             `json:"id"`
		Record json.RawMessage `json:"record"`
	} `json:"changes"`
}

// changes reads a page of r's feed after cursor.
func (a *api) changes(r res, cursor, extra string) feedPage {
	a.t.Helper()
	q := "limit=50" + extra
	if cursor != "" {
		q += "&cursor=" + url.QueryEscape(cursor)
	}
	resp := a.do(http.MethodGet, r.coll()+"changes/?"+q, nil)
	if resp.Status != http.StatusOK {
		a.t.Fatalf("changes: %s", resp)
	}
	var p feedPage
	if err := json.Unmarshal(resp.Body, &p); err != nil {
		a.t.Fatal(err)
	}
	return p
}

// mirror is what a consumer of a feed keeps: each record's JSON by id.
type mirror map[int]string

// apply applies a page of changes.
func (m mirror) apply(p feedPage) {
	for _, c := range p.Changes {
		if c.Op == "delete" {
			delete(m, c.ID)
		} else {
			m[c.ID] = string(c.Record)
		}
	}
}

// table reads every record of r as the list renders it.
func (a *api) table(r res) mirror {
	a.t.Helper()
	m := mirror{}
	for page := 1; ; page++ {
		resp := a.do(http.MethodGet, r.query(fmt.Sprintf("page_size=1000&page=%d", page)), nil)
		var body struct {
			Next *string           `json:"next"`
			Data []json.RawMessage `json:"data"`
		}
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil {
			a.t.Fatalf("list: %s", resp)
		}
		for _, raw := range body.Data {
			var rec struct{ ID int }
			json.Unmarshal(raw, &rec)
			m[rec.ID] = string(raw)
		}
		if body.Next == nil {
			return m
		}
	}
}

// dawdler is a keeper that holds some writes open a little after
// everything else they write, so that transactions commit in another
// order than they wrote their feed entries: the case a feed numbered
// before commit gets wrong.
type dawdler struct{ n atomic.Int64 }

func (d *dawdler) wait() {
	if k := d.n.Add(1); k%3 == 0 {
		time.Sleep(time.Duration(k%7) * 5 * time.Millisecond)
	}
}

func (d *dawdler) Inserted(context.Context, *db.Write, []store.Row) error { d.wait(); return nil }
func (d *dawdler) Updated(context.Context, *db.Write, []db.Change) error  { d.wait(); return nil }
func (d *dawdler) Deleting(context.Context, *db.Write, []store.Row) error { d.wait(); return nil }

// A consumer that follows the feed from no cursor, with short waits,
// while several writers create, rename, move and delete at once (some of
// them committing late), ends with exactly the table: no change is
// skipped, however the writers' transactions interleave and commit.
func TestFeed_AConsumerFollowingTheFeedWhileWritersWriteEndsWithTheTable(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			cfg := b.Config(t)
			d := dbtest.MustOpen(t, cfg)
			d.Keep(func(*db.Table) db.Keeper { return &dawdler{} })
			a := newAPIOn(t, b, cfg, d)
			for _, desc := range server.CompiledResources() {
				t.Run(desc.Name, func(t *testing.T) {
					a := *a
					a.t = t
					followTheFeedWhileWritersWrite(t, &a, res{a.withTargets(desc)})
				})
			}
		})
	}
}

func followTheFeedWhileWritersWrite(t *testing.T, a *api, r res) {
	{
		var mu sync.Mutex
		var ids []int
		for i := range 10 {
			ids = append(ids, a.create(r, fmt.Sprintf("F%03d", i), "f", nil))
		}
		pick := func(rng *rand.Rand) int {
			mu.Lock()
			defer mu.Unlock()
			return ids[rng.IntN(len(ids))]
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 11))
				for n := 0; n < 30; n++ {
					switch rng.IntN(5) {
					case 0, 1:
						var parent any
						if r.Hierarchical() && rng.IntN(2) == 0 {
							parent = pick(rng)
						}
						resp := a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("W%d-%d", w, n), "w", parent))
						if resp.Status == http.StatusCreated {
							mu.Lock()
							ids = append(ids, r.decodeRecord(t, resp.Body).ID)
							mu.Unlock()
						}
					case 2:
						a.do(http.MethodPatch, r.item(pick(rng)), map[string]any{r.Fields.Name: fmt.Sprintf("renamed %d-%d", w, n)})
					case 3:
						if r.Hierarchical() {
							var parent any
							if rng.IntN(3) > 0 {
								parent = pick(rng)
							}
							a.do(http.MethodPatch, r.item(pick(rng)), map[string]any{r.Fields.Parent: parent})
						}
					case 4:
						a.do(http.MethodDelete, r.item(pick(rng)), nil)
					}
				}
			}()
		}
		m := mirror{}
		cursor := ""
		done := make(chan struct{})
		go func() {
			wg.Wait()
			stop.Store(true)
			close(done)
		}()
		for {
			finished := stop.Load()
			p := a.changes(r, cursor, "&wait=1")
			m.apply(p)
			cursor = p.Cursor
			if finished && !p.More && len(p.Changes) == 0 {
				break
			}
		}
		<-done
		want := a.table(r)
		if len(m) != len(want) {
			t.Fatalf("the consumer has %d records, the table %d", len(m), len(want))
		}
		for id, rec := range want {
			if m[id] != rec {
				t.Fatalf("record %d: the consumer has %s, the table %s", id, m[id], rec)
			}
		}
		if err := a.db.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// A list answer carries the feed's cursor from before the page was read:
// reading every page and then following the feed from it misses nothing.
// A cursor that is not one of the feed's (malformed, edited, another
// resource's) is a 400; one older than what the feed keeps, a 410.
func TestFeed_ListsCarryACursorAndForeignOrStaleCursorsAreRefused(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "L1", "l", nil)
		resp := a.do(http.MethodGet, r.coll(), nil)
		cursor := resp.Header.Get("X-Changes-Cursor")
		if cursor == "" {
			t.Fatal("a list answer has no X-Changes-Cursor")
		}
		m := a.table(r)
		a.create(r, "L2", "l", nil)
		// The feed from the cursor holds what changed after it (and may
		// repeat what the list showed already, which applies as a no-op).
		p := a.changes(r, cursor, "")
		m.apply(p)
		if want := a.table(r); !maps.Equal(m, want) {
			t.Fatalf("the list, then the feed from its cursor: %v, want %v", m, want)
		}
		for _, bad := range []string{"nonsense", cursor + "x", p.Cursor[:len(p.Cursor)-2]} {
			wantError(t, a.do(http.MethodGet, r.coll()+"changes/?cursor="+url.QueryEscape(bad), nil), http.StatusBadRequest, "cursor")
		}
		// Another resource's cursor.
		for _, other := range server.CompiledResources() {
			if other.Name != r.Name {
				resp := a.do(http.MethodGet, res{other}.coll(), nil)
				wantError(t, a.do(http.MethodGet, r.coll()+"changes/?cursor="+url.QueryEscape(resp.Header.Get("X-Changes-Cursor")), nil), http.StatusBadRequest, "cursor")
			}
		}
		// Deletions pruned: cursors before them may have missed one.
		gone := a.create(r, "L3", "l", nil)
		a.do(http.MethodDelete, r.item(gone), nil)
		after := a.changes(r, "", "&limit=1000").Cursor
		a.exec(a.db.SQL().Raw("UPDATE personnel_change SET at = ").Arg(time.Now().Add(-10 * 24 * time.Hour).UnixMilli()).
			Raw(" WHERE table_name = ").Arg(r.Table))
		if _, err := a.db.PruneChanges(t.Context(), 7*24*time.Hour); err != nil {
			t.Fatal(err)
		}
		wantError(t, a.do(http.MethodGet, r.coll()+"changes/?cursor="+url.QueryEscape(cursor), nil), http.StatusGone)
		// From no cursor the pruned feed still gives every record there is.
		m = mirror{}
		for c := ""; ; {
			p := a.changes(r, c, "")
			m.apply(p)
			c = p.Cursor
			if !p.More {
				break
			}
		}
		if want := a.table(r); len(m) != len(want) {
			t.Fatalf("from no cursor after pruning: %d records, the table %d", len(m), len(want))
		}
		if p := a.changes(r, after, ""); len(p.Changes) != 0 {
			t.Fatalf("after the last change: %+v", p)
		}
	})
}

// A read with wait holds until a change commits, on any replica, and
// wakes then, well before its wait ends.
func TestFeed_AWaitingReadWakesWhenAnotherReplicaWrites(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		b := a.replica(t)
		start := b.changes(r, "", "&limit=1000").Cursor
		got := make(chan feedPage, 1)
		began := time.Now()
		go func() { got <- b.changes(r, start, "&wait=30") }()
		time.Sleep(300 * time.Millisecond)
		id := a.create(r, "WAKE", "w", nil)
		p := <-got
		if len(p.Changes) != 1 || p.Changes[0].ID != id {
			t.Fatalf("the waiting read answered %+v after %s, want the change of %d", p, time.Since(began).Round(time.Millisecond), id)
		}
		t.Logf("woke %s after the write", time.Since(began)-300*time.Millisecond)
	})
}

// A bulk load leaves more unnumbered entries than the sequencer numbers
// in one transaction: the next read numbers them all, in the order they
// were written, before the entries written after them.
func TestFeed_ABulkLoadIsNumberedInOrderBeforeLaterWrites(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		if r.Name != "department" {
			return // the sequencer is one for every table
		}
		first := a.create(r, "BEFORE", "before", nil)
		l := server.Loaders(a.db)[r.Name]
		ctx := cliContext("seed")
		const n = 10_001 // two transactions of the sequencer and one more entry
		if err := l.BulkLoad(ctx, func() error {
			return seed.Fill(ctx, l, seed.Options{Count: n, Seed: 3, First: 10})
		}); err != nil {
			t.Fatal(err)
		}
		last := a.create(r, "AFTER", "after", nil)
		var order []int
		m := mirror{}
		cursor := ""
		for {
			p := a.changes(r, cursor, "&limit=1000")
			m.apply(p)
			for _, c := range p.Changes {
				order = append(order, c.ID)
			}
			cursor = p.Cursor
			if !p.More {
				break
			}
		}
		if len(order) != n+2 || order[0] != first || order[len(order)-1] != last {
			t.Fatalf("%d changes, first %d, last %d; want %d, %d first, %d last", len(order), order[0], order[len(order)-1], n+2, first, last)
		}
		if want := a.table(r); !maps.Equal(m, want) {
			t.Fatalf("the consumer has %d records, the table %d", len(m), len(want))
		}
	})
}
