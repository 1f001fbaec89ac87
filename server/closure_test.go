package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"

	"personnel/db"
	"personnel/resource"
	"personnel/server"
)

// tree is what a test knows of a hierarchy: each record's parent (0 for
// a root).
type tree map[int]int

func (tr tree) below(id int) []int {
	var ids []int
	for d := range tr {
		for cur := tr[d]; cur != 0; cur = tr[cur] {
			if cur == id {
				ids = append(ids, d)
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}

func (tr tree) above(id int) []int { // root first
	var ids []int
	for cur := tr[id]; cur != 0; cur = tr[cur] {
		ids = append([]int{cur}, ids...)
	}
	return ids
}

// checkHierarchy compares the closure with the table, and the descendants
// (page and count) and ancestors the API serves for a few records with
// what tr says.
func checkHierarchy(t *testing.T, a *api, r res, tr tree, rng *rand.Rand, when string) {
	t.Helper()
	if err := a.db.Check(context.Background()); err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	var ids []int
	for id := range tr {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for range 4 {
		id := ids[rng.IntN(len(ids))]
		want := tr.below(id)
		page := 1 + min(len(want)/5, 1) // the second page when there is one
		lb := r.decodeList(t, a.do(http.MethodGet, r.item(id)+fmt.Sprintf("descendants/?page_size=5&page=%d", page), nil))
		if lb.Count != len(want) {
			t.Fatalf("%s: descendants of %d count %d, want %d", when, id, lb.Count, len(want))
		}
		var got []int
		for _, rec := range lb.Data {
			got = append(got, rec.ID)
		}
		if want := want[min(5*(page-1), len(want)):min(5*page, len(want))]; !slices.Equal(got, want) {
			t.Fatalf("%s: descendants of %d page %d: %v, want %v", when, id, page, got, want)
		}
		resp := a.do(http.MethodGet, r.item(id)+"ancestors/", nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("%s: ancestors of %d: %s", when, id, resp)
		}
		got = got[:0]
		for _, rec := range r.decodeList(t, resp).Data {
			got = append(got, rec.ID)
		}
		if want := tr.above(id); !slices.Equal(got, want) {
			t.Fatalf("%s: ancestors of %d: %v, want %v", when, id, got, want)
		}
	}
}

// The closure is kept by every write: creates under random parents, moves
// of whole subtrees (to the top too), deletes of leaves and bulk loads;
// after each round it holds exactly each record's ancestors, and the
// hierarchy queries answer from it what the parents say.
func TestHierarchy_TheClosureFollowsEveryCreateMoveDeleteAndLoad(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		for _, s := range []string{db.ClosureStructure, db.CountStructure} {
			if !a.db.Trusted(context.Background(), r.Table, s) {
				t.Fatalf("the %s of a new table is not trusted", s)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		tr := tree{}
		pick := func() int {
			ids := make([]int, 0, len(tr))
			for id := range tr {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			return ids[rng.IntN(len(ids))]
		}
		n := 0
		for round := range 6 {
			for range 15 {
				n++
				var parent any
				p := 0
				if len(tr) > 0 && rng.IntN(5) > 0 {
					p = pick()
					parent = p
				}
				tr[a.create(r, fmt.Sprintf("C%03d", n), "c", parent)] = p
			}
			for range 8 {
				id, p := pick(), 0
				if rng.IntN(4) > 0 {
					p = pick()
				}
				if p == id || slices.Contains(tr.below(id), p) {
					continue // a cycle, refused elsewhere
				}
				var parent any
				if p != 0 {
					parent = p
				}
				if resp := a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Parent: parent}); resp.Status != http.StatusOK {
					t.Fatalf("move %d under %d: %s", id, p, resp)
				}
				tr[id] = p
			}
			for range 3 {
				id := pick()
				if len(tr.below(id)) > 0 {
					continue
				}
				if resp := a.do(http.MethodDelete, r.item(id), nil); resp.Status != http.StatusNoContent {
					t.Fatalf("delete %d: %s", id, resp)
				}
				delete(tr, id)
			}
			p := pick()
			var recs []resource.NewRecord
			for i := range 5 {
				recs = append(recs, resource.NewRecord{Code: fmt.Sprintf("L%d-%d", round, i), Name: "l", ParentID: &p})
			}
			ids, err := server.Loaders(a.db)[r.Name].Load(context.Background(), recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				tr[id] = p
			}
			checkHierarchy(t, a, r, tr, rng, fmt.Sprintf("round %d", round))
		}
	})
}

// Creates below the records of a subtree while the subtree moves back
// and forth, and moves of records within it: every record's closure rows
// are its ancestors after the move, whichever committed first. Without
// the move's locks on the subtree a create that read its parent's chain
// before the move committed kept the old ancestors.
func TestRace_CreatesAndMovesInAMovingSubtreeKeepTheClosureExact(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		rng := rand.New(rand.NewPCG(3, 4))
		left := a.create(r, "LEFT", "l", nil)
		right := a.create(r, "RIGHT", "r", nil)
		top := a.create(r, "TOP", "t", left)
		tr := tree{left: 0, right: 0, top: left}
		inside := []int{top}
		n := 0
		for round := range raceRounds {
			to := []int{left, right}[round%2]
			reqs := []func() *response{func() *response {
				return a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: to})
			}}
			codes := make([]string, 4)
			parents := make([]int, 4)
			for i := range codes {
				n++
				codes[i], parents[i] = fmt.Sprintf("N%03d", n), inside[rng.IntN(len(inside))]
				reqs = append(reqs, func() *response {
					return a.do(http.MethodPost, r.coll(), r.body(codes[i], "n", parents[i]))
				})
			}
			// A record within the subtree moved under another one there.
			mover, under := inside[rng.IntN(len(inside))], inside[rng.IntN(len(inside))]
			inner := mover != top && mover != under && !slices.Contains(tr.below(mover), under)
			if inner {
				reqs = append(reqs, func() *response {
					return a.do(http.MethodPatch, r.item(mover), map[string]any{r.Fields.Parent: under})
				})
			}
			st := concurrently(a, reqs...)
			if count(st, http.StatusOK)+count(st, http.StatusCreated) != len(st) {
				t.Fatalf("round %d: statuses %v", round, st)
			}
			tr[top] = to
			if inner {
				tr[mover] = under
			}
			for i := range codes {
				id := r.decodeList(t, a.do(http.MethodGet, r.query(r.Fields.Code+"="+codes[i]), nil)).Data[0].ID
				tr[id] = parents[i]
				inside = append(inside, id)
			}
			if err := a.db.Check(context.Background()); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		checkHierarchy(t, a, r, tr, rng, "at the end")
	})
}

