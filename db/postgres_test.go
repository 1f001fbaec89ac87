package db_test

import (
	"bytes"
	"context"
	stdsql "database/sql"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
)

// postgresBackend returns the PostgreSQL backend, skipping the test when
// the suite runs without one (Backends fails instead when CI=true).
func postgresBackend(t *testing.T) dbtest.Backend {
	t.Helper()
	for _, b := range dbtest.Backends(t) {
		if b.Name == config.DriverPostgres {
			return b
		}
	}
	t.Skip("needs PostgreSQL: set " + dbtest.EnvPostgresDSN)
	return dbtest.Backend{}
}

// A role that owns no database and may create nothing but tables in its
// schema (no extension, no CREATE on the database) still gets its
// substring indexes: they are plain tables.
func TestPostgres_ARoleThatMayOnlyCreateTablesGetsSubstringIndexes(t *testing.T) {
	b := postgresBackend(t)
	ctx := context.Background()
	cfg := b.Config(t) // a fresh database owned by the administrative role
	admin, err := stdsql.Open("pgx", cfg.DBDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	role := "personnel_t_norole_" + strings.TrimPrefix(dbName(t, admin), "personnel_t_")
	for _, stmt := range []string{
		`CREATE ROLE "` + role + `" LOGIN`,
		`GRANT USAGE, CREATE ON SCHEMA public TO "` + role + `"`,
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		admin, err := stdsql.Open("pgx", cfg.DBDSN)
		if err != nil {
			return
		}
		defer admin.Close()
		admin.ExecContext(ctx, `DROP OWNED BY "`+role+`"`)
		admin.ExecContext(ctx, `DROP ROLE IF EXISTS "`+role+`"`)
	})
	roleCfg := *cfg
	roleCfg.DBDSN = withUser(t, cfg.DBDSN, role)

	var logs bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	d := dbtest.MustOpen(t, &roleCfg)
	if logs.Len() > 0 {
		t.Fatalf("the start warned:\n%s", logs.String())
	}
	for _, col := range cols.Search {
		if !d.Trusted(ctx, cols.Table, db.SubstringStructure(col)) {
			t.Errorf("the substring index of %s is not trusted in a new database", col)
		}
	}
	indexed(t, d, map[string]string{"ärzte-köln": "ärzte-köln"})
	if n := countFound(t, d, "te-k"); n != 1 {
		t.Fatalf("the index finds %d records, want 1", n)
	}
}

func dbName(t *testing.T, c *stdsql.DB) string {
	t.Helper()
	var name string
	if err := c.QueryRow("SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return name
}

// withUser returns the PostgreSQL DSN dsn logging in as user instead.
func withUser(t *testing.T, dsn, user string) string {
	t.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(user)
		q := u.Query()
		q.Del("user")
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " user=" + user // the last of a repeated keyword wins
}

// A bulk load on PostgreSQL leaves the table and its substring indexes
// analyzed, so the planner knows the rows at once (pg_class.reltuples
// stays -1, "never analyzed", until something analyzes a table), and
// vacuumed, so that a count reads the index alone (relallvisible: pages
// whose rows every transaction sees, which an index-only scan need not
// visit).
func TestPostgres_BulkLoadAnalyzesAndVacuumsTheTableAndItsIndexes(t *testing.T) {
	d, _ := postgresBackend(t).Open(t)
	ctx := context.Background()
	err := d.Table(res).BulkLoad(ctx, func() error {
		for i := range 300 {
			insertNamed(t, d, fmt.Sprintf("bulk%d", i), "bulk load")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{cols.Table, db.SubstringTable(cols.Table, cols.CodeFold)} {
		var tuples float64
		var pages, visible int
		s := d.SQL().Raw("SELECT reltuples, relpages, relallvisible FROM pg_class WHERE oid = ").Arg(table).Raw("::regclass")
		if err := queryOne(d.Reader(), s, &tuples, &pages, &visible); err != nil || tuples <= 0 || pages == 0 || visible != pages {
			t.Fatalf("after the bulk load %s has reltuples %v, relpages %d, relallvisible %d (%v): want it analyzed and vacuumed",
				table, tuples, pages, visible, err)
		}
	}
}
