package server_test

import (
	"net/http"
	"slices"
	"testing"

	"personnel/config"
)

func TestAuthSchemes_401ChallengesEveryEnabledSchemeJWTFirst(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, h := range []string{"", "Token nope", basic(testUser, "wrong"), "JWT nope", "Digest x"} {
			resp := a.with(h)
			wantError(t, resp, http.StatusUnauthorized)
			want := []string{`JWT realm="api"`, "Token", `Basic realm="api"`}
			if got := resp.Header.Values("WWW-Authenticate"); !slices.Equal(got, want) {
				t.Fatalf("%q: WWW-Authenticate %q, want %q", h, got, want)
			}
		}
		// Other errors carry no challenge.
		resp := a.do(http.MethodGet, a.coll+"999999/", nil)
		if resp.Status != http.StatusNotFound || resp.Header.Get("WWW-Authenticate") != "" {
			t.Fatalf("404: %s, challenge %q", resp, resp.Header.Get("WWW-Authenticate"))
		}
	})
}

func TestAuthSchemes_OnlyTheEnabledSchemesAreAccepted(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		key := a.keyLogin(testUser, testPassword)
		if resp := a.with("Token " + key); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		for _, h := range []string{"JWT " + a.token, basic(testUser, testPassword)} {
			resp := a.with(h)
			wantError(t, resp, http.StatusUnauthorized)
			if got := resp.Header.Values("WWW-Authenticate"); !slices.Equal(got, []string{"Token"}) {
				t.Fatalf("WWW-Authenticate %q, want only Token's", got)
			}
		}
	}, func(c *config.Config) { c.AuthSchemes = []string{"token"} })
}