// An upgrade: an earlier version created and moved records without a
// closure, and no state says it is whole. A replica of this version then
// answers hierarchy queries by walking the table; after personnel reindex
// from the closure (with its subtree counts), and every answer is right
// throughout.
func TestHierarchy_AClosureFromBeforeIsUsedOnlyOnceReindexed(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		top := a.create(r, "TOP", "t", nil)
		mid := a.create(r, "MID", "m", top)
		other := a.create(r, "OTHER", "o", nil)
		tr := tree{top: 0, mid: top, other: 0}
		// What the earlier version wrote: a record below mid, and mid
		// moved under other, neither reflected in the closure.
		insert := a.db.SQL().Raw("INSERT INTO ").Ident(r.Table).Raw(" (").Ident(r.Fields.Code).Raw(", ").Ident(r.Fields.Code + "_fold").
			Raw(", ").Ident(r.Fields.Name).Raw(", ").Ident(r.Fields.Name + "_fold").Raw(", ").Ident(r.Fields.Parent + "_id").
			Raw(") VALUES (").Arg("OLD").Raw(", ").Arg("old").Raw(", ").Arg("o").Raw(", ").Arg("o").Raw(", ").Arg(mid).Raw(")")
		a.exec(insert)
		old := r.decodeList(t, a.do(http.MethodGet, r.query(r.Fields.Code+"=OLD"), nil)).Data[0].ID
		tr[old] = mid
		a.exec(a.db.SQL().Raw("UPDATE ").Ident(r.Table).Raw(" SET ").Ident(r.Fields.Parent + "_id").Raw(" = ").Arg(other).
			Raw(" WHERE ").Ident("id").Raw(" = ").Arg(mid))
		tr[mid] = other
		a.exec(a.db.SQL().Raw("DELETE FROM ").Ident("personnel_derived").Raw(" WHERE ").Ident("table_name").Raw(" = ").Arg(r.Table))

		b := a.replica(t)
		d := b.db
		if d.Trusted(ctx, r.Table, db.ClosureStructure) {
			t.Fatal("after the start the closure is trusted")
		}
		check := func(when string) {
			t.Helper()
			for id, want := range map[int][]int{top: nil, other: {mid, old}, mid: {old}} {
				lb := r.decodeList(t, b.do(http.MethodGet, r.item(id)+"descendants/", nil))
				var got []int
				for _, rec := range lb.Data {
					got = append(got, rec.ID)
				}
				if !slices.Equal(got, want) || lb.Count != len(want) {
					t.Errorf("%s: descendants of %d: %v (count %d), want %v", when, id, got, lb.Count, want)
				}
			}
			resp := b.do(http.MethodGet, r.item(old)+"ancestors/", nil)
			var got []int
			for _, rec := range r.decodeList(t, resp).Data {
				got = append(got, rec.ID)
			}
			if want := tr.above(old); !slices.Equal(got, want) {
				t.Errorf("%s: ancestors of %d: %v, want %v", when, old, got, want)
			}
		}
		check("before the reindex")
		if err := d.Reindex(ctx, false, nil, nil); err != nil {
			t.Fatal(err)
		}
		if !d.Trusted(ctx, r.Table, db.ClosureStructure) {
			t.Fatal("the closure is not trusted after the reindex")
		}
		if err := d.Check(ctx); err != nil {
			t.Fatalf("after the reindex: %v", err)
		}
		check("after the reindex")
	})
}

