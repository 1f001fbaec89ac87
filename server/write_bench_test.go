package server_test

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	store "personnel/record"
	"personnel/seed"
	"personnel/server"
)

// writeBenchRecords is how many departments the write benchmarks start
// with; writes touch one index path whatever the size, so a small table
// keeps the set-up short.
const writeBenchRecords = 10000

// writeBenchClients is how many requests run at once, as the 32
// connections.
const writeBenchClients = 32

// BenchmarkWriteConcurrent measures creates and updates from 32 concurrent
// clients on SQLite: through the real router, where the service keeps
// synchronous=FULL and commits concurrent writes together, and beside it
// statements issued directly on a second database file with
// synchronous=NORMAL, one connection, each write its own transaction (what
// a hand-written service that gave up durability would do): the record's
// own statements alone (sql_normal), and every statement the service
// issues for the write (sql_normal_same_statements), unprepared, as plain
// calls make them. The ratio of the API to the second is the issue's
// target (at least 0.8x):
//
//	go test -run '^$' -bench BenchmarkWriteConcurrent -benchtime 3s ./server/   # several times
func BenchmarkWriteConcurrent(b *testing.B) {
	be := dbtest.Backends(b)[0] // SQLite: MySQL commits each write on its own connection
	a := newAPI(b, be)
	ctx := context.Background()
	if err := seed.Fill(ctx, server.Loaders(a.db)["department"], seed.Options{Count: writeBenchRecords, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	base, bd := normalSyncBaseline(b, be)
	r := res{config.Resource{Path: "departments", Fields: config.ResourceFields{Code: "dept_code", Name: "dept_name", Parent: "parent_dept"}}}
	const root = 1
	var seq atomic.Int64
	// Each client renames its own records, so updates do not all queue on
	// one row's history; ids 1..writeBenchRecords exist on both files.
	target := func() int { return 1 + int(seq.Add(7919)%writeBenchRecords) }
	parallel := func(b *testing.B, op func() error) {
		before := a.db.GroupCommitStats()
		defer func() {
			// How many writes each fsync carried (API runs only).
			if st := a.db.GroupCommitStats(); st.Batches > before.Batches {
				b.ReportMetric(float64(st.Writes-before.Writes)/float64(st.Batches-before.Batches), "writes/commit")
			}
		}()
		b.SetParallelism(max(1, writeBenchClients/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("create/api", func(b *testing.B) {
		parallel(b, func() error {
			code := fmt.Sprintf("BENCH-A%d", seq.Add(1))
			body := fmt.Sprintf(`{"dept_code":%q,"dept_name":"Bench %s","parent_dept":%d}`, code, code, root)
			if st := a.raw(http.MethodPost, r.coll(), []byte(body)); st != http.StatusCreated {
				return fmt.Errorf("create: %d", st)
			}
			return nil
		})
	})
	b.Run("create/sql_normal", func(b *testing.B) {
		parallel(b, func() error {
			code := fmt.Sprintf("bench-s%d", seq.Add(1))
			_, err := base.Exec("INSERT INTO `personnel_department` (`dept_code`, `dept_code_fold`, `dept_name`, `dept_name_fold`, `parent_dept_id`) VALUES (?, ?, ?, ?, ?)",
				code, code, "bench "+code, "bench "+code, root)
			return err
		})
	})
	// The statements the service issues for a create, issued directly
	// through the store's table (its write hook) on a plain transaction:
	// the record, its closure rows, its substring index rows, its
	// ancestors' subtree counts, its counts. The record's INSERT alone is
	// sql_normal above.
	table := bd.Table(server.CompiledResources()[0])
	b.Run("create/sql_normal_same_statements", func(b *testing.B) {
		parallel(b, func() error {
			code := fmt.Sprintf("bench-t%d", seq.Add(1))
			name := "bench " + code
			tx, err := base.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			row := store.Row{Values: table.Fields.Defaults()}
			row.Values[table.Fields.Code] = store.Value{Str: code, Valid: true}
			row.Values[table.Fields.Name] = store.Value{Str: name, Valid: true}
			row.Values[table.Fields.Parent] = store.Value{Int: root, Valid: true}
			if err := table.Insert(ctx, db.SQLTx{Tx: tx}, []store.Row{row}); err != nil {
				return err
			}
			return tx.Commit()
		})
	})
	b.Run("update/api", func(b *testing.B) {
		parallel(b, func() error {
			body := fmt.Sprintf(`{"dept_name":"Renamed %d"}`, seq.Add(1))
			if st := a.raw(http.MethodPatch, r.item(target()), []byte(body)); st != http.StatusOK {
				return fmt.Errorf("update: %d", st)
			}
			return nil
		})
	})
	// A rename issued directly: the record read and written in one
	// transaction, as the service's update does; with all, through the
	// store's table, which writes beside it what the service writes for a
	// rename (the name's substring index rows replaced, the change number).
	rename := func(all bool) func() error {
		const cols = "SELECT `id`, `dept_code`, `dept_name`, `parent_dept_id` FROM `personnel_department`"
		return func() error {
			id, name := target(), fmt.Sprintf("renamed %d", seq.Add(1))
			tx, err := base.Begin()
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var rid, parent stdsql.NullInt64
			var code, old string
			if err := tx.QueryRow(cols+" WHERE `id` = ?", id).Scan(&rid, &code, &old, &parent); err != nil {
				return err
			}
			if !all {
				if _, err := tx.Exec("UPDATE `personnel_department` SET `dept_name` = ?, `dept_name_fold` = ? WHERE `id` = ?", name, name, id); err != nil {
					return err
				}
				return tx.Commit()
			}
			before := store.Row{ID: id, Values: table.Fields.Defaults()}
			before.Values[table.Fields.Code] = store.Value{Str: code, Valid: true}
			before.Values[table.Fields.Name] = store.Value{Str: old, Valid: true}
			before.Values[table.Fields.Parent] = store.Value{Int: parent.Int64, Valid: parent.Valid}
			after := store.Row{ID: id, Values: append([]store.Value(nil), before.Values...)}
			after.Values[table.Fields.Name] = store.Value{Str: name, Valid: true}
			if _, err := table.Update(ctx, db.SQLTx{Tx: tx}, before, after); err != nil {
				return err
			}
			return tx.Commit()
		}
	}
	b.Run("update/sql_normal", func(b *testing.B) { parallel(b, rename(false)) })
	b.Run("update/sql_normal_same_statements", func(b *testing.B) { parallel(b, rename(true)) })
}

// normalSyncBaseline returns a second database with the service's schema
// and the same records, opened as a
// hand-written service would: synchronous=NORMAL, one connection,
// transactions that begin IMMEDIATE; and the store on the same file, open
// but idle, whose statement builders the baseline borrows to issue the
// statements the service issues.
func normalSyncBaseline(b *testing.B, be dbtest.Backend) (*stdsql.DB, *db.DB) {
	b.Helper()
	cfg := be.Config(b)
	ctx := context.Background()
	d, err := db.Open(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if err := seed.Fill(ctx, server.Loaders(d)["department"], seed.Options{Count: writeBenchRecords, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	base, err := stdsql.Open("sqlite", cfg.DBDSN+"?_foreign_keys=1&_busy_timeout=10000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	base.SetMaxOpenConns(1)
	b.Cleanup(func() { base.Close() })
	var sync int
	if err := base.QueryRow("PRAGMA synchronous").Scan(&sync); err != nil || sync != 1 {
		b.Fatalf("baseline synchronous = %d (%v), want 1 (NORMAL)", sync, err)
	}
	return base, d
}
