package server_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v4"
	"golang.org/x/crypto/bcrypt"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/server"
)

// clock is real time plus an offset the test advances. It never lags the
// real time at which the test writes users, so a token it dates is never
// older than the user it belongs to.
type clock struct{ offset atomic.Int64 }

func newClock() *clock { return &clock{} }

func (c *clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// countingHasher counts bcrypt comparisons.
type countingHasher struct{ n atomic.Int64 }

func (h *countingHasher) Compare(hash []byte, password string) error {
	h.n.Add(1)
	return bcrypt.CompareHashAndPassword(hash, []byte(password))
}

// authAPI is an API with a controllable clock and a counting hasher.
type authAPI struct {
	*api
	clock  *clock
	hasher *countingHasher
	coll   string // a resource collection to call
}

// forEachBackendAuth runs fn on every backend with a fresh authAPI.
func forEachBackendAuth(t *testing.T, fn func(t *testing.T, a *authAPI), adjust ...func(*config.Config)) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			clk, h := newClock(), &countingHasher{}
			a := newAPIWith(t, b, []server.Option{server.WithAuthOptions(auth.Options{Clock: clk.Now, Hasher: h})}, adjust...)
			fn(t, &authAPI{api: a, clock: clk, hasher: h, coll: res{server.CompiledResources()[0]}.coll()})
		})
	}
}

// wantUnauthorized checks the contract's 401: status, body and challenge.
func wantUnauthorized(t *testing.T, resp *response) {
	t.Helper()
	wantError(t, resp, http.StatusUnauthorized)
	if got := resp.Header.Get("WWW-Authenticate"); got != `JWT realm="api"` {
		t.Fatalf("WWW-Authenticate = %q", got)
	}
}

// with sends a GET of the collection with the given Authorization header.
func (a *authAPI) with(authorization string) *response {
	return a.do(http.MethodGet, a.coll, nil, "Authorization", authorization)
}

// sign makes a token with the given claims, method and key.
func sign(t *testing.T, method gojwt.SigningMethod, key any, claims gojwt.MapClaims) string {
	t.Helper()
	s, err := gojwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validClaims are the claims of a good token of the test user.
func (a *authAPI) validClaims() gojwt.MapClaims {
	claims := gojwt.MapClaims{}
	parts := strings.Split(a.token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(payload, &claims)
	return claims
}

func TestAuth_NoTokenIs401WithChallenge(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantUnauthorized(t, a.with(""))
		resp := a.do(http.MethodPost, a.coll, `{}`, "Authorization", "")
		wantUnauthorized(t, resp)
		if !strings.Contains(string(resp.Body), "Authentication credentials were not provided.") {
			t.Fatalf("body %s", resp.Body)
		}
	})
}

func TestAuth_SchemeIsJWTInAnyCaseOrBearer(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, h := range []string{"JWT " + a.token, "jwt " + a.token, "Jwt " + a.token, "Bearer " + a.token, "bearer " + a.token, "JWT   " + a.token + " "} {
			if resp := a.with(h); resp.Status != http.StatusOK {
				t.Errorf("%.12q...: %s", h, resp)
			}
		}
		for _, h := range []string{"Token " + a.token, "Basic " + a.token, "JWT", a.token, "JWT" + a.token, "JWT " + a.token + " extra"} {
			wantUnauthorized(t, a.with(h))
		}
	})
}

func TestAuth_AlgNoneIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		tok := sign(t, gojwt.SigningMethodNone, gojwt.UnsafeAllowNoneSignatureType, a.validClaims())
		wantUnauthorized(t, a.with("JWT "+tok))
		// The same with an empty signature part spelled out.
		wantUnauthorized(t, a.with("JWT "+strings.TrimSuffix(tok, ".")+"."))
	})
}

func TestAuth_OtherAlgorithmThanConfiguredIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantUnauthorized(t, a.with("JWT "+sign(t, gojwt.SigningMethodHS512, a.cfg.JWTSecret, a.validClaims())))
		key, _ := rsa.GenerateKey(rand.Reader, 2048)
		wantUnauthorized(t, a.with("JWT "+sign(t, gojwt.SigningMethodRS256, key, a.validClaims())))
	})
}

func TestAuth_BadSignatureIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantUnauthorized(t, a.with("JWT "+sign(t, gojwt.SigningMethodHS256, []byte("another-secret-another-secret-xx!"), a.validClaims())))
		parts := strings.Split(a.token, ".")
		sig := []byte(parts[2])
		sig[3] ^= 1
		wantUnauthorized(t, a.with("JWT "+parts[0]+"."+parts[1]+"."+string(sig)))
	})
}

