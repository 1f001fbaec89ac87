package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	gojwt "github.com/golang-jwt/jwt/v4"

	"personnel/db/dbtest"
)

// Whatever the Authorization header holds, the API answers 200 only for
// genuine credentials in an accepted form (the JWT as JWT or Bearer, the
// API key as Token, the password as Basic, scheme words in any case), 401
// for anything else (or 429 once Basic guesses are throttled), and never a
// 5xx or a panic.
func FuzzAuthorization(f *testing.F) {
	a := newAPI(f, dbtest.Backends(f)[0])
	var keyBody struct{ Token string }
	json.Unmarshal(a.do(http.MethodPost, "/api-token-auth/", map[string]string{"username": testUser, "password": testPassword}, "Authorization", "").Body, &keyBody)
	key := keyBody.Token
	forged := func(method gojwt.SigningMethod, key any) string {
		s, _ := gojwt.NewWithClaims(method, gojwt.MapClaims{"user_id": 1, "orig_iat": 0, "exp": 9999999999}).SignedString(key)
		return s
	}
	for _, seed := range []string{
		"JWT " + a.token, "Bearer " + a.token, "jwt  " + a.token, "JWT " + a.token + "x", "JWT", "", "Basic dXNlcjpwYXNz",
		"JWT " + forged(gojwt.SigningMethodNone, gojwt.UnsafeAllowNoneSignatureType),
		"JWT " + forged(gojwt.SigningMethodHS256, []byte("not-the-secret-not-the-secret-xxx")),
		"JWT a.b.c", "JWT ....", "Bearer \x00", "JWT " + strings.Repeat("A", 5000),
		"Token " + key, "token " + key + "0", "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPassword)),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/personnel/api/departments/", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		fields := strings.Fields(header)
		scheme := func(names ...string) bool {
			return len(fields) == 2 && slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(fields[0], n) })
		}
		var decoded []byte
		if len(fields) == 2 {
			decoded, _ = base64.StdEncoding.DecodeString(fields[1])
		}
		// A fuzz worker runs this in a process of its own, with an API, a
		// user and a token of its own: the seeds hold the token of the
		// process that added them, signed with the same test secret, and
		// genuine here only if this process's user was made in the same
		// second (the token names the user's credentials as they were).
		genuine := scheme("jwt", "bearer") && (fields[1] == a.token || sameLogin(a, fields[1])) ||
			scheme("token") && fields[1] == key ||
			scheme("basic") && string(decoded) == testUser+":"+testPassword
		switch {
		case rec.Code >= 500:
			t.Fatalf("header %q: %d %s", header, rec.Code, rec.Body)
		case genuine && rec.Code != http.StatusOK:
			t.Fatalf("the genuine token in %q was refused: %d %s", header, rec.Code, rec.Body)
		case !genuine && rec.Code != http.StatusUnauthorized && !(scheme("basic") && rec.Code == http.StatusTooManyRequests):
			t.Fatalf("header %q: %d, want 401", header, rec.Code)
		}
	})
}

// sameLogin reports whether token is a JWT the API's secret signed (HS256,
// as the API signs), not expired, for the same user and the same state of
// its credentials (token generation and tokens_valid_after) as the API's
// own token a.token: one the API accepts as it accepts a.token.
func sameLogin(a *api, token string) bool {
	claims := func(token string) gojwt.MapClaims {
		t, err := gojwt.Parse(token, func(*gojwt.Token) (any, error) { return a.cfg.JWTSecret, nil },
			gojwt.WithValidMethods([]string{gojwt.SigningMethodHS256.Alg()}))
		if err != nil {
			return nil
		}
		c, _ := t.Claims.(gojwt.MapClaims)
		return c
	}
	got, own := claims(token), claims(a.token)
	if got == nil || own == nil {
		return false
	}
	for _, k := range []string{"user_id", "gen", "valid_after"} {
		if got[k] == nil || got[k] != own[k] {
			return false
		}
	}
	return true
}
