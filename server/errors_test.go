package server_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestBody_UnacceptableBodiesAreRefusedAndChangeNothing(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "KEEP", "Keep", nil)
		valid := `{"` + r.Fields.Code + `":"NEW","` + r.Fields.Name + `":"New"}`
		deep := `{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `,` + valid[1:]
		huge := `{"` + r.Fields.Code + `":"BIG","` + r.Fields.Name + `":"` + strings.Repeat("x", 1<<20) + `"}`
		for _, tc := range []struct {
			name, body  string
			contentType string // "" keeps application/json; "-" sends none
			status      int
		}{
			{"empty", "", "", http.StatusBadRequest},
			{"only white space", " \n ", "", http.StatusBadRequest},
			{"not UTF-8", "{\"" + r.Fields.Code + "\":\"\xff\xfe\",\"" + r.Fields.Name + "\":\"x\"}", "", http.StatusBadRequest},
			{"a malformed list", `[` + valid, "", http.StatusBadRequest}, // a list is a bulk create (bulk_test.go)
			{"two objects", valid + valid, "", http.StatusBadRequest},
			{"a string", `"` + r.Fields.Code + `"`, "", http.StatusBadRequest},
			{"malformed", `{"` + r.Fields.Code + `":"NEW",}`, "", http.StatusBadRequest},
			{"nested absurdly deep", deep, "", http.StatusBadRequest},
			{"plain text", valid, "text/plain", http.StatusUnsupportedMediaType},
			{"form", valid, "application/x-www-form-urlencoded", http.StatusUnsupportedMediaType},
			{"no content type", valid, "-", http.StatusUnsupportedMediaType},
			{"over the body limit", huge, "", http.StatusRequestEntityTooLarge},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ct := tc.contentType
				if ct == "-" {
					ct = ""
				} else if ct == "" {
					ct = "application/json"
				}
				for _, req := range []struct{ method, path string }{
					{http.MethodPost, r.coll()}, {http.MethodPut, r.item(id)}, {http.MethodPatch, r.item(id)},
				} {
					resp := a.do(req.method, req.path, tc.body, "Content-Type", ct)
					wantError(t, resp, tc.status)
				}
			})
		}
		if got := a.get(r, id); got.Code != "KEEP" {
			t.Fatalf("a refused body changed the record: %+v", got)
		}
		if lb := a.list(r, ""); lb.Count != 1 {
			t.Fatalf("a refused body created records: count %d", lb.Count)
		}
	})
}

func TestBody_JSONWithCharsetIsAccepted(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		resp := a.do(http.MethodPost, r.coll(), r.body("CS", "Charset", nil), "Content-Type", "application/json; charset=utf-8")
		if resp.Status != http.StatusCreated {
			t.Fatal(resp)
		}
	})
}

func TestMethodNotAllowed_Is405WithAllow(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "M", "M", nil)
		for _, tc := range []struct{ method, path, allow string }{
			{http.MethodDelete, r.coll(), "GET, POST, HEAD, OPTIONS"},
			{http.MethodPut, r.coll(), "GET, POST, HEAD, OPTIONS"},
			{http.MethodPost, r.item(id), "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"},
		} {
			resp := a.do(tc.method, tc.path, nil)
			wantError(t, resp, http.StatusMethodNotAllowed)
			// In Django REST Framework's order, as OPTIONS lists them.
			if got := resp.Header.Get("Allow"); got != tc.allow {
				t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.allow)
			}
		}
	})
}

func TestPaths_AreServedWithAndWithoutTrailingSlashWithoutRedirect(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		coll := strings.TrimSuffix(r.coll(), "/")
		resp := a.do(http.MethodPost, coll, r.body("NS", "No slash", nil))
		if resp.Status != http.StatusCreated {
			t.Fatalf("POST %s: %s", coll, resp)
		}
		id := r.decodeRecord(t, resp.Body).ID
		item := strings.TrimSuffix(r.item(id), "/")
		for _, tc := range []struct {
			method, path string
			body         any
			status       int
		}{
			{http.MethodGet, coll, nil, http.StatusOK},
			{http.MethodGet, item, nil, http.StatusOK},
			{http.MethodPut, item, r.body("NS", "Put", omit), http.StatusOK},
			{http.MethodPatch, item, r.body("", "Patch", omit), http.StatusOK},
			{http.MethodDelete, item, nil, http.StatusNoContent},
		} {
			if resp := a.do(tc.method, tc.path, tc.body); resp.Status != tc.status {
				t.Errorf("%s %s: %s, want %d", tc.method, tc.path, resp, tc.status)
			}
		}
	})
}

func TestUnknownPath_Is404WithJSONBody(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, p := range []string{"/", "/personnel/api/nothing/", r.coll() + "1/2/"} {
			wantError(t, a.do(http.MethodGet, p, nil), http.StatusNotFound)
		}
	})
}