func TestAuth_TamperedPayloadIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("other", auth.RoleEditor, "other-password")
		claims := a.validClaims()
		claims["user_id"] = claims["user_id"].(float64) + 1
		claims["exp"] = claims["exp"].(float64) + 3600
		payload, _ := json.Marshal(claims)
		parts := strings.Split(a.token, ".")
		forged := parts[0] + "." + base64.RawURLEncoding.EncodeToString(payload) + "." + parts[2]
		wantUnauthorized(t, a.with("JWT "+forged))
	})
}

func TestAuth_ExpiredTokenIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		if resp := a.with("JWT " + a.token); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		a.clock.Advance(a.cfg.JWTTTL + time.Second)
		resp := a.with("JWT " + a.token)
		wantUnauthorized(t, resp)
		if !strings.Contains(string(resp.Body), "Signature has expired.") {
			t.Fatalf("body %s", resp.Body)
		}
	})
}

func TestAuth_ViewerGets403OnEveryWrite(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		r := res{server.CompiledResources()[0]}
		id := a.create(r, "V", "Viewed", nil)
		a.addUser("viewer", auth.RoleViewer, "viewer-password")
		viewer := a.login("viewer", "viewer-password")
		hdr := []string{"Authorization", "JWT " + viewer}
		for _, tc := range []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, r.coll(), r.body("NEW", "New", nil)},
			{http.MethodPut, r.item(id), r.body("V", "Changed", omit)},
			{http.MethodPatch, r.item(id), r.body("", "Changed", omit)},
			{http.MethodDelete, r.item(id), nil},
		} {
			wantError(t, a.do(tc.method, tc.path, tc.body, hdr...), http.StatusForbidden)
		}
		if resp := a.do(http.MethodGet, r.item(id), nil, hdr...); resp.Status != http.StatusOK || r.decodeRecord(t, resp.Body).Name != "Viewed" {
			t.Fatalf("viewer read: %s", resp)
		}
	})
}

func TestAuth_DeletedUsersTokenIs401WithinFiveSeconds(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("leaver", auth.RoleEditor, "leaver-password")
		tok := a.login("leaver", "leaver-password")
		if resp := a.with("JWT " + tok); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		if err := auth.DeleteUser(context.Background(), a.db, "leaver"); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+tok))
	})
}

func TestAuth_DisabledUsersTokenIs401WithinFiveSeconds(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("paused", auth.RoleEditor, "paused-password")
		tok := a.login("paused", "paused-password")
		a.with("JWT " + tok)
		if err := auth.SetActive(context.Background(), a.db, "paused", false); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+tok))
		// Enabling the user again does not revive tokens issued before.
		auth.SetActive(context.Background(), a.db, "paused", true)
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+tok))
		a.login("paused", "paused-password")
	})
}

func TestAuth_PasswordChangeRevokesEarlierTokens(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("mover", auth.RoleEditor, "first-password")
		tok := a.login("mover", "first-password")
		if err := auth.SetPassword(context.Background(), a.db, "mover", "second-password", a.cfg.BcryptCost); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+tok))
	})
}

// Revocation must reach every replica: two servers on one database, each
// with its own cache, both refuse the token once five seconds have passed.
func TestAuth_RevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			clk := newClock()
			opts := []server.Option{server.WithAuthOptions(auth.Options{Clock: clk.Now})}
			a := newAPIWith(t, b, opts)
			other, err := server.New(a.cfg, a.db, opts...)
			if err != nil {
				t.Fatal(err)
			}
			replica := &api{t: t, h: other.Handler(), db: a.db, cfg: a.cfg, token: a.token}
			coll := res{server.CompiledResources()[0]}.coll()
			for _, r := range []*api{a, replica} {
				if resp := r.do(http.MethodGet, coll, nil); resp.Status != http.StatusOK {
					t.Fatalf("before: %s", resp)
				}
			}
			if err := auth.SetActive(context.Background(), a.db, testUser, false); err != nil {
				t.Fatal(err)
			}
			clk.Advance(5 * time.Second)
			for _, r := range []*api{a, replica} {
				wantUnauthorized(t, r.do(http.MethodGet, coll, nil))
			}
		})
	}
}

func TestAuth_TokensSurviveARestartWithTheGeneratedSecret(t *testing.T) {
	t.Parallel()
	b := dbtest.Backends(t)[0] // the generated secret is SQLite's
	a := newAPI(t, b, func(c *config.Config) { c.JWTSecret = nil })
	restarted, err := server.New(a.cfg, a.db)
	if err != nil {
		t.Fatal(err)
	}
	again := &api{t: t, h: restarted.Handler(), db: a.db, cfg: a.cfg, token: a.token}
	if resp := again.do(http.MethodGet, res{server.CompiledResources()[0]}.coll(), nil); resp.Status != http.StatusOK {
		t.Fatalf("a token from before the restart: %s", resp)
	}
}
