package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"personnel/auth"
	"personnel/config"
	"personnel/db"
	"personnel/db/dbtest"
	"personnel/server"
)

// api is a server under test: the real router on a real database, and the
// token of an editor that every request carries unless told otherwise.
type api struct {
	t        testing.TB
	h        http.Handler
	srv      *server.Server
	db       *db.DB
	cfg      *config.Config
	backend  string
	token    string
	contract *contract // every exchange is checked against the OpenAPI document
	// unavailable allows 503, for tests that take the database away; in
	// any other test a 503 is a failure (a lock timeout, say).
	unavailable bool
	// targets are the records withTargets made, by resource and field.
	targets *sync.Map
}

// Credentials of the editor every test API has.
const (
	testUser     = "tester"
	testPassword = "correct horse battery"
)

// newAPI starts the real handler on a fresh database of backend b, with an
// editor logged in; adjust may change the configuration first.
func newAPI(t testing.TB, b dbtest.Backend, adjust ...func(*config.Config)) *api {
	t.Helper()
	return newAPIWith(t, b, nil, adjust...)
}

// newAPIWith is newAPI with server options (a clock, a hasher).
func newAPIWith(t testing.TB, b dbtest.Backend, opts []server.Option, adjust ...func(*config.Config)) *api {
	t.Helper()
	cfg := b.Config(t)
	for _, f := range adjust {
		f(cfg)
	}
	return newAPIOn(t, b, cfg, dbtest.MustOpen(t, cfg), opts...)
}

// newAPIOn is newAPIWith on a database opened already (with keepers added
// to it, say).
func newAPIOn(t testing.TB, b dbtest.Backend, cfg *config.Config, d *db.DB, opts ...server.Option) *api {
	t.Helper()
	srv, err := server.New(cfg, d, opts...)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	a := &api{t: t, h: srv.Handler(), srv: srv, db: d, cfg: cfg, backend: b.Name, targets: &sync.Map{}}
	a.contract = loadContract(t, a.h)
	a.addUser(testUser, auth.RoleEditor, testPassword)
	a.token = a.login(testUser, testPassword)
	return a
}

// addUser creates a user directly in the database.
func (a *api) addUser(name, role, password string) {
	a.t.Helper()
	if _, err := auth.AddUser(context.Background(), a.db, name, role, password, a.cfg.BcryptCost); err != nil {
		a.t.Fatalf("adding user %s: %v", name, err)
	}
}

// login returns a token for the user, which must be able to log in.
func (a *api) login(name, password string) string {
	a.t.Helper()
	resp := a.do(http.MethodPost, "/jwt-api-token-auth/", map[string]string{"username": name, "password": password}, "Authorization", "")
	var body struct{ Token string }
	if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil || body.Token == "" {
		a.t.Fatalf("login as %s: %s", name, resp)
	}
	return body.Token
}

// res is the resource a contract test runs against.
type res struct{ config.Resource }

// forEach runs fn on every backend (in parallel, each with its own
// database) and, within it, on every compiled resource. A resource added by
// config is therefore held to the same contract as departments and areas.
func forEach(t *testing.T, fn func(t *testing.T, a *api, r res), adjust ...func(*config.Config)) {
	forEachWhere(t, func(config.Resource) bool { return true }, fn, adjust...)
}

// forEachTree is forEach over the hierarchical resources: the tests of
// parents and of the hierarchy, which flat resources do not have.
func forEachTree(t *testing.T, fn func(t *testing.T, a *api, r res), adjust ...func(*config.Config)) {
	forEachWhere(t, config.Resource.Hierarchical, fn, adjust...)
}

func forEachWhere(t *testing.T, which func(config.Resource) bool, fn func(t *testing.T, a *api, r res), adjust ...func(*config.Config)) {
	t.Parallel()
	for _, b := range dbtest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			a := newAPI(t, b, adjust...)
			for _, desc := range server.CompiledResources() {
				if !which(desc) {
					continue
				}
				t.Run(desc.Name, func(t *testing.T) {
					a := *a
					a.t = t
					fn(t, &a, res{a.withTargets(desc)})
				})
			}
		})
	}
}

// withTargets returns desc for tests that create its records: each of its
// required references gets a record of the resource it refers to, made
// now (so that the target's own tests never see it), whose id the field's
// Default holds for sample to give (a reference has no default in a real
// config).
func (a *api) withTargets(desc config.Resource) config.Resource {
	a.t.Helper()
	desc.Extra = slices.Clone(desc.Extra)
	for i, e := range desc.Extra {
		if !e.IsRef() || !e.Required {
			continue
		}
		key := desc.Name + "." + e.Name
		if id, ok := a.targets.Load(key); ok {
			desc.Extra[i].Default = config.String(id.(string))
			continue
		}
		for _, t := range server.CompiledResources() {
			if t.Name != e.To {
				continue
			}
			if t.Name != desc.Name {
				t = a.withTargets(t)
			}
			target := res{t}
			code := fmt.Sprintf("T-%s-%s", desc.Name, e.Name)
			if t.Limits.Code < len(code) {
				code = code[:t.Limits.Code]
			}
			id := strconv.Itoa(a.create(target, code, "Target of "+desc.Name, nil))
			a.targets.Store(key, id)
			desc.Extra[i].Default = config.String(id)
		}
	}
	return desc
}

