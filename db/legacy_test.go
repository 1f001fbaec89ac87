package db_test

import (
	"compress/gzip"
	"context"
	stdsql "database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"ariga.io/atlas/sql/migrate"
	"ariga.io/atlas/sql/mysql"
	"ariga.io/atlas/sql/postgres"
	atlas "ariga.io/atlas/sql/schema"
	"ariga.io/atlas/sql/sqlite"
	"github.com/jackc/pgx/v5/stdlib"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/server"
)

// A database made by the last version before versioned migrations
// (commit 2bd65ad: 120 departments and 120 areas from `personnel seed
// --count 120 --seed 7`, and the editor alice; testdata/legacy/README)
// starts under this version: it is adopted as having had step 1, the
// later steps run, and every record is kept, every structure it had is
// still whole and trusted (the change feed, which it did not have, is
// built by the rebuild a replica runs once no older replica is live), and
// the schema is exactly a new database's. (On SQLite it also held what an
// earlier version searched with, which the steps drop.)
func TestMigrate_ADatabaseMadeBeforeVersionedMigrationsIsUpgradedWithEveryRecord(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.Config(t)
			restoreLegacy(t, cfg)
			d := dbtest.MustOpen(t, cfg)
			server.Loaders(d) // registers every shipped resource's table
			for table, want := range map[string]int{"personnel_department": 120, "personnel_area": 120, "personnel_user": 1} {
				var n int
				if err := db.QueryRow(ctx, d.Reader(), "SELECT COUNT(*) FROM "+d.Quote(table), nil, &n); err != nil || n != want {
					t.Fatalf("%s holds %d records after the upgrade (%v), want %d", table, n, err, want)
				}
			}
			for _, tb := range d.Tables() {
				// A resource the old database did not have (positions) is
				// created by a later step, empty, and so trusted whole.
				old := tb.Name == "personnel_department" || tb.Name == "personnel_area"
				for _, s := range tb.Structures() {
					if trusted := d.Trusted(ctx, tb.Name, s.Name()); trusted != (s.Name() != db.FeedStructure || !old) {
						t.Errorf("%s of %s is trusted after the upgrade: %v", s.Name(), tb.Name, trusted)
					}
				}
			}
			if err := d.Reindex(ctx, false, nil, nil); err != nil {
				t.Fatal(err)
			}
			for _, tb := range d.Tables() {
				if !d.Trusted(ctx, tb.Name, db.FeedStructure) {
					t.Errorf("the feed of %s is not trusted after the rebuild", tb.Name)
				}
			}
			if err := d.Check(ctx); err != nil {
				t.Fatalf("after the upgrade: %v", err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatalf("a second start: %v", err)
			}
			fresh, _ := b.Open(t)
			if diff := schemaDiff(t, fresh, d); diff != "" {
				t.Fatalf("the upgraded schema differs from a new database's:\n%s", diff)
			}
		})
	}
}

// restoreLegacy puts the legacy database of cfg's backend where cfg
// points.
func restoreLegacy(t *testing.T, cfg *config.Config) {
	t.Helper()
	ctx := context.Background()
	switch cfg.DBDriver {
	case config.DriverSQLite:
		if err := os.WriteFile(cfg.DBDSN, gunzip(t, "personnel.db.gz"), 0o600); err != nil {
			t.Fatal(err)
		}
		// What an earlier version searched with, which step 2 drops.
		conn, err := stdsql.Open("sqlite", cfg.DBDSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for _, stmt := range []string{
			"CREATE VIRTUAL TABLE `personnel_department_search` USING fts5(`dept_name_fold`, content=`personnel_department`, content_rowid=`id`, tokenize='trigram')",
			"CREATE TRIGGER `personnel_department_search_insert` AFTER INSERT ON `personnel_department` BEGIN INSERT INTO `personnel_department_search`(rowid, `dept_name_fold`) VALUES (new.`id`, new.`dept_name_fold`); END",
		} {
			if _, err := conn.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	case config.DriverMySQL:
		conn, err := stdsql.Open("mysql", cfg.DBDSN+"?multiStatements=true")
		if strings.Contains(cfg.DBDSN, "?") {
			conn, err = stdsql.Open("mysql", cfg.DBDSN+"&multiStatements=true")
		}
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, string(gunzip(t, "mariadb.sql.gz"))); err != nil {
			t.Fatal(err)
		}
	case config.DriverPostgres:
		conn, err := stdsql.Open("pgx", cfg.DBDSN)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c, err := conn.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		dump := string(gunzip(t, "postgres.sql.gz"))
		// The dump empties the session's search_path (a connection of its
		// own, closed after) and holds statements the simple protocol runs.
		err = c.Raw(func(dc any) error {
			_, err := dc.(*stdlib.Conn).Conn().PgConn().Exec(ctx, dump).ReadAll()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "legacy", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// schemaDiff describes how the schema of got differs from want's, as
// Atlas inspects them; "" when they are the same.
func schemaDiff(t *testing.T, want, got *db.DB) string {
	t.Helper()
	ctx := context.Background()
	inspect := func(d *db.DB) (*atlas.Schema, atlas.Differ) {
		pools := d.Pools()
		pool := pools["write"]
		if pool == nil {
			pool = pools[d.Dialect]
		}
		var drv migrate.Driver
		var err error
		switch {
		case d.SQLite():
			drv, err = sqlite.Open(pool)
		case d.MySQL():
			drv, err = mysql.Open(pool)
		default:
			drv, err = postgres.Open(pool)
		}
		if err != nil {
			t.Fatal(err)
		}
		s, err := drv.InspectSchema(ctx, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Name, s.Attrs = "main", nil
		for _, tb := range s.Tables {
			var attrs []atlas.Attr
			for _, a := range tb.Attrs {
				switch a.(type) {
				case *mysql.AutoIncrement, *sqlite.CreateStmt:
					continue
				}
				attrs = append(attrs, a)
			}
			tb.Attrs = attrs
		}
		return s, drv
	}
	ws, differ := inspect(want)
	gs, _ := inspect(got)
	changes, err := differ.SchemaDiff(ws, gs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range changes {
		switch c := c.(type) {
		case *atlas.AddTable:
			out = append(out, "extra table "+c.T.Name)
		case *atlas.DropTable:
			out = append(out, "missing table "+c.T.Name)
		case *atlas.ModifyTable:
			for _, tc := range c.Changes {
				out = append(out, c.T.Name+": "+describe(tc))
			}
		default:
			out = append(out, describe(c))
		}
	}
	return strings.Join(out, "\n")
}

func describe(c atlas.Change) string {
	switch c := c.(type) {
	case *atlas.AddColumn:
		return "extra column " + c.C.Name
	case *atlas.DropColumn:
		return "missing column " + c.C.Name
	case *atlas.ModifyColumn:
		return "column " + c.To.Name + " differs"
	case *atlas.AddIndex:
		return "extra index " + c.I.Name
	case *atlas.DropIndex:
		return "missing index " + c.I.Name
	case *atlas.ModifyIndex:
		return "index " + c.To.Name + " differs"
	case *atlas.AddForeignKey:
		return "extra foreign key " + c.F.Symbol
	case *atlas.DropForeignKey:
		return "missing foreign key " + c.F.Symbol
	}
	return fmt.Sprintf("%T", c)
}
