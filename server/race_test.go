package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// concurrently runs each request at the same moment and returns the
// statuses in the order given.
func concurrently(a *api, reqs ...func() *response) []int {
	statuses := make([]int, len(reqs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, req := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = req().Status
		}()
	}
	close(start)
	wg.Wait()
	return statuses
}

// walkUp follows parents from id and fails the test on a cycle.
func walkUp(t *testing.T, a *api, r res, id int) {
	t.Helper()
	seen := map[int]bool{}
	for cur := id; ; {
		if seen[cur] {
			t.Fatalf("cycle through %d", cur)
		}
		seen[cur] = true
		rec := a.get(r, cur)
		if rec.Parent == nil {
			return
		}
		cur = *rec.Parent
	}
}

const raceRounds = 15

func TestRace_ConcurrentMovesNeverCloseACycle(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		move := func(id, parent int) func() *response {
			return func() *response {
				return a.do(http.MethodPatch, r.item(id), map[string]any{r.Fields.Parent: parent})
			}
		}
		for round := 0; round < raceRounds; round++ {
			// Two records, each moved under the other.
			x := a.create(r, fmt.Sprintf("X%d", round), "x", nil)
			y := a.create(r, fmt.Sprintf("Y%d", round), "y", nil)
			st := concurrently(a, move(x, y), move(y, x))
			if ok := count(st, 200); ok != 1 || count(st, 400) != 1 {
				t.Fatalf("round %d: statuses %v, want one 200 and one 400", round, st)
			}
			walkUp(t, a, r, x)
			walkUp(t, a, r, y)

			// Three records in a ring: at most two of the moves may succeed.
			p := a.create(r, fmt.Sprintf("P%d", round), "p", nil)
			q := a.create(r, fmt.Sprintf("Q%d", round), "q", nil)
			s := a.create(r, fmt.Sprintf("S%d", round), "s", nil)
			st = concurrently(a, move(p, q), move(q, s), move(s, p))
			if ok := count(st, 200); ok != 2 || count(st, 400) != 1 {
				t.Fatalf("round %d: ring statuses %v, want two 200 and one 400", round, st)
			}
			for _, id := range []int{p, q, s} {
				walkUp(t, a, r, id)
			}
		}
	})
}

func TestRace_DeleteOfAParentRacingCreateOfItsChildLeavesNoOrphan(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		outcomes := map[string]int{}
		for round := 0; round < raceRounds; round++ {
			p := a.create(r, fmt.Sprintf("PARENT%d", round), "parent", nil)
			var child int
			st := concurrently(a,
				func() *response { return a.do(http.MethodDelete, r.item(p), nil) },
				func() *response {
					resp := a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("CHILD%d", round), "child", p))
					if resp.Status == http.StatusCreated {
						child = r.decodeRecord(t, resp.Body).ID
					}
					return resp
				},
			)
			switch {
			case st[0] == 204 && st[1] == 400: // the delete won; the create saw no parent
			case st[0] == 409 && st[1] == 201: // the create won; the delete saw a child
				if got := a.get(r, child); !sameParent(got.Parent, &p) {
					t.Fatalf("round %d: child %+v", round, got)
				}
				a.get(r, p)
			default:
				t.Fatalf("round %d: delete %d, create %d; want 204/400 or 409/201", round, st[0], st[1])
			}
			outcomes[fmt.Sprint(st)]++
		}
		t.Logf("outcomes over %d rounds: %v", raceRounds, outcomes)
	})
}

func TestRace_ConcurrentCreatesOfOneCodeGiveExactlyOne201(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for round := 0; round < raceRounds; round++ {
			var reqs []func() *response
			for i, variant := range []string{"dup", "DUP", "Dup", "dUp", "duP", "DUp", "dUP", "DuP"} {
				code := fmt.Sprintf("%s-%d", variant, round)
				name := fmt.Sprintf("attempt %d", i)
				reqs = append(reqs, func() *response { return a.do(http.MethodPost, r.coll(), r.body(code, name, nil)) })
			}
			st := concurrently(a, reqs...)
			if count(st, 201) != 1 || count(st, 400) != len(st)-1 {
				t.Fatalf("round %d: statuses %v, want one 201 and the rest 400", round, st)
			}
			lb := a.list(r, r.Fields.Code+"_icontains="+fmt.Sprintf("dup-%d", round))
			if lb.Count != 1 || !strings.EqualFold(lb.Data[0].Code, fmt.Sprintf("dup-%d", round)) {
				t.Fatalf("round %d: stored %+v", round, lb.Data)
			}
		}
	})
}

func count(statuses []int, status int) int {
	n := 0
	for _, s := range statuses {
		if s == status {
			n++
		}
	}
	return n
}
