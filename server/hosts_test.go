package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"personnel/config"
)

// badHosts are Host values with a port that is not digits, which Django
// refuses whatever ALLOWED_HOSTS says: a link built from one would point
// elsewhere ("127.0.0.1:evil.com" reads as the host evil.com to some
// parsers).
var badHosts = []string{"127.0.0.1:evil.com", "hr.example.com:x.evil.com", "hr.example.com:", "hr.example.com:80a",
	"hr.example.com:80:81", "evil.com@hr.example.com", "hr.example.com/x", "[::1]:evil.com", "[::1"}

// checkHosts checks that every bad host, direct or forwarded by a trusted
// proxy, is a 400 (also for a create, which would answer a Location), and
// that good ones are served with links to themselves (a forwarded one in
// lower case).
func checkHosts(t *testing.T, a *api, r res, good []string) {
	t.Helper()
	a.create(r, "H1", "One", nil)
	a.create(r, "H2", "Two", nil)
	for _, host := range badHosts {
		wantError(t, a.hostRequest(r.query("page_size=1"), host), http.StatusBadRequest)
		wantError(t, a.hostRequest(r.query("page_size=1"), "hr.example.com", "X-Forwarded-Host", host), http.StatusBadRequest)
		req := httptest.NewRequest(http.MethodPost, r.coll(), strings.NewReader(`{}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp := a.serve(req)
		wantError(t, resp, http.StatusBadRequest)
		if loc := resp.Header.Get("Location"); loc != "" {
			t.Errorf("Host %q: Location %q", host, loc)
		}
	}
	for _, host := range good {
		resp := a.hostRequest(r.query("page_size=1"), host)
		if resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `"next":"http://`+host+"/") {
			t.Errorf("Host %q: %s", host, resp)
		}
		resp = a.hostRequest(r.query("page_size=1"), "hr.example.com", "X-Forwarded-Host", host)
		if resp.Status != http.StatusOK || !strings.Contains(string(resp.Body), `"next":"http://`+strings.ToLower(host)+"/") {
			t.Errorf("X-Forwarded-Host %q: %s", host, resp)
		}
	}
}

// trustHTTPTest trusts httptest's client address (192.0.2.1) as a proxy.
func trustHTTPTest(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
}

func TestHosts_APortIsDigitsOnlyWithAllowedHosts(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		checkHosts(t, a, r, []string{"hr.example.com:8000", "api.example.org:443", "HR.example.com"})
	}, trustHTTPTest, func(c *config.Config) { c.AllowedHosts = []string{"hr.example.com", ".example.org", "example.com"} })
}

// As in Django, a malformed host is refused even where any host is
// allowed: in development with none set, and with "*".
func TestHosts_APortIsDigitsOnlyWhereAnyHostIsAllowed(t *testing.T) {
	for name, hosts := range map[string][]string{"none": nil, "star": {"*"}} {
		t.Run(name, func(t *testing.T) {
			forEach(t, func(t *testing.T, a *api, r res) {
				checkHosts(t, a, r, []string{"anything.example:8000", "127.0.0.1:8000", "[::1]:8000", "localhost"})
			}, trustHTTPTest, func(c *config.Config) { c.AllowedHosts = hosts })
		})
	}
}
