package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"personnel/db/dbtest"
	"personnel/resource"
	"personnel/server"
)

// BenchmarkWriteDuringHeavyMove times, on SQLite (one writer), the other
// writes and the logins made while the heaviest move the move limit
// allows runs: a subtree of 1,100 records moved below a chain of 100
// levels and back, again and again. Each round moves it once while 20
// creates and 5 logins (one after another) are sent; the benchmark
// reports the p99 and worst of those, and of the moves themselves, in
// milliseconds.
//
//	go test ./server/ -run '^$' -bench BenchmarkWriteDuringHeavyMove -benchtime 20x
func BenchmarkWriteDuringHeavyMove(b *testing.B) {
	be := dbtest.Backends(b)[0]
	a := newAPI(b, be)
	r := res{firstTree(b)}
	top := a.create(r, "TOP", "t", nil)
	var leaves []resource.NewRecord
	for i := range 1099 {
		leaves = append(leaves, resource.NewRecord{Code: fmt.Sprintf("S%04d", i), Name: "s", ParentID: &top})
	}
	if _, err := server.Loaders(a.db)[r.Name].Load(context.Background(), leaves); err != nil {
		b.Fatal(err)
	}
	deep := 0
	for i := range 100 {
		var p any
		if deep != 0 {
			p = deep
		}
		deep = a.create(r, "DEEP"+strconv.Itoa(i), "d", p)
	}
	var others, moves []time.Duration
	var mu sync.Mutex
	timed := func(list *[]time.Duration, what string, want int, f func() *response) {
		start := time.Now()
		resp := f()
		took := time.Since(start)
		if resp.Status != want {
			b.Errorf("%s during the heaviest move: %s", what, resp)
		}
		mu.Lock()
		*list = append(*list, took)
		mu.Unlock()
	}
	round := 0
	for b.Loop() {
		round++
		var parent any = deep
		if round%2 == 0 {
			parent = nil
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			timed(&moves, "the move", http.StatusOK, func() *response {
				return a.do(http.MethodPatch, r.item(top), map[string]any{r.Fields.Parent: parent})
			})
		})
		// The others start once the move is under way.
		time.Sleep(5 * time.Millisecond)
		for i := range 20 {
			wg.Go(func() {
				timed(&others, "a create", http.StatusCreated, func() *response {
					return a.do(http.MethodPost, r.coll(), r.body(fmt.Sprintf("W%d-%02d", round, i), "w", nil))
				})
			})
		}
		wg.Go(func() {
			for range 5 {
				timed(&others, "a login", http.StatusOK, func() *response {
					return a.do(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": testUser, "password": testPassword}, "Authorization", "")
				})
			}
		})
		wg.Wait()
	}
	report := func(list []time.Duration, unit string) {
		slices.Sort(list)
		p99 := list[min(len(list)-1, len(list)*99/100)]
		b.ReportMetric(float64(p99.Microseconds())/1000, unit+"-p99-ms")
		b.ReportMetric(float64(list[len(list)-1].Microseconds())/1000, unit+"-worst-ms")
	}
	report(others, "others")
	report(moves, "move")
}
