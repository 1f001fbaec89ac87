// Package dbtest gives tests a fresh, migrated database on every backend
// the suite runs against: SQLite always, MySQL/MariaDB when
// PERSONNEL_TEST_MYSQL_DSN is set, and PostgreSQL when
// PERSONNEL_TEST_POSTGRES_DSN is set. A test written once runs on all.
//
// When CI=true, a missing or unusable DSN fails the test instead of
// leaving a backend untested.
package dbtest

import (
	"context"
	"crypto/rand"
	stdsql "database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"personnel/config"
	"personnel/db"
)

// EnvMySQLDSN names the environment variable with an administrative MySQL
// DSN (one that may create and drop databases).
const EnvMySQLDSN = "PERSONNEL_TEST_MYSQL_DSN"

// EnvMySQLFlavor names the environment variable that forces the MySQL
// backend's flavour (PERSONNEL_DB_FLAVOR): "tidb" runs TiDB's code path
// (exclusive locks where the others share) against MariaDB, as no TiDB
// server is at hand.
const EnvMySQLFlavor = "PERSONNEL_TEST_MYSQL_FLAVOR"

// EnvPostgresDSN names the environment variable with an administrative
// PostgreSQL DSN (a URL or keyword DSN of a role that may create and drop
// databases).
const EnvPostgresDSN = "PERSONNEL_TEST_POSTGRES_DSN"

// Backend is a database server the tests run against.
type Backend struct {
	Name     string // the driver: "sqlite", "mysql" or "postgres"
	adminDSN string
}

// Backends returns the backends to run against.
func Backends(tb testing.TB) []Backend {
	tb.Helper()
	bs := []Backend{{Name: config.DriverSQLite}}
	for _, server := range []struct{ driver, env string }{
		{config.DriverMySQL, EnvMySQLDSN},
		{config.DriverPostgres, EnvPostgresDSN},
	} {
		dsn := os.Getenv(server.env)
		switch {
		case dsn != "":
			bs = append(bs, Backend{Name: server.driver, adminDSN: dsn})
		case os.Getenv("CI") == "true":
			tb.Fatalf("CI=true but %s is not set: the %s tests must run in CI", server.env, server.driver)
		}
	}
	return bs
}

// Networked reports whether b is a database server reached over TCP.
func (b Backend) Networked() bool { return b.Name != config.DriverSQLite }

// Config returns a configuration for a fresh, empty database on b, removed
// when the test ends. The schema is not created yet.
func (b Backend) Config(tb testing.TB) *config.Config {
	tb.Helper()
	cfg := config.Default()
	cfg.DBDriver = b.Name
	// Tests sign tokens with a fixed secret and hash passwords cheaply.
	cfg.JWTSecret = []byte("test-secret-test-secret-test-secret!")
	cfg.BcryptCost = 4
	// Tests check answers, not speed: a loaded machine (the race
	// detector, packages tested in parallel, other work) may slow a
	// request past the shipped deadline without anything being wrong.
	// The tests of the deadline set their own.
	cfg.DBTimeout = time.Minute
	switch b.Name {
	case config.DriverSQLite:
		cfg.DBDSN = filepath.Join(tb.TempDir(), "personnel.db")
	case config.DriverMySQL:
		cfg.DBDSN = freshMySQLDatabase(tb, b.adminDSN)
		if f := os.Getenv(EnvMySQLFlavor); f != "" {
			cfg.DBFlavor = f
		}
	case config.DriverPostgres:
		cfg.DBDSN = freshPostgresDatabase(tb, b.adminDSN)
	}
	return cfg
}

// Open returns a fresh, migrated database on b, closed when the test ends.
func (b Backend) Open(tb testing.TB) (*db.DB, *config.Config) {
	tb.Helper()
	cfg := b.Config(tb)
	return MustOpen(tb, cfg), cfg
}

// MustOpen opens and migrates the database cfg names, closed when the test
// ends.
func MustOpen(tb testing.TB, cfg *config.Config) *db.DB {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := db.Open(ctx, cfg)
	if err != nil {
		tb.Fatalf("opening %s database: %v", cfg.DBDriver, err)
	}
	tb.Cleanup(func() { d.Close() })
	if err := d.Migrate(ctx); err != nil {
		tb.Fatalf("migrating %s database: %v", cfg.DBDriver, err)
	}
	return d
}

