package web_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"personnel/config"
	"personnel/db/dbtest"
	"personnel/server"
	"personnel/web"
)

// get asks the site for path with the given headers (name, value pairs),
// without credentials: the pages need none.
func (s *site) get(path string, header ...string) answer {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	// The transport would ask for gzip, and undo it, by itself.
	req.Header.Set("Accept-Encoding", "identity")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, data}
}

// sqliteSite is a site on SQLite, for tests that need no browser.
func sqliteSite(t *testing.T, adjust ...func(*config.Config)) *site {
	t.Helper()
	var opts []siteOption
	for _, f := range adjust {
		opts = append(opts, siteOption{config: f})
	}
	return newSite(t, dbtest.Backends(t)[0], opts...)
}

func TestPages_EveryFileCarriesAStrictPolicyAndRefusesFraming(t *testing.T) {
	s := sqliteSite(t)
	for prefix, pages := range map[string]*web.Pages{server.AdminPath: web.Admin(), server.DocsPath: web.Docs()} {
		for _, name := range append(pages.Names(), "") {
			a := s.get(prefix + "/" + name)
			if a.status != http.StatusOK {
				t.Errorf("%s/%s: %d", prefix, name, a.status)
				continue
			}
			csp := a.header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("%s/%s: Content-Security-Policy %q lacks %q", prefix, name, csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") || strings.Contains(csp, "script-src") {
				t.Errorf("%s/%s: Content-Security-Policy %q allows more script than the page's own files", prefix, name, csp)
			}
			for h, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := a.header.Get(h); got != want {
					t.Errorf("%s/%s: %s %q, want %q", prefix, name, h, got, want)
				}
			}
		}
	}
}

