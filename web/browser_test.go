package web_test

// The browser tests drive headless Chromium (Debian's chromium package)
// through the admin UI and the API reference page, served by the real
// server (server.New over httptest) on a real database: SQLite, and one
// server database when its DSN is set. One browser is started for the
// test binary and each test opens tabs in it.
//
// Without Chromium the tests skip, saying so, except with CI=true, where
// that is a failure. A failing test saves a screenshot of its tab and
// prints where. Every tab also fails its test when the page throws, logs
// an error (a refused Content-Security-Policy among them; failed
// requests, which the tests provoke, excepted), or requests anything from
// another origin (data: URIs, which are part of the page, excepted).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/logging"
	"personnel/server"
)

// screenshot, when set, is where TestAdmin_Screenshot writes the README's
// picture of the UI.
var screenshot = flag.String("screenshot", "", "write the README's screenshot of the admin UI to this PNG file")

// TestMain silences the servers' request logs (PERSONNEL_TEST_LOG=1 shows
// them) and ends the browser after the tests.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("PERSONNEL_TEST_LOG") == "" {
		slog.SetDefault(logging.New(io.Discard, "json", slog.LevelInfo))
	}
	code := m.Run()
	browser.close()
	os.Exit(code)
}

// Users every test server has.
const (
	editorName = "ed"
	viewerName = "vi"
	password   = "correct horse battery"
)

// waitLimit bounds every wait for the page: generous, for a machine busy
// with other tests; no test measures how long anything takes.
const waitLimit = 60 * time.Second

// chromium is a browser process and its profile directory.
type chromium struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	dir    string
	err    error // why it could not start
}

// browser is the one Chromium of the test binary, started on first use.
var browser chromium

// chromiumPath finds Chromium: PERSONNEL_CHROMIUM, else the usual names.
func chromiumPath() string {
	if p := os.Getenv("PERSONNEL_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func (b *chromium) start() {
	path := chromiumPath()
	if path == "" {
		b.err = fmt.Errorf("no Chromium found (PERSONNEL_CHROMIUM unset; chromium, chromium-browser, google-chrome not on PATH); install it with: apt-get install chromium")
		return
	}
	dir, err := os.MkdirTemp("", "personnel-chromium-")
	if err != nil {
		b.err = err
		return
	}
	b.dir = dir
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	// The first call starts the browser, whose life is its context's: no
	// timeout here.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		b.err = fmt.Errorf("starting %s: %w", path, err)
		return
	}
	b.ctx = ctx
	b.cancel = func() { cancelCtx(); cancelAlloc() }
}

// close ends the browser, if it started, and removes its profile.
func (b *chromium) close() {
	if b.cancel != nil {
		b.cancel()
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// needBrowser returns the browser's context, starting it on first use; a
// test without one skips (fails under CI=true, where Chromium must run).
func needBrowser(t testing.TB) context.Context {
	t.Helper()
	browser.once.Do(browser.start)
	if browser.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the browser tests cannot run: %v", browser.err)
		}
		t.Skipf("browser test skipped: %v", browser.err)
	}
	return browser.ctx
}

// backends are the databases the browser tests run on: SQLite, and the
// first server database whose DSN is set. The UI is the same on every
// one; the server's answers to it are what differ.
func backends(t testing.TB) []dbtest.Backend {
	all := dbtest.Backends(t)
	return all[:min(2, len(all))]
}

// forEachBackend runs fn on each backend, in parallel, each with a server
// of its own; the browser is started (or the test skipped) first.
func forEachBackend(t *testing.T, fn func(t *testing.T, s *site), opts ...siteOption) {
	needBrowser(t)
	for _, b := range backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, newSite(t, b, opts...))
		})
	}
}

// site is a real server on a fresh database, with an editor and a viewer.
type site struct {
	t     testing.TB
	url   string // http://127.0.0.1:port
	cfg   *config.Config
	db    *db.DB
	token string // the editor's, for set-up and checks through the API

	mu      sync.Mutex
	targets map[string]int // by resource name: the record required references point at
}

