package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/resource"
	"personnel/server"

	"github.com/go-sql-driver/mysql"
)

// A move that would rewrite more closure rows than PERSONNEL_MOVE_LIMIT
// is refused up front with a 400 that says how many records it would move,
// and changes nothing; a smaller one completes.
func TestMove_LargerThanTheLimitIsRefusedSayingHowManyRecordsWouldMove(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		top := a.create(r, "A", "a", nil)
		for i := range 6 {
			a.create(r, fmt.Sprintf("A%d", i), "a", top)
		}
		b := a.create(r, "B", "b", nil)
		c := a.create(r, "C", "c", b)
		// 7 records join 2 ancestors: 14 rows.
		if resp := a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: c}); resp.Status != http.StatusOK {
			t.Fatalf("a move within the limit: %s", resp)
		}
		d3 := a.create(r, "D3", "d", a.create(r, "D2", "d", a.create(r, "D1", "d", nil)))
		// 7 records leave 2 ancestors and join 3: 35 rows.
		resp := a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: d3})
		wantError(t, resp, http.StatusBadRequest, r.Fields.Parent,
			fmt.Sprintf("This move would move 7 %s records at once (rewriting 35 rows of the hierarchy, more than the limit of 20); move some of the records below it first.", r.Name))
		if p := a.get(r, top).Parent; p == nil || *p != c {
			t.Fatalf("after a refused move the parent is %v, want %d", p, c)
		}
		if err := a.db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}, func(c *config.Config) { c.MoveLimit = 20 })
}

// The deep chain of the write-path review on SQLite (998 levels with a
// thousand leaves below them, 1.5 million closure rows if linked): moving
// its top once held the one writer for seconds and every other write and
// login got 503. Its move is now refused up front (the table was written
// behind the service's back, so the closure is untrusted and the move
// counts the rows walking the subtree), and the heaviest move the limit
// allows (a subtree of 1,100 records below 100 levels) runs while other
// writes and logins go on: none of them gets a 503 (how long they wait
// is measured by BenchmarkWriteDuringHeavyMove, not asserted here).
func TestSQLite_TheHeaviestMoveLeavesOtherWritesAndLoginsServed(t *testing.T) {
	be := dbtest.Backends(t)[0]
	a := newAPI(t, be)
	r := res{firstTree(t)}
	ctx := context.Background()
	l := server.Loaders(a.db)[r.Name]

	// The review's shape, behind the service's back.
	chain := chainBehindTheBack(t, a, r, 998)
	for i := range 1000 {
		a.exec(a.db.SQL().Raw("INSERT INTO ").Ident(r.Table).Raw(" (").Ident(r.Fields.Code).Raw(", ").Ident(r.Fields.Code + "_fold").
			Raw(", ").Ident(r.Fields.Name).Raw(", ").Ident(r.Fields.Name + "_fold").Raw(", ").Ident(r.Fields.Parent + "_id").
			Raw(") VALUES (").Arg(fmt.Sprintf("LEAF%04d", i)).Raw(", ").Arg(fmt.Sprintf("leaf%04d", i)).Raw(", 'l', 'l', ").Arg(chain[len(chain)-1]).Raw(")"))
	}
	untrust(a, r)
	b := a.replica(t)
	other := b.create(r, "OTHER", "o", nil)
	start := time.Now()
	resp := b.do(http.MethodPatch, r.item(chain[0]), map[string]any{r.Fields.Parent: other})
	wantError(t, resp, http.StatusBadRequest, r.Fields.Parent, "")
	if time.Since(start) > 5*time.Second {
		t.Logf("the refusal took %s", time.Since(start))
	}

	// The heaviest move the limit allows, on a trusted closure.
	a = newAPI(t, be)
	top := a.create(r, "TOP", "t", nil)
	var leaves []resource.NewRecord
	for i := range 1099 {
		leaves = append(leaves, resource.NewRecord{Code: fmt.Sprintf("S%04d", i), Name: "s", ParentID: &top})
	}
	if _, err := l.Load(ctx, leaves); err != nil {
		t.Fatal(err)
	}
	parent := 0
	for i := range 100 {
		var p any
		if parent != 0 {
			p = parent
		}
		parent = a.create(r, "DEEP"+strconv.Itoa(i), "d", p)
	}
	var wg sync.WaitGroup
	statuses := make(chan string, 64)
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp := a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: parent})
		statuses <- "move " + strconv.Itoa(resp.Status)
	}()
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp := a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("W%02d", i), "w", nil))
			statuses <- "create " + strconv.Itoa(resp.Status)
		}()
	}
	// Logins one after another, as people log in (a flood of them is
	// bounded on its own: TestLogin_ConcurrentHashingIsBounded...).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 5 {
			resp := a.do(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": testUser, "password": testPassword}, "Authorization", "")
			statuses <- "login " + strconv.Itoa(resp.Status)
		}
	}()
	wg.Wait()
	close(statuses)
	for st := range statuses {
		switch st {
		case "move 200", "create 201", "login 200":
		default:
			t.Errorf("during the heaviest move: %s", st)
		}
	}
	if err := a.db.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// chainBehindTheBack writes n records of r, each the child of the one