// sample is a valid JSON value of an extra field, for the required ones a
// create must give: for a reference, the record withTargets made.
func sample(e config.ExtraField) any {
	switch e.Type {
	case config.TypeRef:
		return json.Number(*e.Default)
	case config.TypeRefs:
		return []any{json.Number(*e.Default)}
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

func (r res) coll() string          { return server.APIRoot + "/" + r.Path + "/" }
func (r res) item(id any) string    { return fmt.Sprintf("%s%v/", r.coll(), id) }
func (r res) query(q string) string { return r.coll() + "?" + q }

// omit leaves the parent out of a body.
var omit = struct{}{}

// created returns the extra fields, as rendered JSON, of a record created
// with body: the samples of the required ones, the defaults (or null) of
// the others.
func (r res) created() map[string]string {
	m := map[string]string{}
	for _, e := range r.Extra {
		var v any
		switch {
		case e.Required:
			v = sample(e)
		case e.Type == config.TypeRefs:
			v = []int{}
		case e.Default == nil:
			v = nil
		case e.Type == config.TypeInteger || e.Type == config.TypeBoolean:
			m[e.Name] = *e.Default // written as JSON already
			continue
		default:
			v = *e.Default
		}
		data, _ := json.Marshal(v)
		m[e.Name] = string(data)
	}
	return m
}

// body returns a JSON body with the given code, name and parent, and a
// value for each required extra field; an empty code or name, or omit as
// parent, leaves that field out (and so does a flat resource's nil parent).
func (r res) body(code, name string, parent any) map[string]any {
	m := map[string]any{}
	if code != "" {
		m[r.Fields.Code] = code
	}
	if name != "" {
		m[r.Fields.Name] = name
	}
	if parent != omit && (r.Hierarchical() || parent != nil) {
		m[r.Fields.Parent] = parent
	}
	for _, e := range r.Extra {
		if e.Required {
			m[e.Name] = sample(e)
		}
	}
	return m
}

// response is what the server answered.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// leak matches text that must never reach a client. SQL is matched in
// capitals, as every statement is written, so that Django's own words
// ("Select a valid choice.") are not taken for it.
var leak = regexp.MustCompile(`(?i:sqlite|mysql|mariadb|constraint|syntax error|goroutine|\.go:\d|Error \d{4}|\bent: )|SELECT |INSERT |UPDATE `)

// do sends a request through the router. body may be a string (sent as
// is) or any value (sent as JSON); header is name, value pairs. Every
// answer is checked against the contract's rules for all responses: no 5xx,
// and an error body that is JSON with code equal to the status, a message,
// and nothing internal.
func (a *api) do(method, path string, body any, header ...string) *response {
	a.t.Helper()
	var data []byte
	contentType := ""
	switch b := body.(type) {
	case nil:
	case string:
		data, contentType = []byte(b), "application/json"
	case []byte:
		data, contentType = b, "application/json"
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			a.t.Fatal(err)
		}
		contentType = "application/json"
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(data))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if a.token != "" {
		req.Header.Set("Authorization", "JWT "+a.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	return a.exchange(req, data)
}

// exchange sends req (whose body is data) through the router and checks
// the answer against the rules for all responses and the OpenAPI document.
func (a *api) exchange(req *http.Request, data []byte) *response {
	a.t.Helper()
	sent := req.Clone(context.Background())
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	resp := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	checkResponse(a.t, req.Method+" "+req.URL.String(), resp, a.unavailable)
	if a.contract != nil {
		a.contract.check(a.t, sent, data, resp)
	}
	return resp
}

// checkResponse holds every response to the rules that apply to all;
// unavailable allows a 503.
func checkResponse(t testing.TB, what string, resp *response, unavailable bool) {
	t.Helper()
	if resp.Status >= 500 && !(unavailable && resp.Status == http.StatusServiceUnavailable) {
		t.Errorf("%s: server error %s", what, resp)
	}
	if resp.Status < 400 {
		return
	}
	var e struct {
		Code   int             `json:"code"`
		Msg    string          `json:"msg"`
		Errors json.RawMessage `json:"errors"` // an object, or a bulk create's list of them
	}
	if err := json.Unmarshal(resp.Body, &e); err != nil {
		t.Errorf("%s: error body is not JSON: %s", what, resp)
	}
	if e.Code != resp.Status || e.Msg == "" {
		t.Errorf("%s: error body must have code %d and a msg: %s", what, resp.Status, resp.Body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: error Content-Type %q", what, ct)
	}
	if m := leak.Find(resp.Body); m != nil {
		t.Errorf("%s: error body leaks %q: %s", what, m, resp.Body)
	}
}

// record is one record as the API renders it.
type record struct {
	ID     int
	Code   string
	Name   string
	Parent *int
	Extra  map[string]string // extra fields, as rendered JSON
}

// decodeRecord decodes a record, insisting on exactly the resource's fields.
func (r res) decodeRecord(t testing.TB, data []byte) record {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("record is not a JSON object: %s", data)
	}
	return r.fromMap(t, m)
}

func (r res) fromMap(t testing.TB, m map[string]json.RawMessage) record {
	t.Helper()
	want := map[string]bool{"id": true, r.Fields.Code: true, r.Fields.Name: true}
	if r.Hierarchical() {
		want[r.Fields.Parent] = true
	}
	for _, e := range r.Extra {
		want[e.Name] = true
	}
	if len(m) != len(want) {
		t.Fatalf("record has %d fields, want %d: %v", len(m), len(want), m)
	}
	rec := record{Extra: map[string]string{}}
	for key := range want {
		raw, ok := m[key]
		if !ok {
			t.Fatalf("record lacks %q: %v", key, m)
		}
		var dst any
		switch key {
		case "id":
			dst = &rec.ID
		case r.Fields.Code:
			dst = &rec.Code
		case r.Fields.Name:
			dst = &rec.Name
		case r.Fields.Parent:
			dst = &rec.Parent
		default:
			rec.Extra[key] = string(raw)
			continue
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			t.Fatalf("record field %q = %s: %v", key, raw, err)
		}
	}
	return rec
}

// listBody is the list envelope.
type listBody struct {
	Count    int
	Next     *string
	Previous *string
	Msg      string
	Code     int
	Data     []record
}

func (r res) decodeList(t testing.TB, resp *response) listBody {
	t.Helper()
	if resp.Status != http.StatusOK {
		t.Fatalf("list: %s", resp)
	}
	var raw struct {
		Count    *int                         `json:"count"`
		Next     *string                      `json:"next"`
		Previous *string                      `json:"previous"`
		Msg      *string                      `json:"msg"`
		Code     *int                         `json:"code"`
		Data     []map[string]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(resp.Body, &raw); err != nil {
		t.Fatalf("list body: %v: %s", err, resp.Body)
	}
	if raw.Count == nil || raw.Msg == nil || raw.Code == nil || raw.Data == nil {
		t.Fatalf("list envelope lacks count, msg, code or data: %s", resp.Body)
	}
	lb := listBody{Count: *raw.Count, Next: raw.Next, Previous: raw.Previous, Msg: *raw.Msg, Code: *raw.Code}
	for _, m := range raw.Data {
		lb.Data = append(lb.Data, r.fromMap(t, m))
	}
	return lb
}

// create creates a record and returns its id.
func (a *api) create(r res, code, name string, parent any) int {
	a.t.Helper()
	resp := a.do(http.MethodPost, r.coll(), r.body(code, name, parent))
	if resp.Status != http.StatusCreated {
		a.t.Fatalf("create %s: %s", code, resp)
	}
	return r.decodeRecord(a.t, resp.Body).ID
}

// get reads a record, which must exist.
func (a *api) get(r res, id int) record {
	a.t.Helper()
	resp := a.do(http.MethodGet, r.item(id), nil)
	if resp.Status != http.StatusOK {
		a.t.Fatalf("read %d: %s", id, resp)
	}
	return r.decodeRecord(a.t, resp.Body)
}

// list returns the list at query q, which must succeed.
func (a *api) list(r res, q string) listBody {
	a.t.Helper()
	return r.decodeList(a.t, a.do(http.MethodGet, r.query(q), nil))
}

// wantError checks resp is an error with status and, for each field given,
// an errors entry whose first message is msg (field, msg pairs).
func wantError(t testing.TB, resp *response, status int, fieldMsgs ...string) {
	t.Helper()
	if resp.Status != status {
		t.Fatalf("got %s, want status %d", resp, status)
	}
	var e struct {
		Errors map[string][]string `json:"errors"`
	}
	_ = json.Unmarshal(resp.Body, &e)
	for i := 0; i+1 < len(fieldMsgs); i += 2 {
		field, msg := fieldMsgs[i], fieldMsgs[i+1]
		got := e.Errors[field]
		if len(got) == 0 || (msg != "" && got[0] != msg) {
			t.Fatalf("errors[%q] = %q, want %q; body %s", field, got, msg, resp.Body)
		}
	}
}

func sameParent(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func itoa(n int) string { return strconv.Itoa(n) }

// equal compares records by value.
func (a record) equal(b record) bool {
	return a.ID == b.ID && a.Code == b.Code && a.Name == b.Name && sameParent(a.Parent, b.Parent) && maps.Equal(a.Extra, b.Extra)
}

func newRequest(method, path string) *http.Request { return httptest.NewRequest(method, path, nil) }

// serve sends a prepared request through the router, with the editor's
// token unless the request has an Authorization header.
func (a *api) serve(req *http.Request) *response {
	a.t.Helper()
	if req.Header.Get("Authorization") == "" && a.token != "" {
		req.Header.Set("Authorization", "JWT "+a.token)
	}
	var data []byte
	if req.Body != nil {
		data, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	return a.exchange(req, data)
}

func httptestRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func readCloser(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// raw sends a request through the router with the editor's token and no
// checks at all, for benchmarks: what is measured is the service alone.
func (a *api) raw(method, path string, body []byte) int {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "JWT "+a.token)
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec.Code
}