// siteOption adjusts a site: its configuration or the server's options.
type siteOption struct {
	config func(*config.Config)
	server []server.Option
}

func newSite(t testing.TB, b dbtest.Backend, opts ...siteOption) *site {
	t.Helper()
	cfg := b.Config(t)
	var srvOpts []server.Option
	for _, o := range opts {
		if o.config != nil {
			o.config(cfg)
		}
		srvOpts = append(srvOpts, o.server...)
	}
	d := dbtest.MustOpen(t, cfg)
	srv, err := server.New(cfg, d, srvOpts...)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	s := &site{t: t, url: ts.URL, cfg: cfg, db: d}
	for name, role := range map[string]string{editorName: auth.RoleEditor, viewerName: auth.RoleViewer} {
		if _, err := auth.AddUser(context.Background(), d, name, role, password, cfg.BcryptCost); err != nil {
			t.Fatalf("adding %s: %v", name, err)
		}
	}
	var tok struct{ Token string }
	s.mustJSON(s.call(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": editorName, "password": password}, ""), http.StatusOK, &tok)
	s.token = tok.Token
	return s
}

// answer is what the server answered a call.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// call sends a request to the site with the editor's token (or none for
// the token endpoints); header is name, value pairs.
func (s *site) call(method, path string, body any, header ...string) answer {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "JWT "+s.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, data}
}

// mustJSON checks the status and decodes the body into v.
func (s *site) mustJSON(a answer, status int, v any) {
	s.t.Helper()
	if a.status != status {
		s.t.Fatalf("got %d %s, want %d", a.status, a.body, status)
	}
	if v != nil {
		if err := json.Unmarshal(a.body, v); err != nil {
			s.t.Fatalf("decoding %s: %v", a.body, err)
		}
	}
}

// create adds a record to the resource at path through the API and
// returns its id; fields are key, value pairs.
func (s *site) create(path string, fields ...any) int {
	s.t.Helper()
	body := map[string]any{}
	for i := 0; i+1 < len(fields); i += 2 {
		body[fields[i].(string)] = fields[i+1]
	}
	var rec struct{ ID int }
	s.mustJSON(s.call(http.MethodPost, server.APIRoot+"/"+path+"/", body), http.StatusCreated, &rec)
	return rec.ID
}

// record reads a record through the API.
func (s *site) record(path string, id int) map[string]any {
	s.t.Helper()
	var m map[string]any
	s.mustJSON(s.call(http.MethodGet, fmt.Sprintf("%s/%s/%d/", server.APIRoot, path, id), nil), http.StatusOK, &m)
	return m
}

// tab is one browser tab of a test, on a site.
type tab struct {
	t    testing.TB
	ctx  context.Context
	site *site
	mu   sync.Mutex
	errs []string // what the page reported: exceptions, errors logged
	urls []string // every URL it requested
}

// open opens a tab. When the test fails the tab's screenshot is saved;
// when the page reported an error or asked another origin for anything,
// the test fails. opts adjust the tab (a browser context of its own).
func (s *site) open(t testing.TB, opts ...chromedp.ContextOption) *tab {
	t.Helper()
	tb := &tab{t: t, site: s}
	ctx, cancel := chromedp.NewContext(needBrowser(t), append([]chromedp.ContextOption{chromedp.WithListener(tb.listen)}, opts...)...)
	tb.ctx = ctx
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("opening a tab: %v", err)
	}
	t.Cleanup(cancel)
	t.Cleanup(func() {
		if t.Failed() {
			tb.saveScreenshot()
		}
	})
	t.Cleanup(func() {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		if len(tb.errs) > 0 {
			t.Errorf("the page reported errors:\n%s", strings.Join(tb.errs, "\n"))
		}
		for _, u := range tb.urls {
			// data: URIs are in the page itself (swagger-ui's icons);
			// blob: URLs of this origin hold what the page made (an
			// exported file).
			if !strings.HasPrefix(u, s.url+"/") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:"+s.url+"/") {
				t.Errorf("the page requested %s, not from its own origin %s", u, s.url)
			}
		}
	})
	return tb
}