// A reindex while creates, moves and deletes go on below the same
// records, the counts having drifted before it: every subtree count is
// exact at the end. The rebuild of the counts takes no lock (Rebuild in
// db/closure.go says why it needs none), so this is the test of that
// argument.
func TestRace_SubtreeCountsRebuiltWhileWritesGoOnEndExact(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		roots := []int{a.create(r, "R0", "r", nil), a.create(r, "R1", "r", nil), a.create(r, "R2", "r", nil)}
		var inner []int // children of the roots: moved between them, never a cycle
		for i := range 30 {
			inner = append(inner, a.create(r, fmt.Sprintf("I%02d", i), "i", roots[i%len(roots)]))
		}
		var recs []resource.NewRecord
		for i := range 2500 {
			recs = append(recs, resource.NewRecord{Code: fmt.Sprintf("L%04d", i), Name: "l", ParentID: &inner[i%len(inner)]})
		}
		if _, err := server.Loaders(a.db)[r.Name].Load(ctx, recs); err != nil {
			t.Fatal(err)
		}
		// Counts gone wrong, as after writes behind the service's back.
		a.exec(a.db.SQL().Raw("UPDATE ").Ident(db.SubtreeCountTable(r.Table)).Raw(" SET ").Ident("records").Raw(" = ").
			Ident("records").Raw(" + 3"))

		done := make(chan struct{})
		failures := make(chan string, 100)
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(7, uint64(w)))
				var mine []int
				for n := 0; ; n++ {
					select {
					case <-done:
						return
					default:
					}
					var resp *response
					want := http.StatusOK
					switch op := rng.IntN(4); {
					case op == 0 && len(mine) > 0:
						id := mine[len(mine)-1]
						mine, resp, want = mine[:len(mine)-1], a.do(http.MethodDelete, r.item(id), nil), http.StatusNoContent
					case op == 1:
						resp = a.do(http.MethodPatch, r.item(inner[rng.IntN(len(inner))]), map[string]any{r.Fields.Parent: roots[rng.IntN(len(roots))]})
					default:
						resp = a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("W%d-%d", w, n), "w", inner[rng.IntN(len(inner))]))
						want = http.StatusCreated
						if resp.Status == want {
							mine = append(mine, r.decodeRecord(t, resp.Body).ID)
						}
					}
					if resp.Status != want {
						failures <- resp.String()
						return
					}
				}
			}()
		}
		err := a.db.Reindex(ctx, true, nil, nil)
		close(done)
		wg.Wait()
		close(failures)
		for f := range failures {
			t.Errorf("a write during the reindex: %s", f)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := a.db.Check(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// personnel reindex rebuilds what is not trusted and keeps what is (every
// write of this version has kept it); with --all it rebuilds everything,
// which repairs a structure that writes behind the service's back broke.
func TestReindex_RebuildsWhatIsNotTrustedAndEverythingWithAll(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		top := a.create(r, "TOP", "t", nil)
		a.create(r, "LOW", "l", top)
		a.exec(a.db.SQL().Raw("UPDATE ").Ident(db.SubtreeCountTable(r.Table)).Raw(" SET ").Ident("records").Raw(" = ").
			Ident("records").Raw(" + 3"))
		a.exec(a.db.SQL().Raw("UPDATE ").Ident("personnel_derived").Raw(" SET ").Ident("trusted").Raw(" = 0 WHERE ").
			Ident("table_name").Raw(" = ").Arg(r.Table).Raw(" AND ").Ident("structure").Raw(" = ").Arg(db.CountStructure))
		reindex := func(all bool) map[string]bool {
			t.Helper()
			rebuilt := map[string]bool{}
			err := a.db.Reindex(ctx, all, nil, func(tb *db.Table, s db.Structure, rebuild bool) {
				if tb.Name == r.Table {
					rebuilt[s.Name()] = rebuild
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			return rebuilt
		}
		got := reindex(false)
		if !got[db.CountStructure] || got[db.ClosureStructure] {
			t.Fatalf("reindex rebuilt %v; want the counts (not trusted) and not the closure (trusted)", got)
		}
		if err := a.db.Check(ctx); err == nil {
			t.Fatal("the drifted subtree counts were mended by a reindex that was to keep them")
		}
		got = reindex(true)
		if !got[db.ClosureStructure] || !got[db.CountStructure] {
			t.Fatalf("reindex --all rebuilt %v; want everything", got)
		}
		if err := a.db.Check(ctx); err != nil {
			t.Fatalf("after reindex --all: %v", err)
		}
	})
}
