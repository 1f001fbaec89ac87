package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"personnel/auth"
	"personnel/config"
	"personnel/ent/user"
)

func TestLogin_PasswordOver72BytesFailsWithoutComparing(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		pw := strings.Repeat("p", 72)
		a.addUser("long", auth.RoleViewer, pw)
		a.login("long", pw)
		// bcrypt reads 72 bytes: compared, this would match.
		before := a.hasher.n.Load()
		resp := a.tryLogin("long", pw+"p", "192.0.2.3")
		wantError(t, resp, http.StatusBadRequest)
		if !strings.Contains(string(resp.Body), "Unable to log in with provided credentials.") {
			t.Fatalf("body %s", resp.Body)
		}
		if n := a.hasher.n.Load() - before; n != 0 {
			t.Fatalf("a 73-byte password was compared %d times", n)
		}
	})
}

func TestLogin_RehashesAHashOfAnotherCost(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		ctx := context.Background()
		if _, err := auth.AddUser(ctx, a.db, "old", auth.RoleViewer, "old-password", a.cfg.BcryptCost+1); err != nil {
			t.Fatal(err)
		}
		a.login("old", "old-password")
		u, err := a.db.Read().User.Query().Where(user.Username("old")).Only(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cost, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil || cost != a.cfg.BcryptCost {
			t.Fatalf("hash cost after a login %d (%v), want the configured %d", cost, err, a.cfg.BcryptCost)
		}
		a.login("old", "old-password")
		wantError(t, a.tryLogin("old", "wrong-password", "192.0.2.4"), http.StatusBadRequest)
	})
}

func TestLogin_UsernameIsNormalisedWithNFKC(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("ａｌｉｃｅ", auth.RoleViewer, "alice-password") // full width
		a.login("alice", "alice-password")
		a.login("ａｌｉｃｅ", "alice-password")
		// Failures under either spelling count against the one user.
		for _, name := range []string{"alice", "ａｌｉｃｅ", "ａlice"} {
			wantError(t, a.tryLogin(name, "wrong-password", "192.0.2.5"), http.StatusBadRequest)
		}
		wantError(t, a.tryLogin("alice", "alice-password", "192.0.2.6"), http.StatusTooManyRequests)
	}, func(c *config.Config) { c.LoginFailuresUser = 3 })
}

func TestLogin_UsernameOf150CharactersInAnyScriptLogsIn(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		name := strings.Repeat("ж", 150) // 300 bytes
		a.addUser(name, auth.RoleViewer, "long-name-password")
		a.with("JWT " + a.login(name, "long-name-password"))
		_, err := auth.AddUser(context.Background(), a.db, name+"ж", auth.RoleViewer, "long-name-password", a.cfg.BcryptCost)
		if err == nil || !strings.Contains(err.Error(), "1 to 150") {
			t.Fatalf("a 151-character name: %v", err)
		}
	})
}

func TestLogin_OverlongUsernameIsCutOnACharacterBoundary(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		name := "a" + strings.Repeat("é", 200) // byte 150 is inside a character
		for range a.cfg.LoginFailuresUser {
			wantError(t, a.tryLogin(name, "wrong-password", "192.0.2.7"), http.StatusBadRequest)
		}
		wantError(t, a.tryLogin(name, "wrong-password", "192.0.2.8"), http.StatusTooManyRequests)
		subjects, err := a.db.Read().LoginFailure.Query().Select("subject").Strings(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range subjects {
			if !utf8.ValidString(s) {
				t.Fatalf("stored failure subject is not UTF-8: %q", s)
			}
		}
	}, func(c *config.Config) { c.LoginFailuresUser = 2 })
}

// startOfASecond waits until a second has just begun, so that quick steps
// after it happen within that second.
func startOfASecond() {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
}

func TestAuth_TokenFromALoginInTheSecondOfAPasswordChangeWorks(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("mover", auth.RoleEditor, "first-password")
		old := a.login("mover", "first-password")
		if resp := a.with("JWT " + old); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		startOfASecond()
		if err := auth.SetPassword(context.Background(), a.db, "mover", "second-password", a.cfg.BcryptCost); err != nil {
			t.Fatal(err)
		}
		if resp := a.with("JWT " + a.login("mover", "second-password")); resp.Status != http.StatusOK {
			t.Fatalf("a token from just after the change: %s", resp)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+old))
	})
}

func TestAuth_TokenFromALoginInTheSecondOfAReEnableWorks(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("paused", auth.RoleEditor, "paused-password")
		old := a.login("paused", "paused-password")
		a.with("JWT " + old)
		ctx := context.Background()
		startOfASecond()
		if err := auth.SetActive(ctx, a.db, "paused", false); err != nil {
			t.Fatal(err)
		}
		if err := auth.SetActive(ctx, a.db, "paused", true); err != nil {
			t.Fatal(err)
		}
		if resp := a.with("JWT " + a.login("paused", "paused-password")); resp.Status != http.StatusOK {
			t.Fatalf("a token from just after the re-enable: %s", resp)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+old))
	})
}
