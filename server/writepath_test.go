package server_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"personnel/db"
	"personnel/db/dbtest"
	store "personnel/record"
	"personnel/seed"
	"personnel/server"
)

// recorder is a keeper that notes every write it is told of, as any
// structure kept beside a table is told.
type recorder struct {
	mu     sync.Mutex
	writes []string // "table op id [changed fields]"
}

func (r *recorder) note(w *db.Write, op string, id int, changed []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	entry := fmt.Sprintf("%s %s %d", w.Table.Name, op, id)
	if changed != nil {
		entry += fmt.Sprint(" ", changed)
	}
	r.writes = append(r.writes, entry)
}

func (r *recorder) Inserted(_ context.Context, w *db.Write, rows []store.Row) error {
	for _, row := range rows {
		r.note(w, "insert", row.ID, nil)
	}
	return nil
}

func (r *recorder) Updated(_ context.Context, w *db.Write, changes []db.Change) error {
	for _, c := range changes {
		r.note(w, "update", c.After.ID, c.Changed)
	}
	return nil
}

func (r *recorder) Deleting(_ context.Context, w *db.Write, rows []store.Row) error {
	for _, row := range rows {
		r.note(w, "delete", row.ID, nil)
	}
	return nil
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.writes
	r.writes = nil
	return out
}

// A structure registered with the store once is told of every write of
// every write path (create, PUT, PATCH, delete, the seed command's bulk
// load) and of nothing else: no write path reaches a table without its
// keepers.
func TestWriteHook_ARegisteredStructureSeesEveryWriteOfEveryWritePath(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			cfg := b.Config(t)
			d := dbtest.MustOpen(t, cfg)
			rec := &recorder{}
			d.Keep(func(*db.Table) db.Keeper { return rec })
			a := newAPIOn(t, b, cfg, d)
			for _, desc := range server.CompiledResources() {
				t.Run(desc.Name, func(t *testing.T) {
					a := *a
					a.t = t
					r := res{a.withTargets(desc)}
					expect := func(what string, want ...string) {
						t.Helper()
						if got := rec.take(); !slices.Equal(got, want) {
							t.Fatalf("%s: the structure saw %q, want %q", what, got, want)
						}
					}
					rec.take()
					x := a.create(r, "X", "x", nil)
					expect("create", fmt.Sprintf("%s insert %d", r.Table, x))
					name := r.Fields.Name
					code, nameField := a.db.Table(desc).Fields.Code, a.db.Table(desc).Fields.Name
					if st := a.do(http.MethodPut, r.item(x), map[string]any{r.Fields.Code: "X2", name: "x"}).Status; st != http.StatusOK {
						t.Fatalf("PUT: %d", st)
					}
					expect("PUT", fmt.Sprintf("%s update %d [%d]", r.Table, x, code))
					if st := a.do(http.MethodPatch, r.item(x), map[string]any{name: "renamed"}).Status; st != http.StatusOK {
						t.Fatalf("PATCH: %d", st)
					}
					expect("PATCH", fmt.Sprintf("%s update %d [%d]", r.Table, x, nameField))
					a.do(http.MethodPatch, r.item(x), map[string]any{name: "renamed"})
					expect("a PATCH that changes nothing")
					wantError(t, a.do(http.MethodPost, r.coll(), r.body("x2", "dup", nil)), http.StatusBadRequest)
					expect("a refused create")
					if st := a.do(http.MethodDelete, r.item(x), nil).Status; st != http.StatusNoContent {
						t.Fatalf("DELETE: %d", st)
					}
					expect("DELETE", fmt.Sprintf("%s delete %d", r.Table, x))

					// The seed command's bulk load.
					l := server.Loaders(a.db)[desc.Name]
					if err := l.BulkLoad(context.Background(), func() error {
						return seed.Fill(context.Background(), l, seed.Options{Count: 7, Seed: 3, First: 100})
					}); err != nil {
						t.Fatal(err)
					}
					if got := rec.take(); len(got) != 7 {
						t.Fatalf("seed: the structure saw %q, want 7 inserts", got)
					}
				})
			}
		})
	}
}
