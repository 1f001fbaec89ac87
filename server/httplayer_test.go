package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/logging"
	"personnel/server"
)

// metricsText returns what /metrics serves.
func (a *api) metricsText() string {
	a.t.Helper()
	resp := a.do(http.MethodGet, "/metrics", nil, "Authorization", "")
	if resp.Status != http.StatusOK {
		a.t.Fatal(resp)
	}
	return string(resp.Body)
}

// series counts the series of one metric in a /metrics text.
func series(text, name string) int {
	return len(regexp.MustCompile(`(?m)^`+name+`\{`).FindAllString(text, -1))
}

func TestMetrics_PathsWithAndWithoutTheSlashShareTheDocumentedLabel(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		noSlash := strings.TrimSuffix(a.coll, "/")
		a.do(http.MethodGet, noSlash, nil)
		a.do(http.MethodGet, noSlash+"/999999", nil)
		text := a.metricsText()
		if strings.Contains(text, `route="`+noSlash+`"`) || strings.Contains(text, `route="`+noSlash+`/{id}"`) {
			t.Errorf("a label without the slash:\n%s", grepLines(text, "personnel_http_requests_total"))
		}
		for _, want := range []string{
			`personnel_http_requests_total{method="GET",route="` + a.coll + `",status="200"}`,
			`personnel_http_requests_total{method="GET",route="` + a.coll + `{id}/",status="404"}`,
		} {
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestMetrics_405IsLabelledWithItsRoute(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		wantError(t, a.do(http.MethodDelete, a.coll, nil), http.StatusMethodNotAllowed)
		wantError(t, a.do(http.MethodPost, a.coll+"12/", nil), http.StatusMethodNotAllowed)
		wantError(t, a.do(http.MethodPost, a.coll+"12", nil), http.StatusMethodNotAllowed)
		text := a.metricsText()
		for _, want := range []string{
			`personnel_http_requests_total{method="DELETE",route="` + a.coll + `",status="405"}`,
			`personnel_http_requests_total{method="POST",route="` + a.coll + `{id}/",status="405"}`,
		} {
			if n := strings.Count(text, want); n != 1 {
				t.Errorf("%d lines of %s", n, want)
			}
			if !strings.Contains(text, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
}

func TestMetrics_InFlightGaugeAndBuildInfo(t *testing.T) {
	b := dbtest.Backends(t)[0]
	a := newAPIWith(t, b, []server.Option{server.WithVersion("v1.2.3"), server.WithRevision("0123abcd")})
	text := a.metricsText()
	// The scrape itself is in flight while the gauge is read.
	if !strings.Contains(text, "\npersonnel_http_requests_in_flight 1\n") {
		t.Errorf("no in-flight gauge of 1 during a scrape:\n%s", grepLines(text, "in_flight"))
	}
	if !strings.Contains(text, `personnel_build_info{revision="0123abcd",version="v1.2.3"} 1`) {
		t.Errorf("no build info:\n%s", grepLines(text, "build_info"))
	}
}

func grepLines(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Not parallel: it replaces the default logger.
func TestMetricsAndLogs_MadeUpMethodsAreOTHERAndAddNoSeries(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(logging.New(&buf, "json", slog.LevelInfo))
	defer slog.SetDefault(old)

	b := dbtest.Backends(t)[0]
	a := newAPI(t, b)
	coll := res{server.CompiledResources()[0]}.coll()
	send := func(method, path string) {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Method = method
		rec := httptest.NewRecorder()
		a.h.ServeHTTP(rec, req)
		if rec.Body.Len() > 500 {
			t.Fatalf("a %d-byte answer echoes the method: %.100s", rec.Body.Len(), rec.Body)
		}
	}
	// The first made-up method on a known and an unknown path, and a
	// scrape, make every series there will be.
	send("MADEUP", coll)
	send("MADEUP", "/nowhere")
	a.metricsText()
	before := a.metricsText()
	for i := range 20 {
		send(strings.Repeat("X", 10000)+fmt.Sprint(i), coll)
		send(fmt.Sprintf("M%d", i), fmt.Sprintf("/nowhere/%d/%s", i, strings.Repeat("p", 5000)))
	}
	after := a.metricsText()
	for _, name := range []string{"personnel_http_requests_total", "personnel_http_request_duration_seconds_count"} {
		if n, m := series(before, name), series(after, name); m != n {
			t.Errorf("%s grew from %d to %d series with made-up methods", name, n, m)
		}
	}
	if strings.Contains(after, "XXXX") || strings.Contains(after, `method="M1"`) || !strings.Contains(after, `method="OTHER"`) {
		t.Errorf("a made-up method became a label:\n%s", grepLines(after, "personnel_http_requests_total"))
	}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if len(line) > 1000 {
			t.Fatalf("a log line of %d bytes: %.200s...", len(line), line)
		}
		if strings.Contains(line, "XXXX") || strings.Contains(line, `"method":"M1"`) {
			t.Fatalf("a made-up method was logged: %s", line)
		}
	}
	if !strings.Contains(buf.String(), `"method":"OTHER"`) {
		t.Fatalf("no request logged with method OTHER:\n%s", buf.String())
	}
}

// logLines returns the request lines logged, decoded.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", line)
		}
		if rec["msg"] == "request" {
			out = append(out, rec)
		}
	}
	return out
}

// Not parallel: it replaces the default logger.
func TestLogs_RequestLineHasRouteTemplateRecordIDAndLevel(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(logging.New(&buf, "json", slog.LevelDebug))
	defer slog.SetDefault(old)

	b := dbtest.Backends(t)[0]
	a := newAPI(t, b)
	r := res{server.CompiledResources()[0]}
	id := a.create(r, "LOGID", "Logged", nil)
	a.do(http.MethodDelete, r.item(id), nil, "X-Request-ID", "req-delete")
	a.do(http.MethodGet, r.item(strings.Repeat("9", 500)), nil, "X-Request-ID", "req-long-id")
	a.do(http.MethodGet, "/healthz", nil, "X-Request-ID", "req-probe")
	a.db.Close()
	down := httptest.NewRequest(http.MethodGet, r.coll(), nil)
	down.Header.Set("Authorization", "JWT "+a.token)
	down.Header.Set("X-Request-ID", "req-down")
	a.h.ServeHTTP(httptest.NewRecorder(), down)

	byID := map[string]map[string]any{}
	for _, rec := range logLines(t, &buf) {
		if s, ok := rec["request_id"].(string); ok {
			byID[s] = rec
		}
	}
	del := byID["req-delete"]
	if del["route"] != r.coll()+"{id}/" || del["id"] != fmt.Sprint(id) || del["status"] != float64(204) || del["level"] != "INFO" {
		t.Errorf("delete line: %v", del)
	}
	if bytes, ok := del["bytes"].(float64); !ok || bytes != 0 {
		t.Errorf("an empty body logged as %v bytes", del["bytes"])
	}
	if ms, ok := del["latency_ms"].(float64); !ok || ms < 0 {
		t.Errorf("latency_ms is %v, not a number of milliseconds", del["latency_ms"])
	}
	if s, _ := byID["req-long-id"]["id"].(string); len(s) == 0 || len(s) > 100 {
		t.Errorf("a 500-character id logged as %d bytes", len(s))
	}
	if probe := byID["req-probe"]; probe["level"] != "DEBUG" {
		t.Errorf("health probe line: %v", probe)
	}
	if down := byID["req-down"]; down["status"].(float64) < 500 || down["level"] != "ERROR" {
		t.Errorf("5xx line: %v", down)
	}
}

func TestBody_ChunkedOverTheLimitIs413(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		data, _ := json.Marshal(r.body("BIG", strings.Repeat("x", 400), nil))
		req := httptest.NewRequest(http.MethodPost, r.coll(), bytes.NewReader(data))
		req.ContentLength = -1
		req.TransferEncoding = []string{"chunked"}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "JWT "+a.token)
		wantError(t, a.exchange(req, data), http.StatusRequestEntityTooLarge)
	}, func(c *config.Config) { c.BodyLimit = 256 })
}

