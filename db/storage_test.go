package db_test

import (
	"context"
	"fmt"
	"testing"

	"personnel/db"
	"personnel/db/dbtest"
	"personnel/record"
)

// Storage reports, on every database, the records of a resource and the
// bytes of its table and of each structure kept beside it (a substring
// index per searched field, the closure, the counts), and of the audit
// trail and the change feed with their entries; and the sizes follow the
// data: loading more records makes the table and every index larger.
func TestStorage_MeasuresTheTableAndEveryStructure(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			table := d.Table(res)
			ctx := context.Background()
			load := func(from, n int) {
				t.Helper()
				rows := make([]record.Row, n)
				for i := range rows {
					rows[i].Values = table.Fields.Defaults()
					rows[i].Values[table.Fields.Code] = record.Value{Str: fmt.Sprintf("S%06d", from+i), Valid: true}
					rows[i].Values[table.Fields.Name] = record.Value{Str: fmt.Sprintf("Storage department number %d of the test", from+i), Valid: true}
				}
				if err := table.Load(ctx, rows); err != nil {
					t.Fatal(err)
				}
			}
			measure := func(records int) map[string]int64 {
				t.Helper()
				s, err := d.Storage(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Resources) != 1 || s.Resources[0].Resource != cols.Table || s.Resources[0].Records != records {
					t.Fatalf("resources %+v, want %s with %d records", s.Resources, cols.Table, records)
				}
				if s.AuditEntries != records || s.FeedEntries != records || s.Audit.Bytes <= 0 || s.Feed.Bytes <= 0 {
					t.Errorf("audit trail %d entries in %d bytes, change feed %d in %d, want %d entries each and some bytes",
						s.AuditEntries, s.Audit.Bytes, s.FeedEntries, s.Feed.Bytes, records)
				}
				bytes := map[string]int64{}
				for _, p := range s.Resources[0].Parts {
					if p.Bytes <= 0 {
						t.Errorf("%s (%v): %d bytes", p.Name, p.Tables, p.Bytes)
					}
					bytes[p.Name] = p.Bytes
				}
				want := []string{"table", db.ClosureStructure, db.CountStructure}
				for _, col := range cols.Search {
					want = append(want, db.SubstringStructure(col))
				}
				for _, name := range want {
					if _, ok := bytes[name]; !ok {
						t.Errorf("no size for %s: %v", name, bytes)
					}
				}
				if len(bytes) != len(want) {
					t.Errorf("parts %v, want %v", bytes, want)
				}
				return bytes
			}
			load(0, 500)
			before := measure(500)
			load(500, 4500)
			after := measure(5000)
			for name, n := range before {
				if name != db.CountStructure && after[name] <= n {
					t.Errorf("%s: %d bytes at 500 records and %d at 5,000", name, n, after[name])
				}
			}
		})
	}
}
