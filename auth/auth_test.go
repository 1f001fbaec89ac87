package auth_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
)

func sqliteConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.DBDSN = filepath.Join(t.TempDir(), "p.db")
	cfg.BcryptCost = 4
	return cfg
}

func TestSecret_GeneratedOnceWithMode0600AndReused(t *testing.T) {
	cfg := sqliteConfig(t)
	first, err := auth.Secret(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := auth.SecretPath(cfg.DBDSN)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no secret file beside the database: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("secret file mode %v, want 0600", info.Mode().Perm())
	}
	if filepath.Dir(path) != filepath.Dir(cfg.DBDSN) || len(first) < config.MinJWTSecret {
		t.Fatalf("secret at %s, %d bytes", path, len(first))
	}
	again, err := auth.Secret(cfg)
	if err != nil || !bytes.Equal(first, again) {
		t.Fatalf("second start: %v; secret changed: %v", err, !bytes.Equal(first, again))
	}
}

func TestSecret_ConfiguredSecretWinsAndWritesNoFile(t *testing.T) {
	cfg := sqliteConfig(t)
	cfg.JWTSecret = []byte(strings.Repeat("k", 32))
	got, err := auth.Secret(cfg)
	if err != nil || string(got) != strings.Repeat("k", 32) {
		t.Fatalf("Secret = %q, %v", got, err)
	}
	if _, err := os.Stat(auth.SecretPath(cfg.DBDSN)); !os.IsNotExist(err) {
		t.Fatal("a secret file was written although one is configured")
	}
}

func TestSecret_ProductionAndMySQLRequireAConfiguredSecret(t *testing.T) {
	cfg := sqliteConfig(t)
	cfg.Env = config.EnvProduction
	if _, err := auth.Secret(cfg); err == nil || !strings.Contains(err.Error(), "PERSONNEL_JWT_SECRET") {
		t.Fatalf("production without a secret: %v", err)
	}
	for _, driver := range []string{config.DriverMySQL, config.DriverPostgres} {
		cfg = sqliteConfig(t)
		cfg.DBDriver = driver
		if _, err := auth.Secret(cfg); err == nil || !strings.Contains(err.Error(), "PERSONNEL_JWT_SECRET") {
			t.Fatalf("%s without a secret: %v", driver, err)
		}
	}
}

func TestSecret_ATruncatedSecretFileIsRefused(t *testing.T) {
	cfg := sqliteConfig(t)
	os.WriteFile(auth.SecretPath(cfg.DBDSN), []byte("short\n"), 0o600)
	if _, err := auth.Secret(cfg); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Fatalf("Secret = %v", err)
	}
}

// logs captures what the default logger writes during fn.
func logs(fn func()) string {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	fn()
	return buf.String()
}

func TestBootstrap(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name+"/creates the first editor when there is no user", func(t *testing.T) {
			d, cfg := b.Open(t)
			cfg.AdminUser, cfg.AdminPassword = "admin", "first-admin-pw"
			if err := auth.Bootstrap(context.Background(), d, cfg); err != nil {
				t.Fatal(err)
			}
			users, _ := auth.ListUsers(context.Background(), d)
			if len(users) != 1 || users[0].Username != "admin" || string(users[0].Role) != auth.RoleEditor || !users[0].Active {
				t.Fatalf("users %v", users)
			}
			// A restart with other settings changes nothing.
			cfg.AdminUser = "someone-else"
			auth.Bootstrap(context.Background(), d, cfg)
			if users, _ := auth.ListUsers(context.Background(), d); len(users) != 1 {
				t.Fatalf("users after restart %v", users)
			}
		})
		t.Run(b.Name+"/says how to create a user when none is configured", func(t *testing.T) {
			d, cfg := b.Open(t)
			out := logs(func() {
				if err := auth.Bootstrap(context.Background(), d, cfg); err != nil {
					t.Fatal(err)
				}
			})
			if !strings.Contains(out, "personnel user add NAME --role editor") || strings.Count(out, "\n") != 1 {
				t.Fatalf("log: %q", out)
			}
		})
		t.Run(b.Name+"/a bad admin password stops the start naming the settings", func(t *testing.T) {
			d, cfg := b.Open(t)
			cfg.AdminUser, cfg.AdminPassword = "admin", "short"
			if err := auth.Bootstrap(context.Background(), d, cfg); err == nil || !strings.Contains(err.Error(), "PERSONNEL_ADMIN_USER/PASSWORD") {
				t.Fatalf("Bootstrap = %v", err)
			}
		})
	}
}

func TestUsers_Rules(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, cfg := b.Open(t)
			ctx := context.Background()
			add := func(name, role, pw string) error {
				_, err := auth.AddUser(ctx, d, name, role, pw, cfg.BcryptCost)
				return err
			}
			if err := add("ann", auth.RoleEditor, "long enough"); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct{ name, role, pw, want string }{
				{"ann", auth.RoleViewer, "long enough", auth.ErrUserExists.Error()},
				{"", auth.RoleViewer, "long enough", "username"},
				{"has space", auth.RoleViewer, "long enough", "username"},
				{strings.Repeat("n", 151), auth.RoleViewer, "long enough", "username"},
				{"bo", "admin", "long enough", "role"},
				{"bo", auth.RoleViewer, "short", "at least 8"},
				{"bo", auth.RoleViewer, strings.Repeat("é", 40), "72 bytes"},
				{"bobbybobby", auth.RoleViewer, "bobbybobby", "differ from the username"},
			} {
				if err := add(tc.name, tc.role, tc.pw); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("AddUser(%.20q, %q, %.10q) = %v, want %q", tc.name, tc.role, tc.pw, err, tc.want)
				}
			}
			for _, err := range []error{
				auth.SetPassword(ctx, d, "nobody", "long enough", cfg.BcryptCost),
				auth.SetActive(ctx, d, "nobody", false),
				auth.DeleteUser(ctx, d, "nobody"),
			} {
				if !errors.Is(err, auth.ErrUserNotFound) {
					t.Errorf("on a missing user: %v, want ErrUserNotFound", err)
				}
			}
		})
	}
}

func TestUsers_ConcurrentDisablesKeepAnActiveEditor(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			d, cfg := b.Open(t)
			ctx := context.Background()
			for round := range 10 {
				names := []string{fmt.Sprintf("ed%da", round), fmt.Sprintf("ed%db", round)}
				for _, n := range names {
					if _, err := auth.AddUser(ctx, d, n, auth.RoleEditor, "editor-password", cfg.BcryptCost); err != nil {
						t.Fatal(err)
					}
				}
				errs := make(chan error, 2)
				for _, n := range names {
					go func() { errs <- auth.SetActive(ctx, d, n, false, auth.KeepAnEditor) }()
				}
				refused := 0
				for range names {
					switch err := <-errs; {
					case errors.Is(err, auth.ErrLastEditor):
						refused++
					case err != nil:
						t.Fatal(err)
					}
				}
				if refused != 1 {
					t.Fatalf("round %d: %d of two concurrent disables of the last two editors refused, want 1", round, refused)
				}
				// Leave no active editor for the next round's pair.
				for _, n := range names {
					if err := auth.SetActive(ctx, d, n, false); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
