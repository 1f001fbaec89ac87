package server_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"personnel/casefold"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/server"
)

// An upgrade: the table holds records that an earlier version wrote
// without substring indexes (created, and renamed, behind this version's
// back), and no state says the indexes are whole. A replica of this
// version that starts then answers searches from the table itself; after
// personnel reindex every search goes through the indexes, and every
// answer is right throughout.
func TestSearch_ATableFromBeforeItsIndexesIsSearchedRightBeforeAndAfterReindex(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ctx := context.Background()
		var ids []int
		for i := range 5 {
			ids = append(ids, a.create(r, fmt.Sprintf("NEW%02d", i), "Ärzte Köln", nil))
		}
		// What the earlier version wrote.
		for i := range 3 {
			name := "ÄRZTE KÖLN (old)"
			s := a.db.SQL().Raw("INSERT INTO ").Ident(r.Table).Raw(" (").Ident(r.Fields.Code).Raw(", ").Ident(r.Fields.Code + "_fold").
				Raw(", ").Ident(r.Fields.Name).Raw(", ").Ident(r.Fields.Name + "_fold").Raw(") VALUES (").Arg(fmt.Sprintf("OLD%02d", i)).
				Raw(", ").Arg(fmt.Sprintf("old%02d", i)).Raw(", ").Arg(name).Raw(", ").Arg(casefold.Fold(name)).Raw(")")
			a.exec(s)
		}
		rename := a.db.SQL().Raw("UPDATE ").Ident(r.Table).Raw(" SET ").Ident(r.Fields.Name).Raw(" = ").Arg("Anders").
			Raw(", ").Ident(r.Fields.Name + "_fold").Raw(" = ").Arg("anders").Raw(" WHERE ").Ident("id").Raw(" = ").Arg(ids[0])
		a.exec(rename)
		a.exec(a.db.SQL().Raw("DELETE FROM ").Ident("personnel_derived").Raw(" WHERE ").Ident("table_name").Raw(" = ").Arg(r.Table))

		b := a.replica(t)
		d := b.db
		structure := db.SubstringStructure(r.Fields.Name + "_fold")
		if d.Trusted(ctx, r.Table, structure) {
			t.Fatal("after the start the name's substring index is trusted")
		}
		check := func(when string) {
			t.Helper()
			for q, want := range map[string]int{"ärzte köln": 7, "KÖLN (OLD)": 3, "anders": 1, "ä": 7} {
				if lb := b.list(r, r.Fields.Name+"_icontains="+url.QueryEscape(q)+"&page_size=2"); lb.Count != want {
					t.Errorf("%s: a search of %q counts %d, want %d", when, q, lb.Count, want)
				}
			}
		}
		check("before the reindex")
		if err := d.Reindex(ctx, false, nil, nil); err != nil {
			t.Fatal(err)
		}
		if !d.Trusted(ctx, r.Table, structure) {
			t.Fatal("the substring index is not trusted after the reindex")
		}
		if err := d.Check(ctx); err != nil {
			t.Fatalf("after the reindex: %v", err)
		}
		check("after the reindex")
	})
}

// replica starts another replica of this version on a's database, as a
// rolling upgrade would.
func (a *api) replica(t testing.TB) *api {
	t.Helper()
	d := dbtest.MustOpen(t, a.cfg)
	srv, err := server.New(a.cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	b := *a
	b.db, b.srv, b.h = d, srv, srv.Handler()
	return &b
}

// exec runs a statement behind the service's back.
func (a *api) exec(s *db.SQL) {
	a.t.Helper()
	if _, err := a.db.Write().ExecContext(context.Background(), s.String(), s.Args...); err != nil {
		a.t.Fatalf("%s: %v", s.String(), err)
	}
}