// slowPost sends a POST whose body arrives in two parts, pause apart, and
// returns the answer; pause < 0 never sends the second part.
func slowPost(t *testing.T, addr, path, token string, body []byte, pause time.Duration) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: JWT %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, token, len(body), body[:5])
	if pause >= 0 {
		time.Sleep(pause)
		conn.Write(body[5:])
	}
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return resp
}

func TestBody_DatabaseDeadlineStartsWhenTheBodyHasArrived(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ts := httptest.NewServer(a.h)
		defer ts.Close()
		data, _ := json.Marshal(r.body("SLOWBODY", "Slow body", nil))
		// The body takes longer than the database deadline to arrive; the
		// deadline is long enough for a create on a loaded machine.
		resp := slowPost(t, ts.Listener.Addr().String(), r.coll(), a.token, data, 3*a.cfg.DBTimeout/2)
		if resp.StatusCode != http.StatusCreated {
			body, _ := io.ReadAll(resp.Body)
			t.Fatalf("a body slower than the database deadline: %d %s", resp.StatusCode, body)
		}
	}, func(c *config.Config) { c.DBTimeout = time.Second })
}

func TestBody_ArrivingTooSlowlyIs408(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		ts := httptest.NewUnstartedServer(a.h)
		ts.Config.ReadTimeout = 300 * time.Millisecond
		ts.Start()
		defer ts.Close()
		data, _ := json.Marshal(r.body("NEVER", "Never finished", nil))
		resp := slowPost(t, ts.Listener.Addr().String(), r.coll(), a.token, data, -1)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || strings.Contains(string(body), "database") {
			t.Fatalf("a body that never arrives: %d %s", resp.StatusCode, body)
		}
	})
}