func TestPages_HTMLLoadsNoInlineScriptAndNothingFromAnotherHost(t *testing.T) {
	for _, dir := range []string{"admin", "docs"} {
		data, err := os.ReadFile(filepath.Join(dir, "index.html"))
		if err != nil {
			t.Fatal(err)
		}
		if m := regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]*\S[^<]*</script>|\son[a-z]+=|style=`).Find(data); m != nil {
			t.Errorf("%s/index.html has inline script or style: %s", dir, m)
		}
		for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllSubmatch(data, -1) {
			if ref := string(m[1]); strings.Contains(ref, "//") || strings.HasPrefix(ref, "/") {
				t.Errorf("%s/index.html refers to %s, not a file beside it", dir, ref)
			}
		}
	}
}

func TestPages_AreOffWithTheSettingOffButTheReferenceStays(t *testing.T) {
	s := sqliteSite(t, func(c *config.Config) { c.AdminUI = false })
	for _, path := range []string{"/admin", "/admin/", "/admin/main.js"} {
		a := s.get(path)
		var e struct{ Code int }
		if a.status != http.StatusNotFound || json.Unmarshal(a.body, &e) != nil || e.Code != http.StatusNotFound {
			t.Errorf("%s with the admin UI off: %d %s", path, a.status, a.body)
		}
	}
	if a := s.get(server.DocsPath + "/"); a.status != http.StatusOK {
		t.Errorf("the API reference with the admin UI off: %d", a.status)
	}
}

func TestPages_AnswerOnlyTheAllowedHosts(t *testing.T) {
	// 127.0.0.1 too, for the test's own log-in.
	s := sqliteSite(t, func(c *config.Config) { c.AllowedHosts = []string{"hr.example.com", "127.0.0.1"} })
	for _, path := range []string{"/admin/", "/admin/main.js", server.DocsPath + "/"} {
		if a := s.get(path, "Host", "elsewhere.example.com"); a.status != http.StatusBadRequest {
			t.Errorf("%s for another host: %d %s", path, a.status, a.body)
		}
		if a := s.get(path, "Host", "hr.example.com"); a.status != http.StatusOK {
			t.Errorf("%s for the allowed host: %d %s", path, a.status, a.body)
		}
	}
}

func TestPages_TheBareAddressRedirectsToTheDirectoryAndUnknownFilesAre404(t *testing.T) {
	s := sqliteSite(t)
	for path, want := range map[string]string{server.AdminPath: "admin/", server.DocsPath: "docs/"} {
		if a := s.get(path); a.status != http.StatusMovedPermanently || a.header.Get("Location") != want {
			t.Errorf("%s: %d to %q, want 301 to %q", path, a.status, a.header.Get("Location"), want)
		}
	}
	for _, path := range []string{"/admin/nothing.js", "/admin/../go.mod", server.DocsPath + "/nothing.css"} {
		if a := s.get(path); a.status != http.StatusNotFound {
			t.Errorf("%s: %d", path, a.status)
		}
	}
}

func TestPages_AreRevalidatedByETagAndSentCompressed(t *testing.T) {
	s := sqliteSite(t)
	plain := s.get("/admin/main.js")
	etag := plain.header.Get("ETag")
	if plain.status != http.StatusOK || etag == "" || plain.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("main.js: %d, ETag %q, Cache-Control %q", plain.status, etag, plain.header.Get("Cache-Control"))
	}
	if a := s.get("/admin/main.js", "If-None-Match", etag); a.status != http.StatusNotModified || len(a.body) != 0 {
		t.Errorf("revalidating the current version: %d, %d bytes", a.status, len(a.body))
	}
	if a := s.get("/admin/main.js", "If-None-Match", `"older"`); a.status != http.StatusOK {
		t.Errorf("revalidating an older version: %d", a.status)
	}
	gz := s.get("/admin/main.js", "Accept-Encoding", "gzip, deflate")
	if gz.header.Get("Content-Encoding") != "gzip" || !strings.Contains(gz.header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("asked for gzip: Content-Encoding %q, Vary %q", gz.header.Get("Content-Encoding"), gz.header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	if data, err := io.ReadAll(zr); err != nil || !bytes.Equal(data, plain.body) {
		t.Errorf("the gzipped file differs from the plain one (%v)", err)
	}
	if a := s.get("/admin/main.js", "Accept-Encoding", "gzip;q=0"); a.header.Get("Content-Encoding") != "" {
		t.Errorf("gzip refused with q=0 was sent anyway")
	}
}

// The admin UI's files, as a browser that takes gzip receives them, stay
// under 300 KB all together (the budget).
func TestAdminUI_FitsItsSizeBudget(t *testing.T) {
	pages := web.Admin()
	total := 0
	for _, name := range pages.Names() {
		total += pages.GzipSize(name)
	}
	if total > 300*1024 {
		t.Errorf("the admin UI's files are %d bytes compressed, over the 300 KB budget", total)
	}
	t.Logf("the admin UI's files: %d bytes compressed", total)
}

// No script of the admin UI hands a string to the HTML parser or to eval:
// every value from the service is set as text (dom.js), so data can never
// become markup or code.
func TestAdminUI_NoScriptParsesStringsAsHTMLOrCode(t *testing.T) {
	forbidden := regexp.MustCompile(`\.innerHTML|\.outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(\s*["'\x60]|srcdoc|createContextualFragment|DOMParser`)
	files, err := filepath.Glob(filepath.Join("admin", "*.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts found (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := forbidden.FindString(line); m != "" && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				t.Errorf("%s:%d uses %s", f, i+1, m)
			}
		}
	}
}

// The vendored files are those the manifest lists, unchanged (.ci/run
// also checks them against the npm packages themselves).
func TestVendored_FilesMatchTheManifest(t *testing.T) {
	f, err := os.Open("VENDORED")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 4 || !strings.Contains(fields[0], "@") || !strings.HasPrefix(fields[2], "web/") {
			t.Errorf("malformed line: %q", line)
			continue
		}
		data, err := os.ReadFile(strings.TrimPrefix(fields[2], "web/"))
		if err != nil {
			t.Errorf("%s: %v", fields[2], err)
			continue
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != fields[3] {
			t.Errorf("%s: sha256 %s, the manifest says %s (from %s)", fields[2], got, fields[3], fields[0])
		}
		listed++
	}
	if listed == 0 {
		t.Error("the manifest lists no file")
	}
	// Every file of the API reference page is ours or listed.
	ours := map[string]bool{"index.html": true, "init.js": true, "docs.css": true, "favicon.svg": true}
	manifest, _ := os.ReadFile("VENDORED")
	for _, name := range web.Docs().Names() {
		if !ours[name] && !bytes.Contains(manifest, []byte(" web/docs/"+name+" ")) {
			t.Errorf("docs/%s is neither ours nor in the manifest", name)
		}
	}
}
