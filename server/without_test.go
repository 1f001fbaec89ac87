package server_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/seed"
	"personnel/server"
)

// A replica with every performance mechanism turned off
// (PERSONNEL_WITHOUT, for measuring what each wins) answers every list,
// search, deep page, count and subtree exactly as one with all of them,
// before and after it writes: the mechanisms change the cost of an
// answer, never the answer.
func TestWithout_EveryMechanismOffAnswersTheSame(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			a := newAPI(t, b)
			r := res{department(t)}
			ctx := context.Background()
			if err := seed.Fill(ctx, server.Loaders(a.db)[r.Name], seed.Options{Count: 1500, Seed: 3}); err != nil {
				t.Fatal(err)
			}
			off := a.without(t, config.Mechanisms{IDBlocks: true, StoredCount: true, CountCache: true, Planner: true, GroupCommit: true, MySQLPrepared: true, WritePipeline: true})
			ask := func(when string) {
				t.Helper()
				paths := []string{
					r.coll(),
					r.query("page=130"),
					r.query("page=3&ordering=-id"),
					r.query("page=2&ordering=-" + r.Fields.Name),
					r.query("page=2&" + r.Fields.Code + "_icontains=0"),
				}
				for _, term := range []string{"sales", "ärzte", "zürich", "ik", "wien 1", "nothing like it"} {
					q := url.QueryEscape(term)
					paths = append(paths,
						r.query(r.Fields.Name+"_icontains="+q),
						r.query(r.Fields.Name+"_icontains="+q+"&page_size=100&ordering="+r.Fields.Name),
						r.query(r.Fields.Name+"_icontains="+q+"&"+r.Fields.Parent+"_isnull=false"),
						r.query(r.Fields.Name+"_icontains="+q+"&"+r.Fields.Code+"_icontains=1"),
						r.query("search="+q),
					)
				}
				root := a.list(r, r.Fields.Parent+"_isnull=true&page_size=1").Data[0].ID
				paths = append(paths, r.item(root)+"descendants/?page=2", r.query(r.Fields.Parent+"="+itoa(root)))
				for _, p := range paths {
					want, got := a.do(http.MethodGet, p, nil), off.do(http.MethodGet, p, nil)
					if want.Status != http.StatusOK || got.Status != want.Status || string(got.Body) != string(want.Body) {
						t.Errorf("%s, GET %s:\n with every mechanism:    %s\n without any:             %s", when, p, want, got)
					}
				}
			}
			// The searches find pages of records, not nothing.
			if n := a.list(r, r.Fields.Name+"_icontains=sales").Count; n < 20 {
				t.Fatalf("%d records named with sales: the seed no longer names them so", n)
			}
			ask("after seeding")
			id := off.create(r, "WO-1", "Sales Wien 1", nil)
			off.do(http.MethodPatch, r.item(1), map[string]any{r.Fields.Name: "Ärzte Zürich renamed"})
			off.do(http.MethodDelete, r.item(id), nil)
			off.create(r, "WO-2", "Wartung Zürich", 2)
			ask("after writes by the replica without them")
			if err := a.db.Check(ctx); err != nil {
				t.Errorf("after writes without the mechanisms: %v", err)
			}
		})
	}
}

// department is the departments' config entry.
func department(t testing.TB) config.Resource {
	for _, desc := range server.CompiledResources() {
		if desc.Name == "department" {
			return desc
		}
	}
	t.Fatal("no department resource")
	return config.Resource{}
}

// without returns a replica of a over the same database with the
// mechanisms m turns off.
func (a *api) without(t *testing.T, m config.Mechanisms) *api {
	t.Helper()
	cfg := *a.cfg
	cfg.Without = m
	d := dbtest.MustOpen(t, &cfg)
	srv, err := server.New(&cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.db, b.srv, b.h, b.cfg = d, srv, srv.Handler(), &cfg
	return &b
}
