package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v4"

	"personnel/ent/user"
)

// signValid signs the test user's claims, changed by change, with the
// configured secret.
func (a *authAPI) signValid(t *testing.T, change func(claims gojwt.MapClaims, header map[string]any)) string {
	t.Helper()
	claims := a.validClaims()
	tok := gojwt.NewWithClaims(gojwt.SigningMethodHS256, claims)
	change(claims, tok.Header)
	s, err := tok.SignedString(a.cfg.JWTSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantRefreshRefused checks a refused refresh: drf-jwt's 400 with
// non_field_errors.
func wantRefreshRefused(t *testing.T, resp *response) {
	t.Helper()
	wantError(t, resp, http.StatusBadRequest, "non_field_errors", "")
}

// wantRefused checks that a token is refused both on an API request and
// by refresh.
func (a *authAPI) wantRefused(t *testing.T, tok string) {
	t.Helper()
	wantUnauthorized(t, a.with("JWT "+tok))
	wantRefreshRefused(t, a.refresh(tok))
}

func TestAuth_FutureNotBeforeIsRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, nbf := range []any{a.clock.Now().Add(time.Hour).Unix(), 1e300, "0"} {
			a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { c["nbf"] = nbf }))
		}
		// A past nbf is fine.
		past := a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { c["nbf"] = a.clock.Now().Add(-time.Minute).Unix() })
		if resp := a.with("JWT " + past); resp.Status != http.StatusOK {
			t.Fatalf("a token valid since a minute ago: %s", resp)
		}
	})
}

func TestAuth_UnknownCritHeaderIsRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.wantRefused(t, a.signValid(t, func(_ gojwt.MapClaims, h map[string]any) {
			h["crit"] = []string{"https://example.com/must-understand"}
			h["https://example.com/must-understand"] = true
		}))
	})
}

func TestAuth_FutureOrigIatIsRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) {
			c["orig_iat"] = a.clock.Now().Add(time.Hour).Unix()
		}))
	})
}

func TestRefresh_TokenWithoutExpIsRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantRefreshRefused(t, a.refresh(a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { delete(c, "exp") })))
	})
}

func TestAuth_TwoAuthorizationHeadersAre400(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		req := newRequest(http.MethodGet, a.coll)
		req.Header.Add("Authorization", "JWT "+a.token)
		req.Header.Add("Authorization", "JWT "+a.token)
		resp := a.serve(req)
		wantError(t, resp, http.StatusBadRequest)
		if resp.Header.Get("WWW-Authenticate") != "" {
			t.Fatalf("a 400 with a challenge: %v", resp.Header)
		}
	})
}

func TestAuth_MalformedGenerationClaimsAreRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, v := range []any{"0", -1, 0.5, nil} {
			a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { c["gen"] = v }))
			a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { c["valid_after"] = v }))
		}
		// One without the other.
		a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { delete(c, "gen") }))
		a.wantRefused(t, a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { delete(c, "valid_after") }))
	})
}

// Tokens issued before tokens carried a generation keep working until the
// user's password changes, and are refused after it, even when the change
// was made by that earlier version, which moved only tokens_valid_after.
func TestAuth_TokenWithoutAGenerationFollowsTheTimeRule(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		old := a.signValid(t, func(c gojwt.MapClaims, _ map[string]any) { delete(c, "gen"); delete(c, "valid_after") })
		if resp := a.with("JWT " + old); resp.Status != http.StatusOK {
			t.Fatalf("a token without a generation: %s", resp)
		}
		next := time.Now().Truncate(time.Second).Add(time.Second)
		if err := a.db.Write().User.Update().Where(user.Username(testUser)).SetTokensValidAfter(next).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+old))
		wantRefreshRefused(t, a.refresh(old))
	})
}

// A version before generations, run during an upgrade, moves only
// tokens_valid_after when a password changes: tokens that carry a
// generation are refused after it too.
func TestAuth_ChangeByAnEarlierVersionRevokesTokensWithAGeneration(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		if resp := a.with("JWT " + a.token); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		next := time.Now().Truncate(time.Second).Add(time.Second)
		if err := a.db.Write().User.Update().Where(user.Username(testUser)).SetTokensValidAfter(next).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.clock.Advance(5 * time.Second)
		wantUnauthorized(t, a.with("JWT "+a.token))
		wantRefreshRefused(t, a.refresh(a.token))
	})
}
