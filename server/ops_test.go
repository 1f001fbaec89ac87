package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/logging"
	"personnel/server"
)

func TestHealth_HealthzAndReadyzNeedNoToken(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, p := range []string{"/healthz", "/readyz"} {
			if resp := a.do(http.MethodGet, p, nil, "Authorization", ""); resp.Status != http.StatusOK {
				t.Errorf("%s: %s", p, resp)
			}
		}
	})
}

func TestHealth_ReadyzIs503WhenTheDatabaseIsGone(t *testing.T) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			a := newAPI(t, b)
			a.unavailable = true
			a.db.Close()
			resp := a.do(http.MethodGet, "/readyz", nil)
			wantError(t, resp, http.StatusServiceUnavailable)
			if resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if resp := a.do(http.MethodGet, "/healthz", nil); resp.Status != http.StatusOK {
				t.Errorf("healthz follows the database: %s", resp)
			}
		})
	}
}

func TestRequestID_IsEchoedOrMade(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		if got := a.do(http.MethodGet, a.coll, nil, "X-Request-ID", "abc-123").Header.Get("X-Request-ID"); got != "abc-123" {
			t.Errorf("given id echoed as %q", got)
		}
		made := a.do(http.MethodGet, a.coll, nil).Header.Get("X-Request-ID")
		bad := a.do(http.MethodGet, a.coll, nil, "X-Request-ID", "no spaces <allowed>").Header.Get("X-Request-ID")
		if len(made) != 32 || len(bad) != 32 || made == bad {
			t.Errorf("made ids %q, %q", made, bad)
		}
	})
}

// Not parallel: it replaces the default logger.
func TestLogs_AreStructuredWithRequestIDAndNeverHoldSecrets(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(logging.New(&buf, "json", slog.LevelDebug))
	defer slog.SetDefault(old)

	b := dbtest.Backends(t)[0]
	a := newAPI(t, b)
	r := res{server.CompiledResources()[0]}
	a.do(http.MethodPost, r.coll(), r.body("LOG", "Logged", nil), "X-Request-ID", "req-create-1")
	a.do(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": testUser, "password": "wrong " + testPassword}, "Authorization", "")
	a.do(http.MethodGet, r.item(999999), nil, "X-Request-ID", "req-missing-1")

	var found bool
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec["request_id"] == "req-create-1" && rec["msg"] == "request" {
			found = true
			if rec["method"] != "POST" || rec["route"] != r.coll() || rec["status"] != float64(201) || rec["user"] != testUser || rec["latency_ms"] == nil {
				t.Errorf("request line lacks fields: %s", line)
			}
		}
	}
	if !found {
		t.Fatalf("no request line with the given request id:\n%s", buf.String())
	}
	for _, secret := range []string{testPassword, a.token, string(a.cfg.JWTSecret)} {
		if strings.Contains(buf.String(), secret) {
			t.Fatalf("the logs contain a secret (%.8s...)", secret)
		}
	}
}

func TestMetrics_CountRequestsByRouteAndShowThePools(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		a.do(http.MethodGet, a.coll, nil)
		a.do(http.MethodGet, a.coll+"999999/", nil)
		resp := a.do(http.MethodGet, "/metrics", nil, "Authorization", "")
		if resp.Status != http.StatusOK {
			t.Fatal(resp)
		}
		text := string(resp.Body)
		for _, want := range []string{
			`personnel_http_requests_total{method="GET",route="` + a.coll + `",status="200"}`,
			`personnel_http_requests_total{method="GET",route="` + a.coll + `{id}/",status="404"}`,
			`personnel_http_request_duration_seconds_bucket{method="GET",route="` + a.coll + `"`,
			`go_sql_open_connections{db_name=`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestMetrics_CanBeSwitchedOff(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantError(t, a.do(http.MethodGet, "/metrics", nil, "Authorization", ""), http.StatusNotFound)
	}, func(c *config.Config) { c.Metrics = false })
}

