package server_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"sync"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v4"
	"golang.org/x/crypto/bcrypt"

	"personnel/auth"
	"personnel/config"
	"personnel/db/dbtest"
	"personnel/server"
)

// A NUL character in a username is Django REST Framework's 400 at every
// login endpoint, in every encoding (PostgreSQL cannot even compare such a
// name); through Basic, such a name (or one that is not UTF-8) is simply
// no user's.
func TestLogin_ANulInTheUsernameIs400(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, path := range []string{loginPath, tokenLoginPath} {
			for _, enc := range []string{"json", "form", "multipart"} {
				resp := a.postLogin(path, enc, testUser+"\x00", testPassword, "192.0.2.20")
				wantError(t, resp, http.StatusBadRequest, "username", "Null characters are not allowed.")
				resp = a.postLogin(path, enc, testUser, testPassword+"\x00", "192.0.2.20")
				wantError(t, resp, http.StatusBadRequest, "password", "Null characters are not allowed.")
			}
			// Not UTF-8: no user has such a name.
			wantError(t, a.postLogin(path, "form", "\xff\xfe", testPassword, "192.0.2.21"), http.StatusBadRequest, "non_field_errors", "")
		}
		for _, name := range []string{testUser + "\x00", "\xff\xfe"} {
			raw := "Basic " + base64.StdEncoding.EncodeToString([]byte(name+":"+testPassword))
			wantUnauthorized(t, a.with(raw))
		}
	})
}

// The scheme word and the credentials are split on spaces and tabs, as
// DRF splits the header's bytes; no other Unicode space separates them.
func TestAuth_SchemeAndCredentialsAreSplitOnSpaceOrTabOnly(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, sep := range []string{" ", "\t", " \t "} {
			if resp := a.with("JWT" + sep + a.token); resp.Status != http.StatusOK {
				t.Errorf("JWT%q<token>: %s", sep, resp)
			}
		}
		for _, sep := range []string{"\u00a0", "\u0085", "\u2003", "\u3000", "\u1680"} {
			wantUnauthorized(t, a.with("JWT"+sep+a.token))
			wantUnauthorized(t, a.with("Basic"+sep+base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPassword))))
		}
		// A letter of the scheme word only in ASCII: the Kelvin sign is no k.
		wantUnauthorized(t, a.with("To\u212aen "+a.keyLogin(testUser, testPassword)))
	})
}

// A token whose exp is not a whole number is refused by the API, refresh
// and verify alike (drf-jwt's "Error decoding signature.").
func TestAuth_ATokenWhoseExpIsNotAnIntegerIsRefusedEverywhere(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, exp := range []any{float64(a.clock.Now().Add(time.Hour).Unix()) + 0.5, 1e300, "9999999999"} {
			tok := a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { c["exp"] = exp })
			a.wantRefused(t, tok)
			wantRefreshRefused(t, a.verify(tok))
		}
	})
}

// costHasher compares with bcrypt and adds up the work of every
// comparison: 2^cost of the hash compared, which is what its time is
// proportional to (each step of cost doubles bcrypt's rounds), whatever
// the machine's load.
type costHasher struct {
	mu   sync.Mutex
	work int
}

func (h *costHasher) Compare(hash []byte, password string) error {
	if cost, err := bcrypt.Cost(hash); err == nil {
		h.mu.Lock()
		h.work += 1 << cost
		h.mu.Unlock()
	}
	return bcrypt.CompareHashAndPassword(hash, []byte(password))
}

func (h *costHasher) take() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := h.work
	h.work = 0
	return w
}

// A wrong password for a user whose hash was made at a lower cost than
// the configured one costs as much bcrypt work as one for a name that does
// not exist, which is compared with a hash at the configured cost: as
// Django's harden_runtime does, the user's hash is compared again until
// the work adds up. Otherwise timing would tell which users have not
// logged in since the cost was raised.
func TestLogin_AWrongPasswordCostsTheSameForAUserWithACheaperHash(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := &costHasher{}
			a := &authAPI{api: newAPIWith(t, b, []server.Option{server.WithAuthOptions(auth.Options{Hasher: h})},
				func(c *config.Config) { c.BcryptCost = 6 }), coll: res{server.CompiledResources()[0]}.coll()}
			if _, err := auth.AddUser(context.Background(), a.db, "old-cost", auth.RoleViewer, "old-cost-password", 4); err != nil {
				t.Fatal(err)
			}
			h.take()
			wantError(t, a.tryLogin("nobody", "wrong password", "192.0.2.30"), http.StatusBadRequest)
			unknown := h.take()
			wantError(t, a.tryLogin("old-cost", "wrong password", "192.0.2.31"), http.StatusBadRequest)
			if cheap := h.take(); cheap != unknown || unknown != 1<<6 {
				t.Fatalf("bcrypt work: %d for a cost-4 user's wrong password, %d for an unknown name; want both 2^6", cheap, unknown)
			}
			// The right password logs in, and stores a hash at the
			// configured cost, which is then refused at the same work.
			if resp := a.tryLogin("old-cost", "old-cost-password", "192.0.2.32"); resp.Status != http.StatusOK {
				t.Fatalf("login: %s", resp)
			}
			h.take()
			wantError(t, a.tryLogin("old-cost", "wrong password", "192.0.2.33"), http.StatusBadRequest)
			if work := h.take(); work != 1<<6 {
				t.Fatalf("bcrypt work %d after the upgrade, want 2^6", work)
			}
		})
	}
}
