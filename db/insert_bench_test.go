package db_test

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"personnel/db"
	"personnel/db/dbtest"
	"personnel/record"
)

// insertBenchRecords is how many records the table holds before the
// creates are timed: the indexes and counts have some depth, and the
// set-up stays short on every backend.
const insertBenchRecords = 10000

// insertBenchBatch is how many creates share a transaction in the
// "batched" runs, which leave out the commit to show the statements'
// own cost.
const insertBenchBatch = 100

// BenchmarkInsert_PerStructure shows where a create's time goes: one
// record inserted through the table (Table.Insert, under a parent two
// levels deep) with the structures kept beside it added one at a time in
// the order the table tells them of a write (cumulative/), and with each
// alone (alone/), on every backend whose DSN is set. "commit" runs each
// create as a transaction of its own, as the API does; "batched" runs
// insertBenchBatch creates to a transaction, so that the statements' cost
// shows without the commit's. The statements/op metric counts the
// statements the write issued, the record's INSERT included.
//
//	PERSONNEL_TEST_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' PERSONNEL_TEST_POSTGRES_DSN='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' \
//	    go test -run '^$' -bench BenchmarkInsert_PerStructure -benchtime 2000x ./db/
func BenchmarkInsert_PerStructure(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			d, _ := be.Open(b)
			ctx := db.WithActor(context.Background(), db.Actor{Command: "bench"})
			t := d.Table(res)
			parent := insertBenchSeed(b, ctx, d, t)
			names := db.KeeperNames(t)
			var seq atomic.Int64
			create := func(b *testing.B, batch int) {
				var stmts int64
				b.ResetTimer()
				for i := 0; i < b.N; i += batch {
					n := min(batch, b.N-i)
					err := d.InTx(ctx, func(tx db.Tx) error {
						ct := &countingTx{Tx: tx}
						for range n {
							row := benchRow(t, fmt.Sprintf("BENCH-%d", seq.Add(1)), parent)
							if err := t.Insert(ctx, ct, []record.Row{row}); err != nil {
								return err
							}
						}
						stmts += ct.n
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(stmts)/float64(b.N), "statements/op")
			}
			run := func(b *testing.B, name string, keep []string) {
				for _, mode := range []struct {
					name  string
					batch int
				}{{"commit", 1}, {"batched", insertBenchBatch}} {
					b.Run(name+"/"+mode.name, func(b *testing.B) {
						restore := db.KeepOnly(t, keep...)
						defer restore()
						create(b, mode.batch)
					})
				}
			}
			run(b, "cumulative/0_record", nil)
			for i, name := range names {
				run(b, fmt.Sprintf("cumulative/%d_+%s", i+1, name), names[:i+1])
			}
			for _, name := range names {
				run(b, "alone/"+name, []string{name})
			}
		})
	}
}

// insertBenchSeed fills t with insertBenchRecords records through the
// table (every structure kept) and returns the id of a record two levels
// below a root, the parent of the creates timed.
func insertBenchSeed(b *testing.B, ctx context.Context, d *db.DB, t *db.Table) int {
	b.Helper()
	row := func(code string, parent int) record.Row {
		r := record.Row{Values: t.Fields.Defaults()}
		r.Values[t.Fields.Code] = record.Value{Str: code, Valid: true}
		r.Values[t.Fields.Name] = record.Value{Str: "Abteilung " + strings.ToLower(code), Valid: true}
		if parent > 0 {
			r.Values[t.Fields.Parent] = record.Value{Int: int64(parent), Valid: true}
		}
		return r
	}
	parent := 0
	for level := range 3 {
		rows := []record.Row{row(fmt.Sprintf("LEVEL-%d", level), parent)}
		if err := d.InTx(ctx, func(tx db.Tx) error { return t.Insert(ctx, tx, rows) }); err != nil {
			b.Fatal(err)
		}
		parent = rows[0].ID
	}
	for start := 0; start < insertBenchRecords; start += 1000 {
		var rows []record.Row
		for i := start; i < start+1000; i++ {
			rows = append(rows, row(fmt.Sprintf("SEED-%d", i), 1+i%3))
		}
		if err := d.InTx(ctx, func(tx db.Tx) error { return t.Insert(ctx, tx, rows) }); err != nil {
			b.Fatal(err)
		}
	}
	return parent
}

// countingTx counts the statements run through it.
type countingTx struct {
	db.Tx
	n int64
}

func (c *countingTx) ExecContext(ctx context.Context, query string, args ...any) (stdsql.Result, error) {
	c.n++
	return c.Tx.ExecContext(ctx, query, args...)
}

func (c *countingTx) Query(ctx context.Context, query string, args ...any) (db.Rows, error) {
	c.n++
	return c.Tx.Query(ctx, query, args...)
}

// BenchmarkInsert_AuditAndFeed answers what the audit trail and the
// change feed add to a create: each iteration times one create with every
// keeper and one with all but those two, alternately, each in its own
// transaction as the API runs it, so that both see the same machine.
// It reports both means and their ratio (with/without); ns/op is the
// pair's.
//
//	go test -run '^$' -bench BenchmarkInsert_AuditAndFeed -benchtime 2000x -count 3 ./db/
func BenchmarkInsert_AuditAndFeed(b *testing.B) {
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			d, _ := be.Open(b)
			ctx := db.WithActor(context.Background(), db.Actor{Command: "bench"})
			t := d.Table(res)
			parent := insertBenchSeed(b, ctx, d, t)
			var others []string
			for _, name := range db.KeeperNames(t) {
				if name != "audit" && name != "feed" {
					others = append(others, name)
				}
			}
			if len(others) != len(db.KeeperNames(t))-2 {
				b.Fatalf("keepers %q: want an audit and a feed among them", db.KeeperNames(t))
			}
			k := 0
			create := func() time.Duration {
				k++
				row := benchRow(t, fmt.Sprintf("PAIR-%d", k), parent)
				start := time.Now()
				if err := d.InTx(ctx, func(tx db.Tx) error { return t.Insert(ctx, tx, []record.Row{row}) }); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var with, without time.Duration
			b.ResetTimer()
			for i := range b.N {
				// Which goes first alternates, so neither always follows
				// the other's commit.
				if i%2 == 0 {
					with += create()
				}
				restore := db.KeepOnly(t, others...)
				without += create()
				restore()
				if i%2 == 1 {
					with += create()
				}
			}
			b.ReportMetric(float64(with.Microseconds())/float64(b.N), "with-µs/op")
			b.ReportMetric(float64(without.Microseconds())/float64(b.N), "without-µs/op")
			b.ReportMetric(float64(with)/float64(without), "with/without")
		})
	}
}

// benchRow is a record of t to create in a benchmark: code, a name with
// a word of a non-ASCII alphabet, under parent.
func benchRow(t *db.Table, code string, parent int) record.Row {
	row := record.Row{Values: t.Fields.Defaults()}
	row.Values[t.Fields.Code] = record.Value{Str: code, Valid: true}
	row.Values[t.Fields.Name] = record.Value{Str: "Vertrieb Köln " + code, Valid: true}
	row.Values[t.Fields.Parent] = record.Value{Int: int64(parent), Valid: true}
	return row
}