// freshMySQLDatabase creates a database with a random name and returns a
// DSN for it; the database is dropped when the test ends.
func freshMySQLDatabase(tb testing.TB, adminDSN string) string {
	tb.Helper()
	mc, err := mysql.ParseDSN(adminDSN)
	if err != nil {
		tb.Fatalf("%s: %v", EnvMySQLDSN, err)
	}
	admin, err := stdsql.Open("mysql", adminDSN)
	if err != nil {
		tb.Fatalf("%s: %v", EnvMySQLDSN, err)
	}
	defer admin.Close()
	name := "personnel_t_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		tb.Fatalf("cannot use MySQL at %s (%s): %v", mc.Addr, EnvMySQLDSN, err)
	}
	tb.Cleanup(func() {
		admin, err := stdsql.Open("mysql", adminDSN)
		if err != nil {
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			tb.Logf("dropping test database %s: %v", name, err)
		}
	})
	mc.DBName = name
	return mc.FormatDSN()
}

// freshPostgresDatabase creates a database with a random name and returns
// a DSN for it; the database is dropped when the test ends, along with any
// connection a killed server left behind.
func freshPostgresDatabase(tb testing.TB, adminDSN string) string {
	tb.Helper()
	name := "personnel_t_" + randomSuffix()
	dsn, err := WithDatabase(adminDSN, name)
	if err != nil {
		tb.Fatalf("%s: %v", EnvPostgresDSN, err)
	}
	admin, err := stdsql.Open("pgx", adminDSN)
	if err != nil {
		tb.Fatalf("%s: %v", EnvPostgresDSN, err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, `CREATE DATABASE "`+name+`" ENCODING 'UTF8' TEMPLATE template0`); err != nil {
		tb.Fatalf("cannot use PostgreSQL (%s): %v", EnvPostgresDSN, err)
	}
	// The tests of races deadlock on purpose, and PostgreSQL looks for a
	// deadlock only after a lock has waited deadlock_timeout (1s by
	// default), where MySQL finds one at once: a shorter wait keeps those
	// tests from idling. Only a superuser may set it; without, the tests
	// run as they are, only slower.
	if _, err := admin.ExecContext(ctx, `ALTER DATABASE "`+name+`" SET deadlock_timeout = '50ms'`); err != nil {
		tb.Logf("PostgreSQL: deadlock_timeout of the test database left as it is: %v", err)
	}
	tb.Cleanup(func() {
		admin, err := stdsql.Open("pgx", adminDSN)
		if err != nil {
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			tb.Logf("dropping test database %s: %v", name, err)
		}
	})
	return dsn
}

// WithDatabase returns the PostgreSQL DSN dsn (a URL or keyword DSN)
// naming database name instead.
func WithDatabase(dsn, name string) (string, error) {
	if _, err := pgconn.ParseConfig(dsn); err != nil {
		return "", err
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path, u.RawPath = "/"+name, ""
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// In a keyword DSN the last of a repeated keyword wins.
	return dsn + " dbname=" + name, nil
}

// WithAddr returns the DSN of cfg's database server (MySQL or PostgreSQL)
// reached at addr (host:port) instead, and the address it named: for
// tests that put a proxy in between.
func WithAddr(cfg *config.Config, addr string) (dsn, upstream string, err error) {
	switch cfg.DBDriver {
	case config.DriverMySQL:
		mc, err := mysql.ParseDSN(cfg.DBDSN)
		if err != nil {
			return "", "", err
		}
		upstream, mc.Addr = mc.Addr, addr
		return mc.FormatDSN(), upstream, nil
	case config.DriverPostgres:
		pc, err := pgconn.ParseConfig(cfg.DBDSN)
		if err != nil {
			return "", "", err
		}
		host, port, _ := net.SplitHostPort(addr)
		upstream = net.JoinHostPort(pc.Host, strconv.Itoa(int(pc.Port)))
		if strings.HasPrefix(cfg.DBDSN, "postgres://") || strings.HasPrefix(cfg.DBDSN, "postgresql://") {
			u, err := url.Parse(cfg.DBDSN)
			if err != nil {
				return "", "", err
			}
			u.Host = addr
			q := u.Query()
			q.Del("host")
			q.Del("port")
			u.RawQuery = q.Encode()
			return u.String(), upstream, nil
		}
		return cfg.DBDSN + " host=" + host + " port=" + port, upstream, nil
	}
	return "", "", fmt.Errorf("%s is not a networked database", cfg.DBDriver)
}

func randomSuffix() string {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	return hex.EncodeToString(suffix[:])
}
