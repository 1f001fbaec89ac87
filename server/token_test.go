package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/server"
)

const tokenLoginPath = "/api-token-auth/"

var keyShape = regexp.MustCompile(`^[0-9a-f]{40}$`)

// postLogin posts credentials to path, encoded as JSON, form-urlencoded or
// multipart, from a client address.
func (a *authAPI) postLogin(path, encoding, username, password, addr string) *response {
	a.t.Helper()
	var body []byte
	contentType := "application/json"
	switch encoding {
	case "json":
		body, _ = json.Marshal(map[string]string{"username": username, "password": password})
	case "form":
		body = []byte(url.Values{"username": {username}, "password": {password}}.Encode())
		contentType = "application/x-www-form-urlencoded"
	case "multipart":
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		w.WriteField("username", username)
		w.WriteField("password", password)
		w.Close()
		body, contentType = buf.Bytes(), w.FormDataContentType()
	}
	req := newRequest(http.MethodPost, path)
	req.Body = readCloser(body)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "none")
	req.RemoteAddr = addr + ":40000"
	return a.serve(req)
}

// keyLogin logs in at /api-token-auth/ and returns the key.
func (a *authAPI) keyLogin(username, password string) string {
	a.t.Helper()
	resp := a.postLogin(tokenLoginPath, "json", username, password, "192.0.2.10")
	var body map[string]string
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil || len(body) != 1 || !keyShape.MatchString(body["token"]) {
		a.t.Fatalf("token login as %s: %s", username, resp)
	}
	return body["token"]
}

func TestTokenAuth_LoginByJSONFormOrMultipartAnswersOneKeyThatWorks(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		key := a.keyLogin(testUser, testPassword)
		for _, enc := range []string{"json", "form", "multipart"} {
			for _, path := range []string{tokenLoginPath, strings.TrimSuffix(tokenLoginPath, "/")} {
				resp := a.postLogin(path, enc, testUser, testPassword, "192.0.2.11")
				if resp.Status != http.StatusOK || string(resp.Body) != `{"token":"`+key+`"}` {
					t.Fatalf("%s login at %s: %s, want the same key %s", enc, path, resp, key)
				}
				if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
					t.Fatalf("Cache-Control %q", cc)
				}
			}
		}
		for _, scheme := range []string{"Token", "token", "TOKEN"} {
			if resp := a.with(scheme + " " + key); resp.Status != http.StatusOK {
				t.Fatalf("%s <key>: %s", scheme, resp)
			}
		}
		// The JWT login takes forms too, as drf-jwt's does.
		if resp := a.postLogin(loginPath, "form", testUser, testPassword, "192.0.2.11"); resp.Status != http.StatusOK {
			t.Fatalf("JWT login by form: %s", resp)
		}
	})
}

func TestTokenAuth_KeyCarriesTheUsersRole(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("viewer", auth.RoleViewer, "viewer-password")
		key := a.keyLogin("viewer", "viewer-password")
		if resp := a.with("Token " + key); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		wantError(t, a.do(http.MethodPost, a.coll, `{}`, "Authorization", "Token "+key), http.StatusForbidden)
		editor := a.keyLogin(testUser, testPassword)
		if resp := a.do(http.MethodPost, a.coll, res{server.CompiledResources()[0]}.body("TK", "By key", nil), "Authorization", "Token "+editor); resp.Status != http.StatusCreated {
			t.Fatalf("editor's create: %s", resp)
		}
	})
}

func TestTokenAuth_CheckingAKeyRunsNoBcrypt(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		key := a.keyLogin(testUser, testPassword)
		before := a.hasher.n.Load()
		for range 5 {
			if resp := a.with("Token " + key); resp.Status != http.StatusOK {
				t.Fatal(resp)
			}
			a.clock.Advance(3 * time.Second) // past the caches' lifetime now and then
		}
		if n := a.hasher.n.Load() - before; n != 0 {
			t.Fatalf("%d bcrypt comparisons for requests with a key", n)
		}
	})
}

func TestTokenAuth_DatabaseAloneYieldsNoWorkingKey(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		key := a.keyLogin(testUser, testPassword)
		rows, err := a.db.Read().AuthToken.Query().All(context.Background())
		if err != nil || len(rows) != 1 {
			t.Fatalf("key rows %v, %v", rows, err)
		}
		sum := sha256.Sum256([]byte(key))
		if row := rows[0]; row.KeyHash != hex.EncodeToString(sum[:]) || strings.Contains(row.Salt, key) {
			t.Fatalf("the row keeps %q and %q for key %s", row.KeyHash, row.Salt, key)
		}
		// A service with the same database and another secret, as a thief
		// with a copy would run, neither accepts the key nor answers it.
		cfg := *a.cfg
		cfg.JWTSecret = []byte("a-thiefs-secret-a-thiefs-secret-!!")
		stolen, err := server.New(&cfg, a.db, server.WithAuthOptions(auth.Options{Clock: a.clock.Now}))
		if err != nil {
			t.Fatal(err)
		}
		thief := &authAPI{api: &api{t: t, h: stolen.Handler(), db: a.db, cfg: &cfg}, clock: a.clock, coll: a.coll}
		wantUnauthorized(t, thief.with("Token "+key))
		resp := thief.postLogin(tokenLoginPath, "json", testUser, testPassword, "192.0.2.12")
		if resp.Status != http.StatusOK || strings.Contains(string(resp.Body), key) {
			t.Fatalf("login on the copy: %s", resp)
		}
	})
}

