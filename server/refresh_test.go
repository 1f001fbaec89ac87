package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v4"

	"personnel/auth"
)

const refreshPath = "/jwt-api-token-refresh/"

// refresh posts a token to the refresh endpoint.
func (a *authAPI) refresh(token string) *response {
	return a.do(http.MethodPost, refreshPath, map[string]string{"token": token}, "Authorization", "")
}

func tokenOf(t *testing.T, resp *response) string {
	t.Helper()
	var body struct{ Token string }
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil || body.Token == "" {
		t.Fatalf("refresh: %s", resp)
	}
	return body.Token
}

func TestRefresh_ReturnsANewWorkingTokenEvenAfterExpiry(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.clock.Advance(a.cfg.JWTTTL + time.Minute) // the login token has expired
		wantUnauthorized(t, a.with("JWT "+a.token))
		fresh := tokenOf(t, a.refresh(a.token))
		if resp := a.with("JWT " + fresh); resp.Status != http.StatusOK {
			t.Fatalf("the refreshed token: %s", resp)
		}
	})
}

// wantNonField checks a refused login, refresh or verify: 400 with msg
// in non_field_errors, as drf-jwt answers.
func wantNonField(t *testing.T, resp *response, msg string) {
	t.Helper()
	wantError(t, resp, http.StatusBadRequest)
	var body struct {
		Msg            string   `json:"msg"`
		NonFieldErrors []string `json:"non_field_errors"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.Msg != msg || len(body.NonFieldErrors) != 1 || body.NonFieldErrors[0] != msg {
		t.Fatalf("got %s, want msg and non_field_errors %q", resp, msg)
	}
}

func TestRefresh_PastTheWindowIs400RefreshHasExpired(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		// Refreshing along the way does not move the window: it is
		// measured from the original login.
		a.clock.Advance(a.cfg.JWTRefreshWindow - time.Hour)
		fresh := tokenOf(t, a.refresh(a.token))
		a.clock.Advance(2 * time.Hour)
		wantNonField(t, a.refresh(fresh), "Refresh has expired.")
		wantNonField(t, a.refresh(a.token), "Refresh has expired.")
	})
}

func TestRefresh_OfARemovedUserIs400(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("gone", auth.RoleEditor, "gone-password")
		tok := a.login("gone", "gone-password")
		auth.DeleteUser(context.Background(), a.db, "gone")
		a.clock.Advance(5 * time.Second)
		wantNonField(t, a.refresh(tok), "The user of this token no longer exists, is disabled, or changed password; log in again.")
	})
}

func TestRefresh_ForgedOrMalformedTokensAreRefused(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		claims := a.validClaims()
		const bad = "Error decoding signature."
		wantNonField(t, a.refresh(sign(t, gojwt.SigningMethodHS256, []byte("another-secret-another-secret-xx!"), claims)), bad)
		wantNonField(t, a.refresh(sign(t, gojwt.SigningMethodNone, gojwt.UnsafeAllowNoneSignatureType, claims)), bad)
		delete(claims, "orig_iat")
		wantNonField(t, a.refresh(sign(t, gojwt.SigningMethodHS256, a.cfg.JWTSecret, claims)), bad)
		wantNonField(t, a.refresh("not.a.token"), bad)
		wantError(t, a.do(http.MethodPost, refreshPath, `{}`, "Authorization", ""), http.StatusBadRequest, "token", "This field is required.")
	})
}
