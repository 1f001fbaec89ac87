package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gojwt "github.com/golang-jwt/jwt/v4"

	"personnel/db/dbtest"
)

// Whatever the Authorization header holds, the API answers 200 only for
// the genuine token in an accepted form (JWT or Bearer, any case), 401
// for anything else, and never a 5xx or a panic.
func FuzzAuthorization(f *testing.F) {
	a := newAPI(f, dbtest.Backends(f)[0])
	forged := func(method gojwt.SigningMethod, key any) string {
		s, _ := gojwt.NewWithClaims(method, gojwt.MapClaims{"user_id": 1, "orig_iat": 0, "exp": 9999999999}).SignedString(key)
		return s
	}
	for _, seed := range []string{
		"JWT " + a.token, "Bearer " + a.token, "jwt  " + a.token, "JWT " + a.token + "x", "JWT", "", "Basic dXNlcjpwYXNz",
		"JWT " + forged(gojwt.SigningMethodNone, gojwt.UnsafeAllowNoneSignatureType),
		"JWT " + forged(gojwt.SigningMethodHS256, []byte("not-the-secret-not-the-secret-xxx")),
		"JWT a.b.c", "JWT ....", "Bearer \x00", "JWT " + strings.Repeat("A", 5000),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/personnel/api/departments/", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		fields := strings.Fields(header)
		genuine := len(fields) == 2 && fields[1] == a.token &&
			(strings.EqualFold(fields[0], "jwt") || strings.EqualFold(fields[0], "bearer"))
		switch {
		case rec.Code >= 500:
			t.Fatalf("header %q: %d %s", header, rec.Code, rec.Body)
		case genuine && rec.Code != http.StatusOK:
			t.Fatalf("the genuine token in %q was refused: %d %s", header, rec.Code, rec.Body)
		case !genuine && rec.Code != http.StatusUnauthorized:
			t.Fatalf("header %q: %d, want 401", header, rec.Code)
		}
	})
}
