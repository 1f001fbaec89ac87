package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
)

// On MySQL a query run outside a transaction a second time is prepared
// and kept, and answers as the interpolated one did (the binary protocol
// scans the same values); a text the server refuses is refused each time
// and never kept; the cache keeps no more than its bound, a quarter of
// the server's max_prepared_stmt_count shared by the pool's connections,
// and the texts past it still answer.
func TestMySQLPrepared_KeptFromTheSecondRunBoundedAndAnswering(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		if b.Name != config.DriverMySQL {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			d, cfg := b.Open(t)
			ctx := context.Background()
			kept, limit := db.PreparedStmts(d)
			var maxPrepared int
			if err := db.QueryRow(ctx, d.Reader(), "SELECT @@max_prepared_stmt_count", nil, &maxPrepared); err != nil {
				t.Fatal(err)
			}
			conns := cfg.DBMaxOpenConns
			if conns <= 0 {
				conns = 16 // openMySQL's default
			}
			if limit <= 0 || limit > 256 || (maxPrepared >= 0 && limit > maxPrepared/(4*conns)) {
				t.Fatalf("limit %d with max_prepared_stmt_count %d and %d connections", limit, maxPrepared, conns)
			}
			q := "SELECT ? + 1, CAST(? AS CHAR), CAST(NULL AS CHAR), TIMESTAMP('2026-11-27 01:02:03.5'), CAST(? AS DECIMAL(10,2))"
			var answers []string
			for run := range 3 {
				var n int64
				var s string
				var null *string
				var ts time.Time
				var dec string
				if err := db.QueryRow(ctx, d.Reader(), q, []any{41, "zürich", "12.5"}, &n, &s, &null, &ts, &dec); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				answers = append(answers, fmt.Sprintf("%d %s %v %s %s", n, s, null, ts.UTC(), dec))
				if k, _ := db.PreparedStmts(d); (run == 0) != (k == kept) {
					t.Fatalf("after run %d: %d statements kept, %d before", run, k, kept)
				}
			}
			if answers[0] != answers[1] || answers[0] != answers[2] || answers[0] != "42 zürich <nil> 2026-11-27 01:02:03.5 +0000 UTC 12.50" {
				t.Errorf("interpolated, then prepared: %q", answers)
			}
			kept, _ = db.PreparedStmts(d)
			for run := range 3 {
				if err := db.QueryRow(ctx, d.Reader(), "SELECT FROM nowhere WHERE", nil); err == nil {
					t.Fatalf("run %d of a bad statement: no error", run)
				}
			}
			if k, _ := db.PreparedStmts(d); k != kept {
				t.Errorf("a refused statement kept: %d statements, %d before", k, kept)
			}
			for i := range limit + 5 {
				for run := range 2 {
					var n int
					if err := db.QueryRow(ctx, d.Reader(), fmt.Sprintf("SELECT ? + %d", i), []any{run}, &n); err != nil || n != i+run {
						t.Fatalf("text %d, run %d: %d, %v", i, run, n, err)
					}
				}
			}
			if k, _ := db.PreparedStmts(d); k != limit {
				t.Errorf("%d statements kept, at most %d", k, limit)
			}
		})
	}
}

// A prepared statement whose request ends is killed on the server as an
// interpolated one is (db/mysqlkill.go), and the pool answers after it.
func TestMySQLPrepared_AStatementWhoseRequestEndedStopsRunning(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		if b.Name != config.DriverMySQL {
			continue
		}
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			ctx := context.Background()
			// The text carries a mark of its own: other tests sleep too.
			sleep := "SELECT SLEEP(?) AS readprep_kill_mark"
			running := "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%readprep_kill_mark%' AND INFO NOT LIKE '%PROCESSLIST%'"
			var n int
			for range 2 {
				if err := db.QueryRow(ctx, d.Reader(), sleep, []any{0}, &n); err != nil {
					t.Fatal(err)
				}
			}
			if k, _ := db.PreparedStmts(d); k < 1 {
				t.Fatalf("the sleep is not prepared (%d statements kept)", k)
			}
			sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			_ = db.QueryRow(sctx, d.Reader(), sleep, []any{20}, &n) // killed: an error, or 1 (MySQL's answer to a killed SLEEP)
			ended := time.Now()
			for {
				if err := db.QueryRow(ctx, d.Reader(), running, nil, &n); err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
				if time.Since(ended) > 2*time.Second {
					t.Fatalf("the prepared statement still runs %s after its request ended", time.Since(ended).Round(time.Millisecond))
				}
				time.Sleep(20 * time.Millisecond)
			}
			for range 20 {
				if err := db.QueryRow(ctx, d.Reader(), sleep, []any{0}, &n); err != nil || n != 0 {
					t.Fatalf("after the kill: %d, %v", n, err)
				}
			}
		})
	}
}