func TestCORS_OnlyConfiguredOriginsAreAllowed(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		preflight := func(origin string) *response {
			return a.do(http.MethodOptions, a.coll, nil, "Origin", origin, "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "authorization,content-type")
		}
		resp := preflight("https://hr.example.com")
		if resp.Status != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://hr.example.com" ||
			!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
			t.Fatalf("preflight from an allowed origin: %d %v", resp.Status, resp.Header)
		}
		got := a.do(http.MethodGet, a.coll, nil, "Origin", "https://hr.example.com")
		if got.Header.Get("Access-Control-Allow-Origin") != "https://hr.example.com" || !strings.Contains(got.Header.Get("Access-Control-Expose-Headers"), "ETag") {
			t.Fatalf("request from an allowed origin: %v", got.Header)
		}
		if h := preflight("https://evil.example.net").Header.Get("Access-Control-Allow-Origin"); h != "" {
			t.Fatalf("a foreign origin was allowed: %q", h)
		}
		if h := a.do(http.MethodGet, a.coll, nil, "Origin", "https://evil.example.net").Header.Get("Access-Control-Allow-Origin"); h != "" {
			t.Fatalf("a foreign origin was allowed: %q", h)
		}
	}, func(c *config.Config) { c.CORSOrigins = []string{"https://hr.example.com"} })
}

func TestCORS_NoOriginIsAllowedByDefault(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		resp := a.do(http.MethodGet, a.coll, nil, "Origin", "https://hr.example.com")
		if h := resp.Header.Get("Access-Control-Allow-Origin"); h != "" {
			t.Fatalf("allowed %q with no origins configured", h)
		}
	})
}

func TestBodyLimit_Is413BeforeAnyHandlerReads(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		big := `{"username":"` + strings.Repeat("x", 300) + `","password":"y"}`
		wantError(t, a.do(http.MethodPost, "/jwt-api-token-auth/", big, "Authorization", ""), http.StatusRequestEntityTooLarge)
	}, func(c *config.Config) { c.BodyLimit = 256 })
}

func TestHEAD_IsAnsweredAsGETWithoutABody(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "HEAD-1", "Head", nil)
		ts := httptest.NewServer(a.h)
		defer ts.Close()
		head := func(path, token string) *http.Response {
			req, err := http.NewRequest(http.MethodHead, ts.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				req.Header.Set("Authorization", "JWT "+token)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if body, _ := io.ReadAll(resp.Body); len(body) != 0 {
				t.Errorf("HEAD %s sent a body: %q", path, body)
			}
			return resp
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			if resp := head(p, ""); resp.StatusCode != http.StatusOK {
				t.Errorf("HEAD %s: %d", p, resp.StatusCode)
			}
		}
		resp := head(r.item(id), a.token)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") != a.do(http.MethodGet, r.item(id), nil).Header.Get("ETag") {
			t.Errorf("HEAD of a record: %d, ETag %q", resp.StatusCode, resp.Header.Get("ETag"))
		}
		if resp := head(r.coll(), ""); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("HEAD without a token: %d", resp.StatusCode)
		}
		if resp := head(r.item(id+1000), a.token); resp.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD of a missing record: %d", resp.StatusCode)
		}
	})
}

func TestAPIRoot_LinksEveryResourceAndTheDocumentWithoutAToken(t *testing.T) {
	t.Parallel()
	a := newAPI(t, dbtest.Backends(t)[0])
	a.token = ""
	for _, path := range []string{server.APIRoot + "/", server.APIRoot} {
		resp := a.do(http.MethodGet, path, nil)
		var links map[string]string
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &links) != nil {
			t.Fatalf("GET %s: %s", path, resp)
		}
		for _, r := range server.CompiledResources() {
			if links[r.Path] != "http://example.com"+server.APIRoot+"/"+r.Path+"/" {
				t.Errorf("GET %s: %s links to %q", path, r.Path, links[r.Path])
			}
		}
		if links["openapi"] != "http://example.com"+server.APIRoot+"/openapi.json" {
			t.Errorf("GET %s: openapi links to %q", path, links["openapi"])
		}
	}
}