// listen keeps what the page reports: it runs in the tab's event loop, so
// it only records.
func (tb *tab) listen(ev any) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			msg += " " + d.Exception.Description
		}
		tb.errs = append(tb.errs, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError && ev.Entry.Source != cdplog.EntrySourceNetwork {
			tb.errs = append(tb.errs, fmt.Sprintf("%s: %s", ev.Entry.Source, ev.Entry.Text))
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			tb.errs = append(tb.errs, "console.error called")
		}
	case *network.EventRequestWillBeSent:
		tb.urls = append(tb.urls, ev.Request.URL)
	}
}

// requested reports whether the page has asked for path.
func (tb *tab) requested(path string) bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, u := range tb.urls {
		if strings.HasPrefix(u, tb.site.url+path) {
			return true
		}
	}
	return false
}

// saveScreenshot writes the tab as it is to a file named after the test,
// in a directory that outlives it, and logs where.
func (tb *tab) saveScreenshot() {
	dir := filepath.Join(os.TempDir(), "personnel-ui-failures")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(tb.t.Name(), "_") + ".png"
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.t.Logf("no screenshot: %v", err)
		return
	}
	tb.t.Logf("screenshot of the failure: %s", path)
}

// run runs actions in the tab, failing the test on error.
func (tb *tab) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// js returns a JavaScript literal of v.
func js(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// eval evaluates expr in the tab, decoded as a T; a promise is awaited.
func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// do evaluates expr in the tab for its effect.
func (tb *tab) do(expr string) {
	tb.t.Helper()
	eval[chromedp.Void](tb, expr)
}

// waitFor waits until expr is true in the page; what says what for the
// failure message, which also shows the page's text.
func (tb *tab) waitFor(what, expr string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, waitLimit)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(waitLimit))); err != nil {
		body, _ := chromedp.Run(tb.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		tb.t.Fatalf("waiting for %s: %v\nthe page says:\n%s", what, err, body)
	}
}

// waitText waits until an element matching the CSS selector shows text
// containing want.
func (tb *tab) waitText(selector, want string) {
	tb.t.Helper()
	tb.waitFor(fmt.Sprintf("%q in %s", want, selector),
		fmt.Sprintf(`[...document.querySelectorAll(%s)].some((e) => e.textContent.includes(%s))`, js(selector), js(want)))
}

// text returns the text of the first element matching the CSS selector,
// "" when there is none.
func (tb *tab) text(selector string) string {
	tb.t.Helper()
	return eval[string](tb, fmt.Sprintf(`(document.querySelector(%s) || {textContent: ""}).textContent`, js(selector)))
}

// count returns how many elements match the CSS selector.
func (tb *tab) count(selector string) int {
	tb.t.Helper()
	return eval[int](tb, fmt.Sprintf(`document.querySelectorAll(%s).length`, js(selector)))
}