// before, straight into the table, and returns their ids from the top.
func chainBehindTheBack(t *testing.T, a *api, r res, n int) []int {
	t.Helper()
	ids := make([]int, 0, n)
	for i := range n {
		s := a.db.SQL().Raw("INSERT INTO ").Ident(r.Table).Raw(" (").Ident(r.Fields.Code).Raw(", ").Ident(r.Fields.Code + "_fold").
			Raw(", ").Ident(r.Fields.Name).Raw(", ").Ident(r.Fields.Name + "_fold").Raw(", ").Ident(r.Fields.Parent + "_id").
			Raw(") VALUES (").Arg(fmt.Sprintf("CHAIN%04d", i)).Raw(", ").Arg(fmt.Sprintf("chain%04d", i)).Raw(", 'c', 'c', ")
		if i == 0 {
			s.Raw("NULL)")
		} else {
			s.Arg(ids[i-1]).Raw(")")
		}
		res, err := a.db.Write().ExecContext(context.Background(), s.String(), s.Args...)
		if err != nil {
			t.Fatal(err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int(id))
	}
	return ids
}

// firstTree is the first hierarchical resource compiled in.
func firstTree(t testing.TB) config.Resource {
	t.Helper()
	for _, r := range server.CompiledResources() {
		if r.Hierarchical() {
			return r
		}
	}
	t.Skip("no hierarchical resource is compiled in")
	return config.Resource{}
}

// On MySQL and PostgreSQL a statement whose request has ended does not
// go on running on the server: it is killed (MySQL) or cancelled
// (PostgreSQL) at once, not when it would have ended.
func TestDatabase_AStatementWhoseRequestEndedStopsRunning(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		if b.Name == config.DriverSQLite {
			continue // SQLite interrupts the statement in the process
		}
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			d, _ := b.Open(t)
			sleep, running := "SELECT SLEEP(20)", "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(20)'"
			if d.Postgres() {
				sleep, running = "SELECT pg_sleep(20)", "SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT pg_sleep(20)'"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			rows, err := d.Reader().Query(ctx, sleep)
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				rows.Close()
			}
			if err == nil {
				t.Log("the sleep was answered before its deadline (MySQL answers a killed SLEEP with 1)")
			}
			ended := time.Now()
			for {
				var n int
				if err := db.QueryRow(context.Background(), d.Reader(), running, nil, &n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Since(ended) > time.Second {
					t.Fatalf("the statement still runs %s after its request ended", time.Since(ended).Round(time.Millisecond))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// A write the database keeps aborting (deadlocks) is retried with back-off
// over most of the time its request has, then answered as busy, not as
// the database being unavailable.
func TestInTx_RetriesOfAnAbortedWriteRunOutAsBusy(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			d, _ := b.Open(t)
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			runs := 0
			err := d.InTx(ctx, func(tx db.Tx) error {
				runs++
				return deadlockOf(b.Name)
			})
			var busy *db.BusyError
			if !errors.As(err, &busy) {
				t.Fatalf("InTx = %v, want a *db.BusyError", err)
			}
			if runs < 3 {
				t.Fatalf("the write ran %d times, want it retried", runs)
			}
		})
	}
}

// deadlockOf is the error a database aborts a deadlocked transaction with
// (errors are classified by what they are, whatever the backend).
func deadlockOf(string) error {
	return &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock; try restarting transaction"}
}
