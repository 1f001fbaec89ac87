package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"personnel/db/dbtest"
	"personnel/server"
)

// forEachCountingBackend runs fn on every backend where the service keeps
// record counts itself (all but SQLite, whose triggers keep them).
func forEachCountingBackend(t *testing.T, fn func(t *testing.T, a *api, r res)) {
	t.Parallel()
	ran := false
	for _, b := range dbtest.Backends(t) {
		if b.Name == "sqlite" {
			continue
		}
		ran = true
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, b)
			fn(t, a, res{server.CompiledResources()[0]})
		})
	}
	if !ran {
		t.Skip("no backend here keeps counts by the service; set PERSONNEL_TEST_MYSQL_DSN")
	}
}

// addToSlots changes the stored count of r's table behind the service's
// back.
func addToSlots(t *testing.T, a *api, r res, delta int) {
	t.Helper()
	_, err := a.db.Write().ExecContext(context.Background(),
		fmt.Sprintf("UPDATE personnel_count_slot SET records = records + %d WHERE table_name = '%s' AND slot = 0", delta, r.Table))
	if err != nil {
		t.Fatal(err)
	}
}

func TestCounts_ConcurrentCreatesAndDeletesKeepTheStoredCountExact(t *testing.T) {
	forEachCountingBackend(t, func(t *testing.T, a *api, r res) {
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
		n, ok, err := a.db.StoredCount(context.Background(), r.Table)
		if err != nil || !ok || n != 20 {
			t.Fatalf("stored count %d (trusted %v, %v), want 20", n, ok, err)
		}
		if lb := a.list(r, ""); lb.Count != 20 {
			t.Fatalf("list count %d, want 20", lb.Count)
		}
	})
}

func TestCounts_UnfilteredListsUseTheStoredCountAndEveryStartMendsIt(t *testing.T) {
	forEachCountingBackend(t, func(t *testing.T, a *api, r res) {
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
		if err := a.db.Migrate(context.Background()); err != nil { // what every start does
			t.Fatal(err)
		}
		if lb := a.list(r, ""); lb.Count != 12 {
			t.Fatalf("list count %d after a start, want it mended to 12", lb.Count)
		}
	})
}

func TestCounts_ATableFromBeforeCountsIsCountedUntilRecount(t *testing.T) {
	forEachCountingBackend(t, func(t *testing.T, a *api, r res) {
		for i := range 12 {
			a.create(r, fmt.Sprintf("C%02d", i), "x", nil)
		}
		// An upgrade: the table holds records, and no slots exist yet.
		if _, err := a.db.Write().ExecContext(context.Background(), "DELETE FROM personnel_count_slot"); err != nil {
			t.Fatal(err)
		}
		if err := a.db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := a.db.StoredCount(context.Background(), r.Table); ok {
			t.Fatal("a count made for a table that existed before is trusted before personnel recount")
		}
		addToSlots(t, a, r, 5)
		if lb := a.list(r, ""); lb.Count != 12 {
			t.Fatalf("list count %d, want 12 counted while the stored count is not trusted", lb.Count)
		}
		if err := a.db.Recount(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, ok, err := a.db.StoredCount(context.Background(), r.Table); !ok || n != 12 || err != nil {
			t.Fatalf("after recount: %d, trusted %v, %v", n, ok, err)
		}
	})
}
