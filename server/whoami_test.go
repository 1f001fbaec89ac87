package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"

	"personnel/auth"
)

func TestWhoAmI_NamesTheUserAndRoleOfEveryScheme(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("looker", auth.RoleViewer, "looker-password")
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("looker:looker-password"))
		for _, tc := range []struct {
			authorization, user, role string
		}{
			{"JWT " + a.token, testUser, auth.RoleEditor},
			{"Bearer " + a.login("looker", "looker-password"), "looker", auth.RoleViewer},
			{basic, "looker", auth.RoleViewer},
		} {
			resp := a.do(http.MethodGet, "/personnel/api/whoami/", nil, "Authorization", tc.authorization)
			var got struct{ Username, Role string }
			if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &got) != nil {
				t.Fatalf("whoami: %s", resp)
			}
			if got.Username != tc.user || got.Role != tc.role {
				t.Errorf("whoami answered %+v, want %s (%s)", got, tc.user, tc.role)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("whoami: Cache-Control %q", cc)
			}
		}
		if resp := a.do(http.MethodGet, "/personnel/api/whoami", nil, "Authorization", "JWT "+a.token); resp.Status != http.StatusOK {
			t.Errorf("whoami without the slash: %s", resp)
		}
	})
}

func TestWhoAmI_WithoutCredentialsIs401(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantUnauthorized(t, a.do(http.MethodGet, "/personnel/api/whoami/", nil, "Authorization", ""))
	})
}
