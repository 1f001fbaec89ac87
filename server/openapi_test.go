package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"personnel/db/dbtest"
	"personnel/server"
)

// contract is a loaded OpenAPI document and its router.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// contracts caches loaded documents by their text: most test servers
// serve the same one.
var contracts sync.Map

// loadContract fetches the document a server serves, without a token,
// checks it is valid OpenAPI 3, and loads it for validating traffic.
func loadContract(t testing.TB, h http.Handler) *contract {
	t.Helper()
	rec := httptestRecorder()
	h.ServeHTTP(rec, newRequest(http.MethodGet, server.APIRoot+"/openapi.json"))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET openapi.json without a token: %d %s", rec.Code, rec.Body)
	}
	text := rec.Body.String()
	if c, ok := contracts.Load(text); ok {
		return c.(*contract)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData([]byte(text))
	if err != nil {
		t.Fatalf("loading the OpenAPI document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	doc.Servers = nil // match the test's requests, whatever public URL is configured
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatalf("routing the OpenAPI document: %v", err)
	}
	c := &contract{doc: doc, router: router}
	contracts.Store(text, c)
	return c
}

// check validates one exchange against the document: the response always,
// the request when the server accepted it (a request the server refused
// may well not match the document; that is why it was refused).
func (c *contract) check(t testing.TB, req *http.Request, body []byte, resp *response) {
	t.Helper()
	if req.Method == http.MethodOptions && req.Header.Get("Access-Control-Request-Method") != "" {
		return // CORS preflight, not an operation
	}
	if req.Method == http.MethodPost && bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) && !strings.Contains(req.URL.Path, "/import") {
		// A bulk create: the document types a create's body as the one
		// object the admin UI builds its form from, and says in words
		// that an array of them creates each (bulk_test.go checks those).
		return
	}
	r := req.Clone(context.Background())
	r.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := c.router.FindRoute(r)
	if err != nil && !strings.HasSuffix(r.URL.Path, "/") {
		r.URL.Path += "/"
		route, params, err = c.router.FindRoute(r)
	}
	if err != nil {
		if resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed {
			return // no such path or method: nothing to document
		}
		t.Errorf("%s %s answered %d but is not in the OpenAPI document: %v", req.Method, req.URL, resp.Status, err)
		return
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route, Options: opts}
	if resp.Status < 300 {
		// OpenAPI's integer is unbounded, and the contract clamps a huge
		// page_size and matches nothing for a huge id; kin-openapi reads
		// integers as int64 and calls those out of range.
		// The document types integers and booleans strictly, for client
		// generators; the server also takes DRF's string forms ("3",
		// "True"), which the document mentions in words only.
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil && !strings.Contains(err.Error(), "value out of range") &&
			!strings.Contains(err.Error(), "value must be an integer") && !strings.Contains(err.Error(), "value must be a boolean") {
			t.Errorf("%s %s was accepted but does not match the OpenAPI document: %v", req.Method, req.URL, err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.Status, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(resp.Body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("%s %s: the response does not match the OpenAPI document: %v\n%s", req.Method, req.URL, err, resp)
	}
}

func TestOpenAPI_DocumentsExactlyTheRoutesServed(t *testing.T) {
	t.Parallel()
	a := newAPI(t, dbtest.Backends(t)[0])
	c := loadContract(t, a.h)
	documented := map[string]bool{}
	for path, item := range c.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, rt := range a.srv.Routes() {
		if strings.HasPrefix(rt.Path, server.AdminPath) || strings.HasPrefix(rt.Path, server.DocsPath) {
			continue // pages, not operations
		}
		path := strings.ReplaceAll(rt.Path, ":id", "{id}")
		if !documented[rt.Method+" "+path] && !documented[rt.Method+" "+path+"/"] {
			// The tree, export and import paths answer the methods they lack with 405.
			if resp := a.do(rt.Method, rt.Path, nil); resp.Status != http.StatusMethodNotAllowed ||
				resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" && resp.Header.Get("Allow") != "POST, OPTIONS" {
				t.Errorf("%s %s is served but not documented", rt.Method, rt.Path)
			}
		}
		served[rt.Method+" "+path] = true
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("%s is documented but not served", op)
		}
	}
	for _, r := range server.CompiledResources() {
		name := r.TypeName()
		lower := strings.ToLower(name[:1]) + name[1:]
		ids := []string{"list" + camel(r.Path), "create" + name, "read" + name, "update" + name, "patch" + name, "delete" + name,
			"describe" + camel(r.Path), "describe" + name}
		if r.Hierarchical() {
			ids = append(ids, lower+"Descendants", lower+"Ancestors", lower+"Tree",
				"describe"+name+"Descendants", "describe"+name+"Ancestors", "describe"+name+"Tree")
		}
		for _, id := range ids {
			if findOperation(c.doc, id) == nil {
				t.Errorf("operation %s is missing", id)
			}
		}
	}
	for _, scheme := range []string{"jwt", "token", "basic"} {
		if c.doc.Components.SecuritySchemes[scheme] == nil {
			t.Errorf("no %s security scheme", scheme)
		}
	}
}

// camel turns "cost-centres" into "CostCentres".
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func findOperation(doc *openapi3.T, id string) *openapi3.Operation {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.OperationID == id {
				return op
			}
		}
	}
	return nil
}
