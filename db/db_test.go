package db_test

import (
	"context"
	stdsql "database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/ent"
	"personnel/record"
)

// res is the first hierarchical resource of the shipped list, and cols
// the names of its table and columns.
var res, cols = func() (config.Resource, columns) {
	rs, err := config.Resources()
	if err != nil {
		panic(err)
	}
	for _, r := range rs {
		if r.Hierarchical() {
			fs := record.New(r)
			c := columns{Table: r.Table, Code: fs.List[fs.Code].Column, CodeFold: fs.List[fs.Code].Fold,
				Name: fs.List[fs.Name].Column, NameFold: fs.List[fs.Name].Fold, Parent: fs.List[fs.Parent].Column}
			for _, i := range fs.Indexed() {
				c.Search = append(c.Search, fs.List[i].Fold)
			}
			return r, c
		}
	}
	panic("no hierarchical resource is shipped")
}()

// columns names a resource table and its columns.
type columns struct {
	Table, Code, CodeFold, Name, NameFold, Parent string
	Search                                        []string // folded columns with a substring index
}

// insert writes a row of that resource directly, bypassing the service.
func insert(d *db.DB, code string, parent any) (int64, error) {
	s := d.SQL().Raw("INSERT INTO ").Ident(cols.Table).Raw(" (").Ident(cols.Code).Raw(", ").Ident(cols.CodeFold).Raw(", ").
		Ident(cols.Name).Raw(", ").Ident(cols.NameFold).Raw(", ").Ident(cols.Parent).Raw(") VALUES (").
		Arg(code).Raw(", ").Arg(code).Raw(", ").Arg("n").Raw(", ").Arg("n").Raw(", ").Arg(parent).Raw(")")
	if d.Postgres() {
		var id int64
		err := queryOne(db.EntTx{Client: d.Write()}, s.Raw(" RETURNING ").Ident("id"), &id)
		return id, err
	}
	res, err := d.Write().ExecContext(context.Background(), s.String(), s.Args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// column runs a query of one column and returns its values.
func column[T any](t *testing.T, c *ent.Client, query string, args ...any) []T {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// queryOne runs the one-row query s in tx and scans it into dest.
func queryOne(tx db.Tx, s *db.SQL, dest ...any) error {
	return db.QueryRow(context.Background(), tx, s.String(), s.Args, dest...)
}

func TestOpen_SQLiteCreatesTheFileAndItsDirectory(t *testing.T) {
	cfg := config.Default()
	cfg.DBDSN = filepath.Join(t.TempDir(), "new", "dir", "personnel.db")
	dbtest.MustOpen(t, cfg)
	if _, err := os.Stat(cfg.DBDSN); err != nil {
		t.Fatalf("database file not created: %v", err)
	}
}

func TestOpen_SQLiteRefusesAPathWithAQuery(t *testing.T) {
	cfg := config.Default()
	cfg.DBDSN = filepath.Join(t.TempDir(), "x.db?mode=ro")
	if _, err := db.Open(context.Background(), cfg); err == nil {
		t.Fatal("a path with '?' was accepted")
	}
}

func TestSQLite_EveryConnectionHasForeignKeysAndWAL(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	for name, c := range map[string]*ent.Client{"reader": d.Read(), "writer": d.Write()} {
		for pragma, want := range map[string]string{"foreign_keys": "1", "journal_mode": "wal", "synchronous": "2"} {
			rows, err := c.QueryContext(context.Background(), "PRAGMA "+pragma)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			rows.Next()
			_ = rows.Scan(&got)
			rows.Close()
			if got != want {
				t.Errorf("%s: PRAGMA %s = %q, want %q", name, pragma, got, want)
			}
		}
	}
	if _, err := insert(d, "X", nil); err != nil {
		t.Fatalf("writer refused a write: %v", err)
	}
	_, err := d.Read().ExecContext(context.Background(), "DELETE FROM `"+cols.Table+"`")
	if err == nil {
		t.Fatal("the read pool accepted a write")
	}
}

func TestDatabase_ForeignKeyRefusesOrphansAndParentDeletes(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			if _, err := insert(d, "ORPHAN", 424242); !db.IsForeignKeyViolation(err) {
				t.Fatalf("orphan insert: %v, want a foreign key violation", err)
			}
			parent, err := insert(d, "P", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := insert(d, "C", parent); err != nil {
				t.Fatal(err)
			}
			del := d.SQL().Raw("DELETE FROM ").Ident(cols.Table).Raw(" WHERE ").Ident("id").Raw(" = ").Arg(parent)
			_, err = d.Write().ExecContext(context.Background(), del.String(), del.Args...)
			if !db.IsForeignKeyViolation(err) {
				t.Fatalf("deleting a parent: %v, want a foreign key violation", err)
			}
		})
	}
}

func TestDatabase_UniqueIndexOnTheFoldedCode(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			if _, err := insert(d, "hr", nil); err != nil {
				t.Fatal(err)
			}
			if _, err := insert(d, "hr", nil); !db.IsUniqueViolation(err) {
				t.Fatalf("second insert: %v, want a unique violation", err)
			}
			if _, err := insert(d, "hr ", nil); err != nil {
				t.Fatalf("'hr ' is a different code (no padding): %v", err)
			}
		})
	}
}

