package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"personnel/casefold"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/ent"
)

// benchTree fills departments with one tree of n nodes on 6 levels (1, 6,
// 36, 216, 1296 nodes, then the rest spread over the last level) and
// returns the root's id.
func benchTree(b *testing.B, a *api, n int) int {
	ctx := context.Background()
	c := a.db.Write()
	create := func(code string, parent *int) *ent.DepartmentCreate {
		return c.Department.Create().SetCode(code).SetCodeFold(casefold.Fold(code)).
			SetName("Dept " + code).SetNameFold(casefold.Fold("Dept " + code)).SetNillableParentID(parent)
	}
	root, err := create("N0", nil).Save(ctx)
	if err != nil {
		b.Fatal(err)
	}
	level, made := []int{root.ID}, 1
	for depth := 1; depth < 6 && made < n; depth++ {
		per := 6
		if depth == 5 {
			per = (n - made + len(level) - 1) / len(level)
		}
		var builders []*ent.DepartmentCreate
		for _, p := range level {
			for i := 0; i < per && made < n; i++ {
				builders = append(builders, create(fmt.Sprintf("N%d", made), &p))
				made++
			}
		}
		var next []int
		for start := 0; start < len(builders); start += 500 {
			batch, err := c.Department.CreateBulk(builders[start:min(start+500, len(builders))]...).Save(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, d := range batch {
				next = append(next, d.ID)
			}
		}
		level = next
	}
	if made != n {
		b.Fatalf("made %d nodes, want %d", made, n)
	}
	return root.ID
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
