package server_test

import (
	"context"
	stdsql "database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/seed"
	"personnel/server"
)

// BenchmarkReadByID reads one department by id through the real router
// with a JWT, as loadtest's read scenario does, many requests at once, and
// reports the CPU this process spent per request (cpu-µs/op) beside the
// wall time: on a shared machine the wall time follows the other work, the
// CPU much less, and the CPU is what the read path's layers cost (the
// database's own work is in another process). On MySQL the same read is
// also answered by loadtest's hand-written twin (net/http, database/sql,
// no token, no log), in both its ways of running statements, over a pool
// of its own, so that the ratio of the CPU figures is measured in one run.
// Profile it with -cpuprofile:
//
//	go test -run '^$' -bench BenchmarkReadByID -benchmem -count 6 ./server/
func BenchmarkReadByID(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be)
			if err := seed.Fill(context.Background(), server.Loaders(a.db)["department"], seed.Options{Count: 1000, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			path := res{config.Resource{Path: "departments"}}.item(500)
			header := "JWT " + a.token
			b.Run("personnel", func(b *testing.B) { readLoad(b, a.h, path, header) })
			if be.Name != config.DriverMySQL {
				return
			}
			for _, prepared := range []bool{false, true} {
				name := "handwritten_interpolated"
				if prepared {
					name = "handwritten_prepared"
				}
				b.Run(name, func(b *testing.B) { readLoad(b, handwrittenRead(b, a.cfg.DBDSN, prepared), path, "") })
			}
		})
	}
}

// readLoad sends GET path to h from many goroutines at once, as a loaded
// server has them (the pool and the scheduler then work as they do under
// load), and reports the process's CPU time per request.
func readLoad(b *testing.B, h http.Handler, path, authorization string) {
	b.ReportAllocs()
	b.SetParallelism(8)
	start := processCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			// A context that can end, as net/http gives every request:
			// database/sql and the driver watch such a context.
			ctx, cancel := context.WithCancel(context.Background())
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
			if authorization != "" {
				req.Header.Set("Authorization", authorization)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			cancel()
			if rec.Code != http.StatusOK {
				b.Error(rec.Code)
				return
			}
		}
	})
	b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

// handwrittenRead is cmd/loadtest's hand-written read by id (handwritten.go)
// over a pool of its own on dsn, its statement interpolated by the driver
// or prepared once on the pool.
func handwrittenRead(b *testing.B, dsn string, prepared bool) http.Handler {
	mc, err := mysql.ParseDSN(dsn)
	if err != nil {
		b.Fatal(err)
	}
	mc.InterpolateParams = !prepared
	pool, err := stdsql.Open("mysql", mc.FormatDSN())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(16)
	const readOne = "SELECT id, dept_code, dept_name, parent_dept_id FROM personnel_department WHERE id = ?"
	query := func(ctx context.Context, id int64) *stdsql.Row { return pool.QueryRowContext(ctx, readOne, id) }
	if prepared {
		st, err := pool.Prepare(readOne)
		if err != nil {
			b.Fatal(err)
		}
		query = func(ctx context.Context, id int64) *stdsql.Row { return st.QueryRowContext(ctx, id) }
	}
	type department struct {
		ID     int64  `json:"id"`
		Code   string `json:"dept_code"`
		Name   string `json:"dept_name"`
		Parent *int64 `json:"parent_dept"`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+server.APIRoot+"/departments/{id}/", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
		if err != nil {
			http.Error(w, "bad id", http.StatusBadRequest)
			return
		}
		var d department
		var parent stdsql.NullInt64
		if err := query(r.Context(), id).Scan(&d.ID, &d.Code, &d.Name, &parent); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if parent.Valid {
			d.Parent = &parent.Int64
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(d)
	})
	return mux
}

// processCPU is the user and system CPU time this process has spent.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCreate creates departments below one parent through the real
// router with a JWT, as loadtest's create scenario does, many requests at
// once, and reports the CPU this process spent per create (cpu-µs/op):
// on MySQL and PostgreSQL that is the server's own work, the database's
// being in another process. Profile it with -cpuprofile:
//
//	PERSONNEL_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' \
//	    go test -run '^$' -bench 'BenchmarkCreate/mysql' -benchmem -benchtime 3000x -cpuprofile /tmp/cpu.prof ./server/
func BenchmarkCreate(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be)
			if err := seed.Fill(context.Background(), server.Loaders(a.db)["department"], seed.Options{Count: 1000, Seed: 1}); err != nil {
				b.Fatal(err)
			}
			path := server.APIRoot + "/departments/"
			header := "JWT " + a.token
			var seq atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(8)
			start := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					n := seq.Add(1)
					body := `{"dept_code":"BENCH-` + strconv.FormatInt(n, 10) + `","dept_name":"Bench ` + strconv.FormatInt(n, 10) + `","parent_dept":1}`
					ctx, cancel := context.WithCancel(context.Background())
					req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(body))
					req.Header.Set("Authorization", header)
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					a.h.ServeHTTP(rec, req)
					cancel()
					if rec.Code != http.StatusCreated {
						b.Error(rec.Code, rec.Body.String())
						return
					}
				}
			})
			b.ReportMetric(float64((processCPU(b)-start).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