func TestMigrate_RunsAgainWithoutChanges(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			if _, err := insert(d, "KEEP", nil); err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(context.Background()); err != nil {
				t.Fatalf("second migration: %v", err)
			}
			var n int
			if err := queryOne(d.Reader(), d.SQL().Raw("SELECT COUNT(*) FROM ").Ident(cols.Table), &n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("%d rows after migrating again, want 1", n)
			}
		})
	}
}

func TestInTx_RollsBackWhenTheFunctionFails(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			boom := fmt.Errorf("boom")
			err := d.InEntTx(context.Background(), func(tx *ent.Client) error {
				if _, err := tx.ExecContext(context.Background(), d.SQL().Raw("DELETE FROM ").Ident(cols.Table).String()); err != nil {
					return err
				}
				if _, err := tx.Department.Create().SetCode("T").SetCodeFold("t").SetName("n").SetNameFold("n").Save(context.Background()); err != nil {
					return err
				}
				return boom
			})
			if err != boom {
				t.Fatalf("InTx = %v, want the function's error", err)
			}
			if n, _ := d.Read().Department.Query().Count(context.Background()); n != 0 {
				t.Fatalf("%d rows after a rolled-back transaction", n)
			}
		})
	}
}

func TestIsUnavailable_RefusedConnection(t *testing.T) {
	for driver, dsn := range map[string]string{
		"mysql": "root@tcp(127.0.0.1:1)/x?timeout=1s",
		"pgx":   "postgres://root@127.0.0.1:1/x?connect_timeout=1",
	} {
		sqlDB, err := stdsql.Open(driver, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer sqlDB.Close()
		err = sqlDB.PingContext(context.Background())
		if err == nil || !db.IsUnavailable(err) {
			t.Fatalf("%s: ping of a closed port: %v; IsUnavailable = false", driver, err)
		}
	}
}

// Every backend takes the row locks its flavour calls for, and accepts
// them; a flavour forced for the tests (TiDB's path against MariaDB) is
// the one in effect, so a CI step that forces it cannot pass untested.
func TestLocks_FollowTheFlavorAndAreAccepted(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			if f := os.Getenv(dbtest.EnvMySQLFlavor); f != "" && b.Name == config.DriverMySQL && d.Flavor != f {
				t.Fatalf("flavor %q, but %s=%s", d.Flavor, dbtest.EnvMySQLFlavor, f)
			}
			want, ok := map[string]db.Locks{
				"sqlite":   {},
				"mysql":    {Share: " LOCK IN SHARE MODE", Update: " FOR UPDATE"},
				"mariadb":  {Share: " LOCK IN SHARE MODE", Update: " FOR UPDATE"},
				"tidb":     {Share: " FOR UPDATE", Update: " FOR UPDATE"},
				"postgres": {Share: " FOR SHARE", Update: " FOR UPDATE"},
			}[d.Flavor]
			if got := d.Locks(); !ok || got != want {
				t.Fatalf("flavor %q: locks %+v, want %+v", d.Flavor, got, want)
			}
			id, err := insert(d, "LOCKED", nil)
			if err != nil {
				t.Fatal(err)
			}
			err = d.InTx(context.Background(), func(tx db.Tx) error {
				for _, lock := range []string{d.Locks().Share, d.Locks().Update} {
					var got int64
					s := d.SQL().Raw("SELECT ").Ident("id").Raw(" FROM ").Ident(cols.Table).Raw(" WHERE ").Ident("id").Raw(" = ").Arg(id).Raw(lock)
					if err := queryOne(tx, s, &got); err != nil || got != id {
						return fmt.Errorf("%s: %d, %w", s.String(), got, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A bulk load into an empty table drops the indexes on gram of the
// table's substring indexes and makes them again at the end, even when
// the load fails; a load that never reached its end (the process died)
// leaves them missing until the next start makes them (RestoreIndexes).
// A load into a table that holds records keeps them.
func TestBulkLoad_MakesTheIndexesOnGramAgain(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, _ := b.Open(t)
			table := d.Table(res)
			ctx := context.Background()
			gramIndexes := func() int {
				t.Helper()
				s := d.SQL()
				switch {
				case d.SQLite():
					s.Raw("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name LIKE ").Arg(cols.Table + "_%_substr_gram")
				case d.Postgres():
					s.Raw("SELECT COUNT(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname LIKE ").Arg(cols.Table + "_%_substr_gram")
				default:
					s.Raw("SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name LIKE ").Arg(cols.Table + "_%_substr_gram")
				}
				var n int
				if err := queryOne(d.Reader(), s, &n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			boom := fmt.Errorf("boom")
			err := table.BulkLoad(ctx, func() error {
				if n := gramIndexes(); n != 0 {
					t.Errorf("during the load into an empty table %d indexes on gram are left", n)
				}
				insertNamed(t, d, "bulk", "bulk load")
				return boom
			})
			if err != boom {
				t.Fatalf("bulk load: %v, want the load's error", err)
			}
			if n := gramIndexes(); n != len(cols.Search) {
				t.Fatalf("after the load %d indexes on gram, want %d", n, len(cols.Search))
			}
			err = table.BulkLoad(ctx, func() error {
				if n := gramIndexes(); n != len(cols.Search) {
					t.Errorf("during a load into a table with records %d indexes on gram, want %d", n, len(cols.Search))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, col := range cols.Search {
				s := d.SQL().Raw("DROP INDEX ").Ident(db.SubstringTable(cols.Table, col) + "_gram")
				if d.MySQL() {
					s = d.SQL().Raw("ALTER TABLE ").Ident(db.SubstringTable(cols.Table, col)).Raw(" DROP KEY ").Ident(db.SubstringTable(cols.Table, col) + "_gram")
				}
				if _, err := d.Write().ExecContext(ctx, s.String()); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.RestoreIndexes(ctx); err != nil {
				t.Fatal(err)
			}
			if n := gramIndexes(); n != len(cols.Search) {
				t.Fatalf("after a start %d indexes on gram, want %d", n, len(cols.Search))
			}
		})
	}
}

// On SQLite a bulk load keeps the writer's temporary storage in files
// (temp_store 1), where what it sorts and journals does not grow the
// process's memory with the load, and gives it back to memory (2), for
// group commit's savepoints, when the load ends, also when it fails.
func TestBulkLoad_OnSQLiteKeepsTemporaryStorageInFilesWhileItRuns(t *testing.T) {
	d, _ := dbtest.Backends(t)[0].Open(t)
	if !d.SQLite() {
		t.Fatalf("the first backend is %s, not SQLite", d.Dialect)
	}
	ctx := context.Background()
	tempStore := func() int {
		t.Helper()
		var n int
		if err := queryOne(db.EntTx{Client: d.Write()}, d.SQL().Raw("PRAGMA temp_store"), &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := tempStore(); got != 2 {
		t.Fatalf("before a load temp_store is %d, want 2 (memory)", got)
	}
	boom := fmt.Errorf("boom")
	err := d.Table(res).BulkLoad(ctx, func() error {
		if got := tempStore(); got != 1 {
			t.Errorf("during a load temp_store is %d, want 1 (files)", got)
		}
		return boom
	})
	if err != boom {
		t.Fatalf("bulk load: %v, want the load's error", err)
	}
	if got := tempStore(); got != 2 {
		t.Fatalf("after a load temp_store is %d, want 2 (memory)", got)
	}
}
