package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	gojwt "github.com/golang-jwt/jwt/v4"

	"personnel/auth"
)

const verifyPath = "/jwt-api-token-verify/"

func (a *authAPI) verify(token string) *response {
	return a.do(http.MethodPost, verifyPath, map[string]string{"token": token}, "Authorization", "")
}

func TestVerify_AValidTokenComesBackTheSame(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, path := range []string{verifyPath, verifyPath[:len(verifyPath)-1]} {
			resp := a.do(http.MethodPost, path, map[string]string{"token": a.token}, "Authorization", "")
			if resp.Status != http.StatusOK || string(resp.Body) != `{"token":"`+a.token+`"}` {
				t.Fatalf("verify at %s: %s", path, resp)
			}
		}
	})
}

func TestVerify_ExpiredForgedOrRevokedTokensAre400WithNonFieldErrors(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantNonField(t, a.verify("not.a.token"), "Error decoding signature.")
		wantNonField(t, a.verify(sign(t, gojwt.SigningMethodHS256, []byte("another-secret-another-secret-xx!"), a.validClaims())), "Error decoding signature.")
		wantNonField(t, a.verify(sign(t, gojwt.SigningMethodNone, gojwt.UnsafeAllowNoneSignatureType, a.validClaims())), "Error decoding signature.")
		wantError(t, a.do(http.MethodPost, verifyPath, `{}`, "Authorization", ""), http.StatusBadRequest, "token", "This field is required.")

		a.addUser("leaver", auth.RoleViewer, "leaver-password")
		tok := a.login("leaver", "leaver-password")
		if resp := a.verify(tok); resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		auth.DeleteUser(context.Background(), a.db, "leaver")
		a.clock.Advance(5 * time.Second)
		wantNonField(t, a.verify(tok), "The user of this token no longer exists, is disabled, or changed password; log in again.")

		a.clock.Advance(a.cfg.JWTTTL)
		wantNonField(t, a.verify(a.token), "Signature has expired.")
	})
}