// click clicks, with the mouse, the element the selector finds once it is
// visible: an XPath when it starts with /, else CSS.
func (tb *tab) click(selector string) {
	tb.t.Helper()
	if strings.HasPrefix(selector, "/") {
		tb.run("clicking "+selector, chromedp.Click(selector, chromedp.NodeVisible))
	} else {
		tb.run("clicking "+selector, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
	}
}

// typeInto clears the input (CSS selector) and types text into it, as a
// person would.
func (tb *tab) typeInto(selector, text string) {
	tb.t.Helper()
	tb.run("waiting for "+selector, chromedp.WaitVisible(chromedp.CSS(selector)))
	// Emptied by script: chromedp.Clear empties the value attribute, which
	// no longer counts once the page has set the value.
	tb.do(fmt.Sprintf(`document.querySelector(%s).value = ""`, js(selector)))
	tb.run("typing into "+selector, chromedp.SendKeys(chromedp.CSS(selector), text, chromedp.NodeVisible))
}

// erase empties the input (CSS selector) as a person would: select all,
// then Backspace, so the page hears the change.
func (tb *tab) erase(selector string) {
	tb.t.Helper()
	tb.do(fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.focus(); e.select(); })()`, js(selector)))
	tb.key(kb.Backspace)
}

// key sends keys to the focused element.
func (tb *tab) key(keys string) {
	tb.t.Helper()
	tb.run("pressing keys", chromedp.KeyEvent(keys))
}

// button is the XPath of a button or link showing exactly text.
func button(text string) string {
	return fmt.Sprintf(`//*[(self::button or self::a) and normalize-space()=%s]`, xpathString(text))
}

// xpathString quotes s for XPath 1.0, which has no escapes.
func xpathString(s string) string {
	if !strings.Contains(s, "'") {
		return "'" + s + "'"
	}
	parts := strings.Split(s, "'")
	return "concat('" + strings.Join(parts, `', "'", '`) + "')"
}

// signIn opens the admin UI and signs in as user.
func (tb *tab) signIn(user string) {
	tb.t.Helper()
	tb.run("opening the admin UI", chromedp.Navigate(tb.site.url+"/admin/"))
	tb.typeInto("#username", user)
	tb.typeInto("#password", password)
	tb.click(button("Sign in"))
	tb.waitFor("the signed-in page", `document.querySelector("nav.resources") !== null`)
}

// goTo opens a fragment of the admin UI (#/departments/tree/3).
func (tb *tab) goTo(fragment string) {
	tb.t.Helper()
	tb.do(fmt.Sprintf(`location.hash = %s`, js(fragment)))
}

// treeItem is one visible item of the tree, as the page draws it.
type treeItem struct {
	Name     string
	Level    int
	Count    string // the children count shown, "" for none
	Expanded string // aria-expanded: "true", "false", or "" for a leaf
	Selected bool
}

// tree returns the visible items of the tree, in order.
func (tb *tab) tree() []treeItem {
	tb.t.Helper()
	return eval[[]treeItem](tb, `[...document.querySelectorAll("[role=treeitem]:not(.more)")].map((li) => ({
		Name: li.querySelector(":scope > .node .node-name").textContent,
		Level: Number(li.getAttribute("aria-level")),
		Count: (li.querySelector(":scope > .node .count") || {textContent: ""}).textContent.replace(/[^0-9]/g, ""),
		Expanded: li.getAttribute("aria-expanded") || "",
		Selected: li.getAttribute("aria-selected") === "true",
	}))`)
}

// res is a resource the tests drive, as configured: the tests hold
// whatever resources are compiled in to the same behaviour.
type res struct{ config.Resource }

// treeRes returns the first hierarchical resource compiled in.
func treeRes(t testing.TB) res {
	t.Helper()
	for _, r := range server.CompiledResources() {
		if r.Hierarchical() {
			return res{r}
		}
	}
	t.Skip("no hierarchical resource is configured")
	return res{}
}

// humanize is the UI's label of a key or path: "leave-types" is "Leave
// types", as Django REST Framework labels its form fields.
func humanize(key string) string {
	s := strings.TrimSpace(strings.NewReplacer("_", " ", "-", " ").Replace(key))
	return strings.ToUpper(s[:1]) + s[1:]
}

func (r res) title() string    { return humanize(r.Path) }
func (r res) singular() string { return strings.ToLower(humanize(r.Name)) }

// sample is a valid value of an extra field, for the required ones.
func sample(e config.ExtraField) any {
	switch e.Type {
	case config.TypeInteger:
		if e.Min != nil {
			return *e.Min
		}
		if e.Max != nil {
			return *e.Max
		}
		return 1
	case config.TypeBoolean:
		return true
	case config.TypeDate:
		return "2024-02-29"
	case config.TypeChoice:
		return e.Choices[0]
	}
	return "sample"
}

