package db_test

import (
	"bytes"
	"context"
	stdsql "database/sql"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/ent"
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

// A substring search on PostgreSQL is answered from the trigram index of
// the folded column (the planner is kept off a full scan here, as a large
// table would keep it), with the store's own LIKE ... ESCAPE '!'.
func TestPostgres_SubstringSearchUsesTheTrigramIndex(t *testing.T) {
	d, _ := postgresBackend(t).Open(t)
	ctx := context.Background()
	names, err := d.TrigramIndexes(ctx, cols.Table)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 {
		t.Fatalf("trigram indexes on %s: %v, want one on each searched column", cols.Table, names)
	}
	err = d.InTx(ctx, func(tx *ent.Client) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
			return err
		}
		s := d.SQL().Raw("EXPLAIN SELECT ").Ident("id").Raw(" FROM ").Ident(cols.Table).Raw(" AS ").Ident("r").
			Raw(" WHERE ").Col("r", cols.CodeFold).Raw(" LIKE ").Arg("%ärz!%%").Raw(" ESCAPE '!'")
		rows, err := tx.QueryContext(ctx, s.String(), s.Args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		var plan strings.Builder
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan.WriteString(line + "\n")
		}
		if !strings.Contains(plan.String(), "_trgm") {
			t.Errorf("the search does not use a trigram index:\n%s", plan.String())
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A role that may not create pg_trgm still gets a working service: the
// migration succeeds, one warning names the statement a DBA can run, and
// searches scan. Once the DBA has run it, the next migration adds the
// indexes.
func TestPostgres_WithoutPgTrgmStartsWarnsOnceAndSearchesByScan(t *testing.T) {
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
		// Objects in the public schema, but not CREATE on the database,
		// which creating even a trusted extension needs.
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
	warnings := strings.Count(logs.String(), "level=WARN")
	if warnings != 1 || !strings.Contains(logs.String(), "CREATE EXTENSION IF NOT EXISTS pg_trgm") {
		t.Fatalf("want one warning naming the statement, got:\n%s", logs.String())
	}
	if names, err := d.TrigramIndexes(ctx, cols.Table); err != nil || len(names) != 0 {
		t.Fatalf("trigram indexes without pg_trgm: %v, %v", names, err)
	}
	if _, err := insert(d, "ärzte-köln", nil); err != nil {
		t.Fatal(err)
	}
	var n int
	s := d.SQL().Raw("SELECT COUNT(*) FROM ").Ident(cols.Table).Raw(" WHERE ").Ident(cols.CodeFold).Raw(" LIKE ").Arg("%te-k%").Raw(" ESCAPE '!'")
	if err := queryOne(d.Read(), s, &n); err != nil || n != 1 {
		t.Fatalf("search by scan: %d, %v", n, err)
	}

	if _, err := admin.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// (The row inserted behind the service's back makes the start mend
	// the table's kept count, with a warning of its own.)
	if names, err := d.TrigramIndexes(ctx, cols.Table); err != nil || len(names) < 2 || strings.Contains(logs.String(), "pg_trgm") {
		t.Fatalf("after a DBA created pg_trgm: indexes %v (%v), logs %s", names, err, logs.String())
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

// A bulk load on PostgreSQL leaves the table analyzed, so the planner
// knows the rows at once (pg_class.reltuples stays -1, "never analyzed",
// until something analyzes the table).
func TestPostgres_BulkLoadVacuumsAndAnalyzesTheTable(t *testing.T) {
	d, _ := postgresBackend(t).Open(t)
	ctx := context.Background()
	err := d.BulkLoad(ctx, cols.Table, func() error {
		for _, code := range []string{"bulk1", "bulk2", "bulk3"} {
			if _, err := insert(d, code, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var tuples float64
	var pages, visible int
	s := d.SQL().Raw("SELECT reltuples, relpages, relallvisible FROM pg_class WHERE oid = ").Arg(cols.Table).Raw("::regclass")
	if err := queryOne(d.Read(), s, &tuples, &pages, &visible); err != nil || tuples != 3 || pages == 0 || visible != pages {
		t.Fatalf("after the bulk load pg_class says %v tuples, %d pages of which %d all-visible (%v); want 3 tuples and every page all-visible",
			tuples, pages, visible, err)
	}
}
