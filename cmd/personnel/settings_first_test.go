package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
)

// withoutSchema fails unless the database cfg names has no Personnel
// table: nothing migrated it.
func withoutSchema(t *testing.T, cfg *config.Config) {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Read().User.Query().Exist(ctx); !db.IsUndefinedTable(err) {
		t.Fatalf("the database has a schema (or another problem): %v", err)
	}
}

// setBackend points the commands at the database cfg names, with no JWT
// secret.
func setBackend(t *testing.T, cfg *config.Config) {
	t.Setenv("PERSONNEL_DB_DRIVER", cfg.DBDriver)
	t.Setenv("PERSONNEL_DB_DSN", cfg.DBDSN)
	t.Setenv("PERSONNEL_JWT_SECRET", "")
	t.Setenv("PERSONNEL_BCRYPT_COST", "4")
	t.Setenv("PERSONNEL_LOG_LEVEL", "error")
}

// A server that cannot start (no JWT secret where one is needed) says so
// before it creates, migrates or adds a user to anything: on SQLite in
// production the database file is not even created.
func TestServe_RefusesAMissingSecretBeforeTouchingTheDatabase(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			setBackend(t, cfg)
			t.Setenv("PERSONNEL_ADMIN_USER", "admin")
			t.Setenv("PERSONNEL_ADMIN_PASSWORD", "Tr0ub4dor&3-admin")
			if !b.Networked() {
				// SQLite generates a secret outside production.
				t.Setenv("PERSONNEL_ENV", "production")
				t.Setenv("PERSONNEL_ALLOWED_HOSTS", "localhost")
			}
			err := serve(nil, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "PERSONNEL_JWT_SECRET must be set") {
				t.Fatalf("serve without a secret: %v", err)
			}
			if !b.Networked() {
				if _, err := os.Stat(cfg.DBDSN); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("serve created %s before refusing: %v", cfg.DBDSN, err)
				}
				return
			}
			withoutSchema(t, cfg)
		})
	}
}

// `user add` against a database nobody has set up is refused on every
// backend, and gives it no schema: serve and migrate create schemas, a
// command that changes users does not (an empty SQLite file is such a
// database too; a missing one is refused before, as ever).
func TestUser_AddRefusesAnEmptyDatabaseOnEveryBackend(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := b.Config(t)
			setBackend(t, cfg)
			if !b.Networked() {
				if err := os.WriteFile(cfg.DBDSN, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := user(t, &fakeIO{stdin: "first-password\n"}, "add", "alice", "--role", "editor", "--password-stdin")
			if err == nil || !strings.Contains(err.Error(), "no Personnel schema") || !strings.Contains(err.Error(), "personnel migrate") {
				t.Fatalf("user add on an empty database: %v", err)
			}
			withoutSchema(t, cfg)
			if err := migrate(nil, io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			if err := user(t, &fakeIO{stdin: "first-password\n"}, "add", "alice", "--role", "editor", "--password-stdin"); err != nil {
				t.Fatalf("user add after migrate: %v", err)
			}
		})
	}
}
