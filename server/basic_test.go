package server_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"personnel/auth"
	"personnel/config"
	"personnel/server"
)

func basic(username, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(username+":"+password))
}

// basicFrom sends a GET of the collection with Basic credentials from a
// client address.
func (a *authAPI) basicFrom(username, password, addr string) *response {
	req := newRequest(http.MethodGet, a.coll)
	req.Header.Set("Authorization", basic(username, password))
	req.RemoteAddr = addr + ":40000"
	return a.serve(req)
}

func TestBasicAuth_AuthenticatesAnyRequestWithTheUsersRole(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("viewer", auth.RoleViewer, "viewer:pass word") // a colon in the password is part of it
		for _, scheme := range []string{"Basic", "basic", "BASIC"} {
			h := scheme + " " + base64.StdEncoding.EncodeToString([]byte("viewer:viewer:pass word"))
			if resp := a.with(h); resp.Status != http.StatusOK {
				t.Fatalf("%s: %s", scheme, resp)
			}
		}
		wantError(t, a.do(http.MethodPost, a.coll, `{}`, "Authorization", basic("viewer", "viewer:pass word")), http.StatusForbidden)
		r := res{server.CompiledResources()[0]}
		if resp := a.do(http.MethodPost, a.coll, r.body("BA", "By Basic", nil), "Authorization", basic(testUser, testPassword)); resp.Status != http.StatusCreated {
			t.Fatalf("editor's create: %s", resp)
		}
	})
}

func TestBasicAuth_SecondRequestWithinAMinuteRunsNoBcrypt(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		before := a.hasher.n.Load()
		for range 4 {
			if resp := a.with(basic(testUser, testPassword)); resp.Status != http.StatusOK {
				t.Fatal(resp)
			}
			a.clock.Advance(10 * time.Second)
		}
		if n := a.hasher.n.Load() - before; n != 1 {
			t.Fatalf("%d bcrypt comparisons for 4 requests within a minute, want 1", n)
		}
		a.clock.Advance(time.Minute)
		if resp := a.with(basic(testUser, testPassword)); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		if n := a.hasher.n.Load() - before; n != 2 {
			t.Fatalf("%d bcrypt comparisons after the minute, want 2", n)
		}
	})
}

func TestBasicAuth_WrongPasswordIsNeverServedFromMemory(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		if resp := a.with(basic(testUser, testPassword)); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		for _, wrong := range []string{testPassword + "x", testPassword[:len(testPassword)-1], strings.ToUpper(testPassword), ""} {
			before := a.hasher.n.Load()
			resp := a.with(basic(testUser, wrong))
			wantUnauthorized(t, resp)
			if wrong != "" && a.hasher.n.Load()-before != 1 {
				t.Fatalf("password %q was not checked with bcrypt", wrong)
			}
		}
		// Nor is a wrong password remembered as right after a failure.
		wantUnauthorized(t, a.with(basic(testUser, "wrong-password")))
		wantUnauthorized(t, a.with(basic(testUser, "wrong-password")))
	}, func(c *config.Config) { c.LoginFailuresUser = 100 })
}

// voidsBasic checks that change, done to a user whose Basic check is
// remembered, makes the old password fail within five seconds.
func voidsBasic(t *testing.T, change func(a *authAPI, name string)) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("basicuser", auth.RoleEditor, "basic-password")
		if resp := a.with(basic("basicuser", "basic-password")); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		change(a, "basicuser")
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with(basic("basicuser", "basic-password")))
	})
}

func TestBasicAuth_PasswordChangeVoidsTheRememberedCheck(t *testing.T) {
	voidsBasic(t, func(a *authAPI, name string) {
		if err := auth.SetPassword(context.Background(), a.db, name, "another-password", a.cfg.BcryptCost); err != nil {
			a.t.Fatal(err)
		}
	})
}

func TestBasicAuth_DisablingVoidsTheRememberedCheck(t *testing.T) {
	voidsBasic(t, func(a *authAPI, name string) {
		if err := auth.SetActive(context.Background(), a.db, name, false); err != nil {
			a.t.Fatal(err)
		}
	})
}

func TestBasicAuth_DeletingVoidsTheRememberedCheck(t *testing.T) {
	voidsBasic(t, func(a *authAPI, name string) {
		if err := auth.DeleteUser(context.Background(), a.db, name); err != nil {
			a.t.Fatal(err)
		}
	})
}

func TestBasicAuth_FailuresAre401AndCountPerUser(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for i := range a.cfg.LoginFailuresUser {
			resp := a.basicFrom(testUser, "guess", "198.51.100."+strconv.Itoa(i+1))
			wantUnauthorized(t, resp)
			if !strings.Contains(string(resp.Body), "Invalid username/password.") {
				t.Fatalf("body %s", resp.Body)
			}
		}
		wantError(t, a.basicFrom(testUser, testPassword, "198.51.100.99"), http.StatusTooManyRequests)
		// The same throttle as the logins.
		wantError(t, a.tryLogin(testUser, testPassword, "198.51.100.98"), http.StatusTooManyRequests)
	}, func(c *config.Config) { c.LoginFailuresUser = 3 })
}

func TestBasicAuth_FailuresCountPerAddress(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for i := range a.cfg.LoginFailuresAddr {
			wantUnauthorized(t, a.basicFrom("someone"+strconv.Itoa(i), "guess", "203.0.113.7"))
		}
		wantError(t, a.basicFrom(testUser, testPassword, "203.0.113.7"), http.StatusTooManyRequests)
		if resp := a.basicFrom(testUser, testPassword, "203.0.113.8"); resp.Status != http.StatusOK {
			t.Fatalf("from another address: %s", resp)
		}
	}, func(c *config.Config) { c.LoginFailuresAddr = 4 })
}

func TestBasicAuth_MalformedCredentialsAre401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		before := a.hasher.n.Load()
		for _, h := range []string{
			"Basic not-base64!", "Basic " + base64.StdEncoding.EncodeToString([]byte("no colon")),
			"Basic " + base64.StdEncoding.EncodeToString([]byte(":"+testPassword)), "Basic",
		} {
			wantUnauthorized(t, a.with(h))
		}
		if n := a.hasher.n.Load() - before; n != 0 {
			t.Fatalf("%d bcrypt comparisons for malformed credentials", n)
		}
	})
}