// add creates a record through the API (with the required extra fields)
// and returns its id; parent nil makes a root.
func (s *site) add(r res, code, name string, parent any) int {
	s.t.Helper()
	fields := []any{r.Fields.Code, code, r.Fields.Name, name}
	if r.Hierarchical() && parent != nil {
		fields = append(fields, r.Fields.Parent, parent)
	}
	for _, e := range r.Extra {
		if !e.Required {
			continue
		}
		switch e.Type {
		case config.TypeRef:
			fields = append(fields, e.Name, s.target(e.To))
		case config.TypeRefs:
			fields = append(fields, e.Name, []int{s.target(e.To)})
		default:
			fields = append(fields, e.Name, sample(e))
		}
	}
	return s.create(r.Path, fields...)
}

// Required references point at one record of their resource, made on
// first use: targetCode is its code, targetName its name.
const (
	targetCode = "TARGET"
	targetName = "The target"
)

// target returns the id of the record of the resource named to that
// required references point at, creating it the first time.
func (s *site) target(to string) int {
	s.t.Helper()
	s.mu.Lock()
	id, ok := s.targets[to]
	s.mu.Unlock()
	if ok {
		return id
	}
	id = s.add(resNamed(s.t, to), targetCode, targetName, nil)
	s.mu.Lock()
	if s.targets == nil {
		s.targets = map[string]int{}
	}
	s.targets[to] = id
	s.mu.Unlock()
	return id
}

// resNamed returns the compiled resource of that name.
func resNamed(t testing.TB, name string) res {
	t.Helper()
	for _, r := range server.CompiledResources() {
		if r.Name == name {
			return res{r}
		}
	}
	t.Fatalf("no resource %s is compiled in", name)
	return res{}
}

// pick chooses, in the record pane's picker of the field key, the record
// that typing text finds and whose label contains text, as a person would:
// type, wait for the match, click it.
func (tb *tab) pick(key, text string) {
	tb.t.Helper()
	tb.typeInto(fmt.Sprintf(`.detail-pane [data-field=%q] input[role=combobox]`, key), text)
	tb.waitText(fmt.Sprintf(`.detail-pane [data-field=%q] [role=option]`, key), text)
	tb.click(fmt.Sprintf(`//*[contains(@class, 'detail-pane')]//*[@data-field=%s]//*[@role='option'][contains(., %s)]`, xpathString(key), xpathString(text)))
}

// field is the CSS selector of the input of a field of the form in the
// record pane.
func field(key string) string {
	return fmt.Sprintf(`.detail-pane [data-field=%q] input, .detail-pane [data-field=%q] select`, key, key)
}

// fillRequired gives the form's required extra fields that have no
// default a value, as a person would have to.
func (tb *tab) fillRequired(r res) {
	tb.t.Helper()
	for _, e := range r.Extra {
		if !e.Required || e.Default != nil {
			continue
		}
		switch e.Type {
		case config.TypeString, config.TypeInteger:
			tb.typeInto(field(e.Name), fmt.Sprint(sample(e)))
		case config.TypeDate, config.TypeChoice:
			tb.do(fmt.Sprintf(`document.querySelector(%s).value = %s`, js(field(e.Name)), js(sample(e))))
		case config.TypeBoolean:
			tb.do(fmt.Sprintf(`document.querySelector(%s).checked = true`, js(field(e.Name))))
		case config.TypeRef, config.TypeRefs:
			tb.site.target(e.To)
			tb.pick(e.Name, targetCode)
		}
	}
}

// on returns the tab for t, a subtest of the test that opened it: the same
// page, with failures reported to t.
func (tb *tab) on(t testing.TB) *tab { return &tab{t: t, ctx: tb.ctx, site: tb.site} }
