package main_test

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"personnel/db/dbtest"
)

// lockable starts the binary on a fresh database of b with the given login
// limits and returns it with the environment that points user commands at
// the same database.
func lockable(t *testing.T, b dbtest.Backend, perUser, perAddr string) (*started, []string) {
	t.Helper()
	cfg := b.Config(t)
	env := []string{"PERSONNEL_DB_DRIVER=" + cfg.DBDriver, "PERSONNEL_DB_DSN=" + cfg.DBDSN,
		"PERSONNEL_JWT_SECRET=" + string(cfg.JWTSecret),
		"PERSONNEL_LOGIN_FAILURES_PER_USER=" + perUser, "PERSONNEL_LOGIN_FAILURES_PER_ADDRESS=" + perAddr}
	return start(t, env...), env
}

// tryLogin posts credentials and returns the status.
func (s *started) tryLogin(t *testing.T, name, password string) int {
	t.Helper()
	resp, err := http.Post("http://"+s.addr+"/jwt-api-token-auth/", "application/json",
		strings.NewReader(`{"username":"`+name+`","password":"`+password+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// userCmd runs `personnel user args...` against the database of env,
// with stdin as its input, and returns its output.
func userCmd(t *testing.T, env []string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"user"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PERSONNEL_BCRYPT_COST=4", "PERSONNEL_LOG_LEVEL=error"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("personnel user %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestUserUnlock_LiftsAUsernameLockOut(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s, env := lockable(t, b, "2", "100")
			for range 2 {
				s.tryLogin(t, "admin", "wrong-password")
			}
			if got := s.tryLogin(t, "admin", adminPassword); got != http.StatusTooManyRequests {
				t.Fatalf("locked out: %d", got)
			}
			if out := userCmd(t, env, "", "unlock", "admin"); !strings.Contains(out, "unlocked admin (forgot 2 failed logins)") {
				t.Fatalf("unlock: %s", out)
			}
			if got := s.tryLogin(t, "admin", adminPassword); got != http.StatusOK {
				t.Fatalf("after unlock: %d", got)
			}
		})
	}
}

func TestUserUnlock_AddressLiftsAnAddressLockOut(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s, env := lockable(t, b, "100", "2")
			for _, name := range []string{"someone", "someone-else"} {
				s.tryLogin(t, name, "wrong-password")
			}
			if got := s.tryLogin(t, "admin", adminPassword); got != http.StatusTooManyRequests {
				t.Fatalf("locked out: %d", got)
			}
			if out := userCmd(t, env, "", "unlock", "--address", "127.0.0.1"); !strings.Contains(out, "unlocked 127.0.0.1 (forgot 2 failed logins)") {
				t.Fatalf("unlock: %s", out)
			}
			if got := s.tryLogin(t, "admin", adminPassword); got != http.StatusOK {
				t.Fatalf("after unlock: %d", got)
			}
		})
	}
}

func TestUserPasswd_LiftsTheUsersLockOut(t *testing.T) {
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s, env := lockable(t, b, "2", "100")
			for range 2 {
				s.tryLogin(t, "admin", "wrong-password")
			}
			userCmd(t, env, "new-admin-password\n", "passwd", "admin", "--password-stdin")
			if got := s.tryLogin(t, "admin", "new-admin-password"); got != http.StatusOK {
				t.Fatalf("after passwd: %d", got)
			}
		})
	}
}
