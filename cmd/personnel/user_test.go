package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"personnel/auth"
	"personnel/casefold"
	"personnel/config"
	"personnel/db/dbtest"
	entuser "personnel/ent/user"
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
func useBackend(t *testing.T, b dbtest.Backend) *config.Config {
	t.Helper()
	cfg := b.Config(t)
	t.Setenv("PERSONNEL_DB_DRIVER", cfg.DBDriver)
	t.Setenv("PERSONNEL_DB_DSN", cfg.DBDSN)
	t.Setenv("PERSONNEL_BCRYPT_COST", "4")
	t.Setenv("PERSONNEL_LOG_LEVEL", "error")
	if err := migrate(nil, io.Discard, io.Discard); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return cfg
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
				{"bad role", &fakeIO{stdin: "some-password\n"}, []string{"add", "carol", "--role", "admin", "--password-stdin"}, `unknown role "admin"`},
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
	if err := migrate(nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := user(t, &fakeIO{stdin: "first-password\n"}, "add", "alice", "--role", "editor", "--password-stdin"); err != nil {
		t.Fatalf("add after migrate: %v", err)
	}
}

func TestUser_RefusesPasswordsLoginWouldRefuse(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			useBackend(t, b)
			if err := user(t, &fakeIO{stdin: "first-password\n"}, "add", "alice", "--role", "editor", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ what, pw, want string }{
				{"blank", "        ", "blank"},
				{"blank beyond ASCII", "\u3000\u3000\u3000\u3000\u3000\u3000\u3000\u3000", "blank"},
				{"not UTF-8", "pass\xffword", "UTF-8"},
				{"NUL", "pass\x00word", "NUL"},
				{"73 bytes", strings.Repeat("p", 73), "72 bytes"},
			} {
				for _, args := range [][]string{{"add", "carol", "--role", "viewer", "--password-stdin"}, {"passwd", "alice", "--password-stdin"}} {
					if err := user(t, &fakeIO{stdin: tc.pw + "\n"}, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Errorf("user %s with a %s password: %v, want an error with %q", args[0], tc.what, err, tc.want)
					}
				}
			}
			// The first editor of a new installation too.
			d, cfg := b.Open(t)
			cfg.AdminUser, cfg.AdminPassword = "admin", "        "
			if err := auth.Bootstrap(context.Background(), d, cfg); err == nil || !strings.Contains(err.Error(), "blank") {
				t.Errorf("PERSONNEL_ADMIN_PASSWORD of blanks: %v", err)
			}
		})
	}
}

func TestUser_AddRefusesANameEqualToAnotherButForCaseOrWidth(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			useBackend(t, b)
			f := &fakeIO{stdin: "first-password\n"}
			if err := user(t, f, "add", "admin", "--role", "editor", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"ADMIN", "Admin", "ａｄｍｉｎ", "ＡＤＭＩＮ"} {
				if err := user(t, &fakeIO{stdin: "other-password\n"}, "add", name, "--role", "viewer", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "already exists") {
					t.Errorf("add %s beside admin: %v", name, err)
				}
			}
			// A full-width name is stored normalised.
			if err := user(t, f, "add", "ｂｏｂ", "--role", "viewer", "--password-stdin"); err != nil || !strings.Contains(f.stdout.String(), "added bob") {
				t.Fatalf("add ｂｏｂ: %v, %s", err, f.stdout.String())
			}
		})
	}
}

func TestUser_LegacyLookAlikesSurviveMigrationAndListMarksThem(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			cfg := useBackend(t, b)
			// Look-alikes as a version that allowed them stored them (names
			// as given), after the start that gave keys (commit 2bd65ad, the
			// oldest version whose databases this one adopts): the first by id
			// got the key, the others none.
			d := dbtest.MustOpen(t, cfg)
			hash, _ := bcrypt.GenerateFromPassword([]byte("legacy-password"), 4)
			for i, name := range []string{"admin", "ADMIN", "ａｄｍｉｎ", "carol"} {
				c := d.Write().User.Create().SetUsername(name).SetPasswordHash(string(hash)).SetRole(entuser.RoleEditor)
				if i == 0 || name == "carol" {
					c.SetUsernameKey(casefold.Identifier(name))
				}
				if err := c.Exec(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			if err := migrate(nil, io.Discard, io.Discard); err != nil {
				t.Fatalf("migrating a database with look-alikes: %v", err)
			}
			f := &fakeIO{}
			if err := user(t, f, "list"); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(f.stdout.String(), "\n")
			for _, l := range lines[1:] {
				switch name, _, _ := strings.Cut(l, " "); name {
				case "admin", "ADMIN", "ａｄｍｉｎ":
					if !strings.Contains(l, "look-alike of") {
						t.Errorf("%s is not marked:\n%s", name, f.stdout.String())
					}
				case "carol":
					if strings.Contains(l, "look-alike") {
						t.Errorf("carol is marked:\n%s", f.stdout.String())
					}
				}
			}
			// They keep working as distinct users, and no fourth can join.
			if err := user(t, &fakeIO{stdin: "second-password\n"}, "passwd", "ａｄｍｉｎ", "--password-stdin"); err != nil {
				t.Fatal(err)
			}
			changed := map[string]bool{}
			users, _ := auth.ListUsers(context.Background(), d)
			for _, u := range users {
				changed[u.Username] = bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte("second-password")) == nil
			}
			if !changed["ａｄｍｉｎ"] || changed["admin"] || changed["ADMIN"] {
				t.Fatalf("passwd ａｄｍｉｎ changed %v", changed)
			}
			if err := user(t, &fakeIO{stdin: "other-password\n"}, "add", "Admin", "--role", "viewer", "--password-stdin"); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("add Admin beside legacy look-alikes: %v", err)
			}
		})
	}
}

func TestUser_DisablingOrDeletingTheLastActiveEditorNeedsForce(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			useBackend(t, b)
			f := &fakeIO{stdin: "first-password\n"}
			user(t, f, "add", "alice", "--role", "editor", "--password-stdin")
			user(t, &fakeIO{stdin: "viewer-password\n"}, "add", "victor", "--role", "viewer", "--password-stdin")
			for _, sub := range []string{"disable", "delete"} {
				if err := user(t, f, sub, "alice"); err == nil || !strings.Contains(err.Error(), "last active editor") || !strings.Contains(err.Error(), "--force") {
					t.Errorf("%s the last editor: %v", sub, err)
				}
			}
			// Viewers are not guarded; with a second editor alice may go.
			if err := user(t, f, "disable", "victor"); err != nil {
				t.Fatal(err)
			}
			user(t, &fakeIO{stdin: "second-password\n"}, "add", "bob", "--role", "editor", "--password-stdin")
			if err := user(t, f, "disable", "alice"); err != nil {
				t.Fatalf("disable alice beside bob: %v", err)
			}
			if err := user(t, f, "delete", "bob"); err == nil || !strings.Contains(err.Error(), "last active editor") {
				t.Fatalf("delete bob, now the last active editor: %v", err)
			}
			if err := user(t, f, "delete", "bob", "--force"); err != nil {
				t.Fatalf("delete --force: %v", err)
			}
			if err := user(t, f, "list"); err != nil || strings.Contains(f.stdout.String(), "bob") {
				t.Fatalf("bob not deleted: %v\n%s", err, f.stdout.String())
			}
		})
	}
}
