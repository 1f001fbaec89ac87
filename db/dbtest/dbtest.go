// Package dbtest gives tests a fresh, migrated database on every backend
// the suite runs against: SQLite always, and MySQL/MariaDB when
// PERSONNEL_TEST_MYSQL_DSN is set. A test written once runs on both.
//
// When CI=true, a missing or unusable PERSONNEL_TEST_MYSQL_DSN fails the
// test instead of leaving MySQL untested.
package dbtest

import (
	"context"
	"crypto/rand"
	stdsql "database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"personnel/config"
	"personnel/db"
)

// EnvMySQLDSN names the environment variable with an administrative MySQL
// DSN (one that may create and drop databases).
const EnvMySQLDSN = "PERSONNEL_TEST_MYSQL_DSN"

// Backend is a database server the tests run against.
type Backend struct {
	Name     string // "sqlite" or "mysql"
	adminDSN string
}

// Backends returns the backends to run against.
func Backends(tb testing.TB) []Backend {
	tb.Helper()
	bs := []Backend{{Name: config.DriverSQLite}}
	dsn := os.Getenv(EnvMySQLDSN)
	switch {
	case dsn != "":
		bs = append(bs, Backend{Name: config.DriverMySQL, adminDSN: dsn})
	case os.Getenv("CI") == "true":
		tb.Fatalf("CI=true but %s is not set: the MySQL tests must run in CI", EnvMySQLDSN)
	}
	return bs
}

// Config returns a configuration for a fresh, empty database on b, removed
// when the test ends. The schema is not created yet.
func (b Backend) Config(tb testing.TB) *config.Config {
	tb.Helper()
	cfg := config.Default()
	cfg.DBDriver = b.Name
	// Tests sign tokens with a fixed secret and hash passwords cheaply.
	cfg.JWTSecret = []byte("test-secret-test-secret-test-secret!")
	cfg.BcryptCost = 4
	switch b.Name {
	case config.DriverSQLite:
		cfg.DBDSN = filepath.Join(tb.TempDir(), "personnel.db")
	case config.DriverMySQL:
		cfg.DBDSN = freshMySQLDatabase(tb, b.adminDSN)
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
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	name := "personnel_t_" + hex.EncodeToString(suffix[:])
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