func TestTokenAuth_WrongCredentialsAreTheJWTLogins400AndThrottled(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		var bodies []string
		for i, c := range []struct{ user, password string }{{testUser, "wrong"}, {"nobody", "wrong"}} {
			resp := a.postLogin(tokenLoginPath, "json", c.user, c.password, "198.51.100.1")
			jwtResp := a.postLogin(loginPath, "json", c.user, c.password, "198.51.100.2")
			wantNonField(t, resp, "Unable to log in with provided credentials.")
			if string(resp.Body) != string(jwtResp.Body) || (i > 0 && string(resp.Body) != bodies[0]) {
				t.Fatalf("token login %s, JWT login %s", resp, jwtResp)
			}
			bodies = append(bodies, string(resp.Body))
		}
		// Two failures of testUser so far, one limit for both logins.
		wantError(t, a.postLogin(tokenLoginPath, "form", testUser, "wrong", "198.51.100.3"), http.StatusBadRequest)
		wantError(t, a.postLogin(tokenLoginPath, "form", testUser, testPassword, "198.51.100.4"), http.StatusTooManyRequests)
	}, func(c *config.Config) { c.LoginFailuresUser = 3 })
}

// revokesKey checks that revoke, done to a user holding a working key,
// stops the key within five seconds, and that the next login answers a
// new key that works.
func revokesKey(t *testing.T, revoke func(a *authAPI, name string) (password string)) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("keyholder", auth.RoleEditor, "keyholder-password")
		key := a.keyLogin("keyholder", "keyholder-password")
		if resp := a.with("Token " + key); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		password := revoke(a, "keyholder")
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("Token "+key))
		if password == "" {
			return
		}
		fresh := a.keyLogin("keyholder", password)
		if fresh == key {
			t.Fatal("the next login answered the revoked key")
		}
		if resp := a.with("Token " + fresh); resp.Status != http.StatusOK {
			t.Fatalf("the new key: %s", resp)
		}
		wantUnauthorized(t, a.with("Token "+key))
	})
}

func TestTokenAuth_DeletingTheUserVoidsTheKeyWithinFiveSeconds(t *testing.T) {
	revokesKey(t, func(a *authAPI, name string) string {
		if err := auth.DeleteUser(context.Background(), a.db, name); err != nil {
			a.t.Fatal(err)
		}
		return ""
	})
}

func TestTokenAuth_DisablingTheUserVoidsTheKeyForGood(t *testing.T) {
	revokesKey(t, func(a *authAPI, name string) string {
		if err := auth.SetActive(context.Background(), a.db, name, false); err != nil {
			a.t.Fatal(err)
		}
		// A disabled user gets no key.
		wantError(a.t, a.postLogin(tokenLoginPath, "json", name, "keyholder-password", "192.0.2.13"), http.StatusBadRequest)
		// Enabling again does not revive the old key.
		if err := auth.SetActive(context.Background(), a.db, name, true); err != nil {
			a.t.Fatal(err)
		}
		return "keyholder-password"
	})
}

func TestTokenAuth_PasswordChangeVoidsTheKeyWithinFiveSeconds(t *testing.T) {
	revokesKey(t, func(a *authAPI, name string) string {
		if err := auth.SetPassword(context.Background(), a.db, name, "another-password", a.cfg.BcryptCost); err != nil {
			a.t.Fatal(err)
		}
		return "another-password"
	})
}

func TestTokenAuth_RevokeTokenVoidsTheKeyWithinFiveSeconds(t *testing.T) {
	revokesKey(t, func(a *authAPI, name string) string {
		if err := auth.RevokeToken(context.Background(), a.db, name); err != nil {
			a.t.Fatal(err)
		}
		return "keyholder-password"
	})
}

func TestTokenAuth_MalformedOrUnknownKeysAre401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		key := a.keyLogin(testUser, testPassword)
		for _, h := range []string{
			"Token " + strings.Repeat("0", 40), "Token " + strings.ToUpper(key), "Token " + key[:39],
			"Token " + key + "0", "Token", "Token " + key + " extra", "Token " + a.token,
		} {
			wantUnauthorized(t, a.with(h))
		}
	})
}

// Revocation of a key must reach every replica: two servers on one
// database, each with its own caches.
func TestTokenAuth_RevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			clk := newClock()
			opts := []server.Option{server.WithAuthOptions(auth.Options{Clock: clk.Now})}
			a := &authAPI{api: newAPIWith(t, b, opts), clock: clk, coll: res{server.CompiledResources()[0]}.coll()}
			other, err := server.New(a.cfg, a.db, opts...)
			if err != nil {
				t.Fatal(err)
			}
			replica := &authAPI{api: &api{t: t, h: other.Handler(), db: a.db, cfg: a.cfg}, clock: clk, coll: a.coll}
			key := a.keyLogin(testUser, testPassword)
			for _, r := range []*authAPI{a, replica} {
				if resp := r.with("Token " + key); resp.Status != http.StatusOK {
					t.Fatalf("before: %s", resp)
				}
			}
			if err := auth.RevokeToken(context.Background(), a.db, testUser); err != nil {
				t.Fatal(err)
			}
			clk.Advance(5 * time.Second)
			for _, r := range []*authAPI{a, replica} {
				wantUnauthorized(t, r.with("Token "+key))
			}
		})
	}
}