func TestQuery_UnparsableQueryStringIs400(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "Q1", "One", nil)
		a.create(r, "Q2", "Two", nil)
		many := strings.Repeat("x=1&", 10001) + r.Fields.Code + "=Q1"
		for _, q := range []string{r.Fields.Code + "=Q1;x", many} {
			resp := a.do(http.MethodGet, r.query(q), nil)
			wantError(t, resp, http.StatusBadRequest)
		}
		if got := a.list(r, r.Fields.Code+"=Q1%3Bx"); got.Count != 0 {
			t.Errorf("an encoded ; is a character of the value: %d records", got.Count)
		}
	})
}

// hostRequest sends a GET of path with the given Host header.
func (a *api) hostRequest(path, host string, header ...string) *response {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.serve(req)
}

func TestHosts_OnlyAllowedHostsAreServed(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "H1", "One", nil)
		a.create(r, "H2", "Two", nil)
		for host, want := range map[string]int{
			"hr.example.com": 200, "HR.Example.COM:8000": 200, "example.org": 200, "api.example.org": 200,
			"evil.example": 400, "hr.example.com.evil.example": 400, "badexample.org": 400, "": 400,
		} {
			resp := a.hostRequest(r.query("page_size=1"), host)
			if resp.Status != want {
				t.Errorf("Host %q: %s", host, resp)
			}
			if want == 200 && !strings.Contains(string(resp.Body), "://"+host+"/") {
				t.Errorf("Host %q: next %s", host, resp.Body)
			}
		}
		// A trusted proxy's X-Forwarded-Host is vetted too.
		if resp := a.hostRequest(r.coll(), "hr.example.com", "X-Forwarded-Host", "evil.example"); resp.Status != 400 {
			t.Errorf("forwarded host from a trusted proxy: %s", resp)
		}
		// Probes come by address.
		for _, p := range []string{"/healthz", "/readyz"} {
			if resp := a.hostRequest(p, "10.1.2.3:8000"); resp.Status != 200 {
				t.Errorf("%s by address: %s", p, resp)
			}
		}
	}, func(c *config.Config) {
		c.AllowedHosts = []string{"hr.example.com", ".example.org", "example.com"} // example.com: httptest's own
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}   // httptest's RemoteAddr is 192.0.2.1
	})
}

func TestHosts_AnyHostInDevelopmentByDefault(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		if resp := a.hostRequest(r.coll(), "anything.example"); resp.Status != 200 {
			t.Errorf("%s", resp)
		}
	})
}

func TestHeaders_NosniffEverywhereAndNoStoreOnTokenAnswers(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, resp := range []*response{
			a.do(http.MethodGet, "/healthz", nil), a.do(http.MethodGet, a.coll, nil),
			a.do(http.MethodGet, "/nowhere", nil), a.do(http.MethodGet, a.coll, nil, "Authorization", ""),
		} {
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q on %s", got, resp)
			}
		}
		creds := map[string]string{"username": testUser, "password": testPassword}
		token := map[string]string{"token": a.token}
		for _, tc := range []struct {
			path string
			body any
		}{
			{"/jwt-api-token-auth/", creds},
			{"/jwt-api-token-auth", creds},
			{"/api-token-auth/", creds},
			{"/jwt-api-token-refresh/", token},
			{"/jwt-api-token-verify/", token},
			{"/jwt-api-token-auth/", map[string]string{"username": testUser, "password": "wrong password"}},
		} {
			resp := a.do(http.MethodPost, tc.path, tc.body, "Authorization", "")
			if got := resp.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("POST %s answered %d with Cache-Control %q", tc.path, resp.Status, got)
			}
		}
	})
}

func TestCORS_VaryOriginOnEveryAnswerWhenConfigured(t *testing.T) {
	forEachBackendAuth(t, func(t *testing.T, a *authAPI) {
		for _, origin := range []string{"", "https://evil.example.net", "https://hr.example.com"} {
			resp := a.do(http.MethodGet, a.coll, nil, "Origin", origin)
			if got := resp.Header.Values("Vary"); len(got) == 0 || !strings.Contains(strings.Join(got, ","), "Origin") {
				t.Errorf("Origin %q: Vary %q", origin, got)
			}
		}
	}, func(c *config.Config) { c.CORSOrigins = []string{"https://hr.example.com"} })
}
