package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"personnel/db"
)

// addToSlots changes the stored count of r's table behind the service's
// back, in a slot no write uses.
func addToSlots(t *testing.T, a *api, r res, delta int) {
	t.Helper()
	a.exec(a.db.SQL().Raw("INSERT INTO personnel_count_slot (table_name, slot, records) VALUES (").Arg(r.Table).
		Raw(", 99, ").Arg(delta).Raw(")"))
}

// recount runs what `personnel recount` runs.
func recount(t *testing.T, a *api) {
	t.Helper()
	err := a.db.Reindex(context.Background(), true, func(s db.Structure) bool { return s.Name() == db.CountStructure }, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func TestCounts_ConcurrentCreatesAndDeletesKeepTheStoredCountExact(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		var ids []int
		for i := range 20 {
			ids = append(ids, a.create(r, fmt.Sprintf("DEL%02d", i), "x", nil))
		}
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i < 20 {
					a.do(http.MethodDelete, r.item(ids[i]), nil)
				} else {
					a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("NEW%02d", i), "x", nil))
				}
			}()
		}
		wg.Wait()
		n, ok, err := a.db.Table(r.Resource).StoredCount(context.Background())
		if err != nil || !ok || n != 20 {
			t.Fatalf("stored count %d (trusted %v, %v), want 20", n, ok, err)
		}
		if lb := a.list(r, ""); lb.Count != 20 {
			t.Fatalf("list count %d, want 20", lb.Count)
		}
	})
}

func TestCounts_UnfilteredListsUseTheStoredCountAndRecountMendsIt(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for i := range 12 {
			a.create(r, fmt.Sprintf("C%02d", i), "x", nil)
		}
		addToSlots(t, a, r, 5) // as if something wrote the table behind the service's back
		if lb := a.list(r, ""); lb.Count != 17 {
			t.Fatalf("list count %d: the unfiltered list did not use the stored count (want the tampered 17)", lb.Count)
		}
		if lb := a.list(r, r.Fields.Name+"=x"); lb.Count != 12 {
			t.Fatalf("filtered list count %d, want 12 counted", lb.Count)
		}
		recount(t, a)
		if lb := a.list(r, ""); lb.Count != 12 {
			t.Fatalf("list count %d after a recount, want it mended to 12", lb.Count)
		}
	})
}

func TestCounts_AnUntrustedCountIsCountedUntilRecount(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for i := range 12 {
			a.create(r, fmt.Sprintf("C%02d", i), "x", nil)
		}
		// An upgrade: the counts are not known to be whole.
		a.exec(a.db.SQL().Raw("UPDATE personnel_derived SET trusted = 0 WHERE table_name = ").Arg(r.Table).
			Raw(" AND structure = ").Arg(db.CountStructure))
		b := a.replica(t)
		if _, ok, _ := b.db.Table(r.Resource).StoredCount(context.Background()); ok {
			t.Fatal("an untrusted count is used")
		}
		addToSlots(t, a, r, 5)
		if lb := b.list(r, ""); lb.Count != 12 {
			t.Fatalf("list count %d, want 12 counted while the stored count is not trusted", lb.Count)
		}
		recount(t, b)
		if n, ok, err := b.db.Table(r.Resource).StoredCount(context.Background()); !ok || n != 12 || err != nil {
			t.Fatalf("after recount: %d, trusted %v, %v", n, ok, err)
		}
	})
}
