package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"personnel/db/dbtest"
)

// fakeIO is a command's input and output, with a terminal or not.
type fakeIO struct {
	stdout, stderr bytes.Buffer
	stdin          string
	terminal       bool
	typed          []string // lines typed at password prompts
}

func (f *fakeIO) io() cmdIO {
	return cmdIO{
		stdin: strings.NewReader(f.stdin), stdout: &f.stdout, stderr: &f.stderr,
		isTerminal: func() bool { return f.terminal },
		readPassword: func() ([]byte, error) {
			if len(f.typed) == 0 {
				return nil, errors.New("nothing typed")
			}
			line := f.typed[0]
			f.typed = f.typed[1:]
			return []byte(line), nil
		},
	}
}

// useBackend points the commands at a fresh database of b, created as
// serve would on its first start.
func useBackend(t *testing.T, b dbtest.Backend) {
	t.Helper()
	cfg := b.Config(t)
	t.Setenv("PERSONNEL_DB_DRIVER", cfg.DBDriver)
	t.Setenv("PERSONNEL_DB_DSN", cfg.DBDSN)
	t.Setenv("PERSONNEL_BCRYPT_COST", "4")
	t.Setenv("PERSONNEL_LOG_LEVEL", "error")
	if err := migrate(nil, io.Discard); err != nil {
		t.Fatalf("migrate: %v", err)
	}
}

func user(t *testing.T, f *fakeIO, args ...string) error {
	t.Helper()
	f.stdout.Reset()
	f.stderr.Reset()
	return userCommand(args, f.io())
}

func TestUserCommands(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			useBackend(t, b)
			f := &fakeIO{stdin: "first-password\n"}
			if err := user(t, f, "add", "alice", "--role", "editor", "--password-stdin"); err != nil {
				t.Fatalf("add: %v", err)
			}
			f = &fakeIO{terminal: true, typed: []string{"viewer-password", "viewer-password"}}
			if err := user(t, f, "add", "--role=viewer", "bob"); err != nil {
				t.Fatalf("add at a prompt: %v", err)
			}
			if err := user(t, f, "list"); err != nil {
				t.Fatal(err)
			}
			out := f.stdout.String()
			if !strings.Contains(out, "alice") || !strings.Contains(out, "editor") || !strings.Contains(out, "bob") || !strings.Contains(out, "viewer") {
				t.Fatalf("list:\n%s", out)
			}
			f = &fakeIO{stdin: "second-password\r\n"}
			if err := user(t, f, "passwd", "alice", "--password-stdin"); err != nil {
				t.Fatalf("passwd: %v", err)
			}
			if err := user(t, f, "disable", "bob"); err != nil {
				t.Fatal(err)
			}
			user(t, f, "list")
			if !strings.Contains(f.stdout.String(), "false") {
				t.Fatalf("bob still active:\n%s", f.stdout.String())
			}
			if err := user(t, f, "enable", "bob"); err != nil {
				t.Fatal(err)
			}
			if err := user(t, f, "delete", "bob"); err != nil {
				t.Fatal(err)
			}
			user(t, f, "list")
			if strings.Contains(f.stdout.String(), "bob") {
				t.Fatalf("bob not deleted:\n%s", f.stdout.String())
			}

			for _, tc := range []struct {
				name string
				f    *fakeIO
				args []string
				want string
			}{
				{"duplicate", &fakeIO{stdin: "some-password\n"}, []string{"add", "alice", "--role", "viewer", "--password-stdin"}, "already exists"},
				{"no role", &fakeIO{stdin: "some-password\n"}, []string{"add", "carol", "--password-stdin"}, "--role"},
				{"bad role", &fakeIO{stdin: "some-password\n"}, []string{"add", "carol", "--role", "admin", "--password-stdin"}, "--role"},
				{"not a terminal", &fakeIO{}, []string{"add", "carol", "--role", "viewer"}, "--password-stdin"},
				{"prompts differ", &fakeIO{terminal: true, typed: []string{"password-one", "password-two"}}, []string{"add", "carol", "--role", "viewer"}, "differ"},
				{"short password", &fakeIO{stdin: "short\n"}, []string{"add", "carol", "--role", "viewer", "--password-stdin"}, "at least 8"},
				{"unknown user", &fakeIO{}, []string{"disable", "nobody"}, "no such user"},
				{"missing name", &fakeIO{}, []string{"delete"}, "takes 1 name"},
				{"unknown command", &fakeIO{}, []string{"promote", "alice"}, "unknown sub-command"},
			} {
				if err := user(t, tc.f, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
				}
			}
		})
	}
}

func TestUser_RefusesASQLitePathThatDoesNotExist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typo.db")
	t.Setenv("PERSONNEL_DB_DRIVER", "sqlite")
	t.Setenv("PERSONNEL_DB_DSN", path)
	t.Setenv("PERSONNEL_BCRYPT_COST", "4")
	t.Setenv("PERSONNEL_LOG_LEVEL", "error")
	for _, args := range [][]string{{"add", "alice", "--role", "editor", "--password-stdin"}, {"list"}} {
		f := &fakeIO{stdin: "first-password\n"}
		if err := user(t, f, args...); err == nil || !strings.Contains(err.Error(), "no database at "+path) {
			t.Errorf("user %s on a missing database: %v", args[0], err)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the user command created %s: %v", path, err)
	}
	// migrate (like serve) still creates it, and then the user command works.
	if err := migrate(nil, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := user(t, &fakeIO{stdin: "first-password\n"}, "add", "alice", "--role", "editor", "--password-stdin"); err != nil {
		t.Fatalf("add after migrate: %v", err)
	}
}
