package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"personnel/config"
	"personnel/db/dbtest"
	store "personnel/record"
	"personnel/resource"
	"personnel/server"
)

// benchRefResource returns the first compiled resource with a reference
// that has an under filter (to a hierarchy), and that reference.
func benchRefResource() (config.Resource, config.ExtraField, bool) {
	for _, d := range server.CompiledResources() {
		for _, e := range d.Extra {
			if e.Type == config.TypeRef && e.HasFilter(config.FilterUnder) {
				return d, e, true
			}
		}
	}
	return config.Resource{}, config.ExtraField{}, false
}

// BenchmarkRefs lists 100 of 100,000 records that refer to other
// resources, with and without ?expand= of every reference, and page 1 of
// <ref>_under=X, for X a record with 5,000 below it (the records refer to
// 10,000 at random, so half of them are under X), against <ref>=X; and
// <ref>_under=X again with a write of the records before each request,
// after which its kept count is counted again; and the two ratios
// (expanded/plain, under/exact) timed alternately in one loop. The
// shipped resources have no references: run it in a copy of the module
// generated with the README's employee (see BENCHMARKS.md, "References"):
//
//	go test -run '^$' -bench BenchmarkRefs -benchtime 200x ./server/
func BenchmarkRefs(b *testing.B) {
	desc, under, ok := benchRefResource()
	if !ok {
		b.Skip("no compiled resource refers to a hierarchy; see BENCHMARKS.md for a copy with the README's employee")
	}
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			loaders := server.Loaders(a.db)
			load := func(name string, recs []resource.NewRecord) []int {
				ids, err := loaders[name].Load(ctx, recs)
				if err != nil {
					b.Fatal(err)
				}
				return ids
			}
			// The targets: the hierarchy under refers to, 10,001 records,
			// 5,000 of them below x; 100 records of each other one.
			targets := map[string][]int{}
			x := load(under.To, []resource.NewRecord{{Code: "X", Name: "Under"}})[0]
			var tree []resource.NewRecord
			for i := range 50 {
				tree = append(tree, resource.NewRecord{Code: fmt.Sprintf("X%02d", i), Name: "Below", ParentID: &x})
			}
			children := load(under.To, tree)
			tree = tree[:0]
			for i, c := range children {
				for j := range 99 {
					tree = append(tree, resource.NewRecord{Code: fmt.Sprintf("X%02d-%02d", i, j), Name: "Below", ParentID: &c})
				}
			}
			for i := range 5000 {
				tree = append(tree, resource.NewRecord{Code: fmt.Sprintf("O%04d", i), Name: "Elsewhere"})
			}
			targets[under.To] = append(append([]int{x}, children...), load(under.To, tree)...)
			for _, e := range desc.Extra {
				if e.IsRef() && targets[e.To] == nil {
					var recs []resource.NewRecord
					for i := range 100 {
						recs = append(recs, resource.NewRecord{Code: fmt.Sprintf("R%03d", i), Name: "Referred"})
					}
					targets[e.To] = load(e.To, recs)
				}
			}
			// 100,000 records referring to them at random.
			t := a.db.Table(desc)
			var expand []string
			for _, f := range t.Fields.List {
				if f.IsRef() && !slices.Contains(expand, f.Key) {
					expand = append(expand, f.Key)
				}
			}
			for start := 0; start < benchRecords; start += 10000 {
				rows := make([]store.Row, 10000)
				for k := range rows {
					vs := t.Fields.Defaults()
					vs[t.Fields.Code] = store.Value{Str: fmt.Sprintf("E%06d", start+k), Valid: true}
					vs[t.Fields.Name] = store.Value{Str: "Employee", Valid: true}
					for _, i := range t.Fields.Refs() {
						pick := func() int64 { ids := targets[t.Fields.List[i].To]; return int64(ids[rng.IntN(len(ids))]) }
						if t.Fields.List[i].Kind == store.KindRefs {
							vs[i] = store.Value{IDs: store.SortIDs([]int64{pick(), pick()}), Valid: true}
						} else {
							vs[i] = store.Value{Int: pick(), Valid: true}
						}
					}
					rows[k] = store.Row{Values: vs}
				}
				if err := t.Load(ctx, rows); err != nil {
					b.Fatal(err)
				}
			}
			if be.Name == config.DriverPostgres {
				if _, err := a.db.Write().ExecContext(ctx, "VACUUM (ANALYZE)"); err != nil {
					b.Fatal(err)
				}
			}
			r := res{desc}
			// A write of the records between two requests, untimed: the
			// count kept for a filter through another table is counted
			// again after it.
			writes := 0
			write := func() {
				writes++ // another name each time
				body := []byte(fmt.Sprintf(`{%q: "Written %d"}`, desc.Fields.Name, writes))
				if st := a.raw(http.MethodPatch, r.item(1), body); st != http.StatusOK {
					b.Fatalf("PATCH: %d", st)
				}
			}
			for _, s := range []struct {
				name, query string
				write       bool
			}{
				{"list_100", "page_size=100", false},
				{"list_100_expand", "page_size=100&expand=" + strings.Join(expand, ","), false},
				{fmt.Sprintf("%s=x", under.Name), fmt.Sprintf("%s=%d", under.Name, x), false},
				{fmt.Sprintf("%s_under=x", under.Name), fmt.Sprintf("%s_under=%d", under.Name, x), false},
				{fmt.Sprintf("%s_under=x_after_a_write", under.Name), fmt.Sprintf("%s_under=%d", under.Name, x), true},
			} {
				b.Run(s.name, func(b *testing.B) {
					path := r.query(s.query)
					if st := a.raw(http.MethodGet, path, nil); st != http.StatusOK {
						b.Fatalf("%s: %d", path, st)
					}
					b.ResetTimer()
					for range b.N {
						if s.write {
							b.StopTimer()
							write()
							b.StartTimer()
						}
						a.raw(http.MethodGet, path, nil)
					}
				})
			}
			// The two ratios of BENCHMARKS.md, each pair timed in one
			// loop, in the order ABBA, so that both see the same machine.
			for _, p := range []struct{ name, a, b string }{
				{"expand_vs_plain", "page_size=100&expand=" + strings.Join(expand, ","), "page_size=100"},
				{"under_vs_exact", fmt.Sprintf("%s_under=%d", under.Name, x), fmt.Sprintf("%s=%d", under.Name, x)},
			} {
				b.Run(p.name, func(b *testing.B) {
					pa, pb := r.query(p.a), r.query(p.b)
					var ta, tb time.Duration
					timed := func(path string, sum *time.Duration) {
						start := time.Now()
						if st := a.raw(http.MethodGet, path, nil); st != http.StatusOK {
							b.Fatalf("%s: %d", path, st)
						}
						*sum += time.Since(start)
					}
					timed(pa, &ta)
					timed(pb, &tb)
					ta, tb = 0, 0
					b.ResetTimer()
					for i := range b.N {
						if i%2 == 0 {
							timed(pa, &ta)
							timed(pb, &tb)
						} else {
							timed(pb, &tb)
							timed(pa, &ta)
						}
					}
					b.ReportMetric(float64(ta.Nanoseconds())/float64(b.N), "a-ns/op")
					b.ReportMetric(float64(tb.Nanoseconds())/float64(b.N), "b-ns/op")
					b.ReportMetric(float64(ta)/float64(tb), "a/b")
				})
			}
		})
	}
}
