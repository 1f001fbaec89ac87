package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/resource"
	"personnel/server"
)

// benchTree fills departments with one tree of n nodes on 6 levels (1, 6,
// 36, 216, 1296 nodes, then the rest spread over the last level) and
// returns the root's id. It loads them as personnel seed does, so the
// count, substring indexes and closure are kept.
func benchTree(b *testing.B, a *api, n int) int {
	ctx := context.Background()
	load := server.Loaders(a.db)["department"]
	ids, err := load.Load(ctx, []resource.NewRecord{{Code: "N0", Name: "Dept N0"}})
	if err != nil {
		b.Fatal(err)
	}
	root := ids[0]
	level, made := []int{root}, 1
	for depth := 1; depth < 6 && made < n; depth++ {
		per := 6
		if depth == 5 {
			per = (n - made + len(level) - 1) / len(level)
		}
		var recs []resource.NewRecord
		for _, p := range level {
			for i := 0; i < per && made < n; i++ {
				code := fmt.Sprintf("N%d", made)
				recs = append(recs, resource.NewRecord{Code: code, Name: "Dept " + code, ParentID: &p})
				made++
			}
		}
		if level, err = load.Load(ctx, recs); err != nil {
			b.Fatal(err)
		}
	}
	if made != n {
		b.Fatalf("made %d nodes, want %d", made, n)
	}
	return root
}

// BenchmarkHierarchy measures descendants and tree of a 10,000-node,
// 6-level tree against a plain list of the same 10,000 records, through the
// real router, on each backend:
//
//	go test -run '^$' -bench BenchmarkHierarchy -benchmem ./server/
func BenchmarkHierarchy(b *testing.B) {
	const nodes = 10000
	for _, be := range dbtest.Backends(b) {
		b.Run(be.Name, func(b *testing.B) {
			a := newAPI(b, be, func(c *config.Config) { c.PageSizeMax = nodes })
			root := benchTree(b, a, nodes)
			r := res{config.Resource{Path: "departments"}}
			for _, bc := range []struct{ name, path string }{
				{"list_all_10000", r.coll() + "?page_size=10000"},
				{"descendants_all_9999", r.item(root) + "descendants/?page_size=10000"},
				{"tree_10000", r.coll() + "tree/?root=" + itoa(root)},
				{"list_page1", r.coll()},
				{"descendants_page1", r.item(root) + "descendants/"},
			} {
				b.Run(bc.name, func(b *testing.B) {
					for b.Loop() {
						if st := a.raw(http.MethodGet, bc.path, nil); st != http.StatusOK {
							b.Fatal(st)
						}
					}
				})
			}
		})
	}
}
