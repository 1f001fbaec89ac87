package server_test

import (
	"slices"
	"testing"
	"time"

	"personnel/db/dbtest"
)

// BenchmarkFeed_WakeUpAcrossReplicas measures how long after a write on
// one replica a read of the feed waiting on another (wait=30) answers
// with it: the wake-up delay, reported as its mean and worst in
// milliseconds (wake-ms, worst-ms), on every backend.
//
//	go test ./server/ -run '^$' -bench BenchmarkFeed_WakeUpAcrossReplicas -benchtime 20x
func BenchmarkFeed_WakeUpAcrossReplicas(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be)
			other := a.replica(b)
			r := res{department(b)}
			var delays []time.Duration
			for i := 0; b.Loop(); i++ {
				start := other.changes(r, "", "&limit=1").Cursor
				for p := other.changes(r, start, "&limit=1000"); p.More || len(p.Changes) > 0; p = other.changes(r, start, "&limit=1000") {
					start = p.Cursor
				}
				got := make(chan feedPage, 1)
				go func() { got <- other.changes(r, start, "&wait=30") }()
				// The read is waiting by now: its first look found nothing.
				time.Sleep(100 * time.Millisecond)
				wrote := time.Now()
				id := a.create(r, "WAKE-"+itoa(i), "wake", nil)
				p := <-got
				delays = append(delays, time.Since(wrote))
				if len(p.Changes) != 1 || p.Changes[0].ID != id {
					b.Fatalf("the waiting read answered %+v, want the change of %d", p, id)
				}
			}
			var sum time.Duration
			for _, d := range delays {
				sum += d
			}
			b.ReportMetric(float64(sum.Microseconds())/float64(len(delays))/1000, "wake-ms")
			b.ReportMetric(float64(slices.Max(delays).Microseconds())/1000, "worst-ms")
		})
	}
}
