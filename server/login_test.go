package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"personnel/auth"
	"personnel/config"
)

const loginPath = "/jwt-api-token-auth/"

// tryLogin posts credentials from a client address.
func (a *authAPI) tryLogin(username, password, addr string) *response {
	req := newRequest(http.MethodPost, loginPath)
	body, _ := json.Marshal(map[string]string{"username": username, "password": password})
	req.Body = readCloser(body)
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "none")
	req.RemoteAddr = addr + ":40000"
	return a.serve(req)
}

func TestLogin_ReturnsAWorkingToken(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		resp := a.tryLogin(testUser, testPassword, "192.0.2.1")
		var body map[string]string
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil || len(body) != 1 || body["token"] == "" {
			t.Fatalf("login: %s", resp)
		}
		if r := a.with("JWT " + body["token"]); r.Status != http.StatusOK {
			t.Fatalf("using the token: %s", r)
		}
	})
}

func TestLogin_WrongCredentialsGiveOneAnswerAndOneHashComparison(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.addUser("quiet", auth.RoleViewer, "quiet-password")
		auth.SetActive(t.Context(), a.db, "quiet", false)
		var bodies []string
		for _, c := range []struct{ user, password string }{
			{testUser, "wrong password"},    // exists, wrong password
			{"nobody", "wrong password"},    // does not exist
			{"quiet", "quiet-password"},     // exists, right password, disabled
			{strings.Repeat("x", 500), "x"}, // absurd username
		} {
			before := a.hasher.n.Load()
			resp := a.tryLogin(c.user, c.password, "192.0.2.2")
			wantError(t, resp, http.StatusBadRequest)
			if n := a.hasher.n.Load() - before; n != 1 {
				t.Errorf("login as %.20q compared %d hashes, want exactly 1 whether or not the user exists", c.user, n)
			}
			bodies = append(bodies, string(resp.Body))
		}
		for _, b := range bodies {
			if b != `{"code":400,"msg":"Unable to log in with provided credentials.",`+
				`"errors":{"non_field_errors":["Unable to log in with provided credentials."]},`+
				`"non_field_errors":["Unable to log in with provided credentials."]}` {
				t.Errorf("answer %s differs from the contract's", b)
			}
		}
	})
}

func TestLogin_MalformedBodiesAre4xx(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantError(t, a.do(http.MethodPost, loginPath, `{"password":"x"}`, "Authorization", ""), http.StatusBadRequest, "username", "This field is required.")
		wantError(t, a.do(http.MethodPost, loginPath, `{"username":"", "password": 5}`, "Authorization", ""), http.StatusBadRequest,
			"username", "This field may not be blank.", "password", "Not a valid string.")
		wantError(t, a.do(http.MethodPost, loginPath, `[]`, "Authorization", ""), http.StatusBadRequest)
		wantError(t, a.do(http.MethodPost, loginPath, `{}`, "Authorization", "", "Content-Type", "text/plain"), http.StatusUnsupportedMediaType)
		wantError(t, a.do(http.MethodGet, loginPath, nil, "Authorization", ""), http.StatusMethodNotAllowed)
	})
}

func TestLogin_RepeatedFailuresForOneUsernameGet429(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for i := 0; i < a.cfg.LoginFailuresUser; i++ {
			wantError(t, a.tryLogin(testUser, "guess", "198.51.100."+strconv.Itoa(i+1)), http.StatusBadRequest)
		}
		// From yet another address, even the right password is refused.
		resp := a.tryLogin(testUser, testPassword, "198.51.100.99")
		wantError(t, resp, http.StatusTooManyRequests)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 || time.Duration(secs)*time.Second > a.cfg.LoginFailureWindow {
			t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
		}
		// Other users are not affected, and the window passes.
		a.addUser("bystander", auth.RoleViewer, "bystander-pw")
		if r := a.tryLogin("bystander", "bystander-pw", "198.51.100.99"); r.Status != http.StatusOK {
			t.Fatalf("another user: %s", r)
		}
		a.clock.Advance(time.Duration(secs) * time.Second)
		if r := a.tryLogin(testUser, testPassword, "198.51.100.99"); r.Status != http.StatusOK {
			t.Fatalf("after Retry-After: %s", r)
		}
	}, func(c *config.Config) { c.LoginFailuresUser = 3 })
}

func TestLogin_RepeatedFailuresFromOneAddressGet429(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for i := 0; i < a.cfg.LoginFailuresAddr; i++ {
			wantError(t, a.tryLogin("someone"+strconv.Itoa(i), "guess", "203.0.113.7"), http.StatusBadRequest)
		}
		wantError(t, a.tryLogin(testUser, testPassword, "203.0.113.7"), http.StatusTooManyRequests)
		if r := a.tryLogin(testUser, testPassword, "203.0.113.8"); r.Status != http.StatusOK {
			t.Fatalf("from another address: %s", r)
		}
	}, func(c *config.Config) { c.LoginFailuresAddr = 4 })
}
