package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"personnel/auth"
	"personnel/config"
)

// fieldMeta is Django REST Framework's description of one field.
type fieldMeta struct {
	Type      string `json:"type"`
	Required  *bool  `json:"required"`
	ReadOnly  *bool  `json:"read_only"`
	Label     string `json:"label"`
	MaxLength *int   `json:"max_length"`
	MinValue  *int64 `json:"min_value"`
	MaxValue  *int64 `json:"max_value"`
	Choices   []struct {
		Value       string `json:"value"`
		DisplayName string `json:"display_name"`
	} `json:"choices"`
}

// optionsBody is an OPTIONS answer, with the keys of each action's fields
// in the order they came.
type optionsBody struct {
	Name        string                          `json:"name"`
	Description string                          `json:"description"`
	Renders     []string                        `json:"renders"`
	Parses      []string                        `json:"parses"`
	Actions     map[string]map[string]fieldMeta `json:"actions"`
	order       map[string][]string
}

// describe sends OPTIONS to path with authorization (the editor's token
// when ""), checks the status and the Allow header, and decodes the body.
func describe(t *testing.T, a *api, path, authorization, allow string) optionsBody {
	t.Helper()
	var resp *response
	if authorization == "" {
		resp = a.do(http.MethodOptions, path, nil)
	} else {
		resp = a.do(http.MethodOptions, path, nil, "Authorization", authorization)
	}
	if resp.Status != http.StatusOK {
		t.Fatalf("OPTIONS %s: %s", path, resp)
	}
	if got := resp.Header.Get("Allow"); got != allow {
		t.Errorf("OPTIONS %s: Allow %q, want %q", path, got, allow)
	}
	var b optionsBody
	if err := json.Unmarshal(resp.Body, &b); err != nil {
		t.Fatalf("OPTIONS %s: %v: %s", path, err, resp.Body)
	}
	var raw struct{ Actions map[string]json.RawMessage }
	json.Unmarshal(resp.Body, &raw)
	b.order = map[string][]string{}
	for method, fields := range raw.Actions {
		dec := json.NewDecoder(bytes.NewReader(fields))
		dec.Token() // {
		for dec.More() {
			key, _ := dec.Token()
			b.order[method] = append(b.order[method], key.(string))
			var skip json.RawMessage
			dec.Decode(&skip)
		}
	}
	if b.Name == "" || b.Description == "" || !slices.Equal(b.Renders, []string{"application/json"}) || !slices.Equal(b.Parses, []string{"application/json"}) {
		t.Errorf("OPTIONS %s: name %q, description %q, renders %v, parses %v", path, b.Name, b.Description, b.Renders, b.Parses)
	}
	return b
}

// checkAction checks the fields of a POST or PUT action: the id, read
// only, then every field of the resource in the order records have them,
// each typed and bounded as the body is validated.
func checkAction(t *testing.T, r res, method string, b optionsBody) {
	t.Helper()
	fields, ok := b.Actions[method]
	if !ok || len(b.Actions) != 1 {
		t.Fatalf("actions %v, want %s alone", b.Actions, method)
	}
	keys := []string{"id", r.Fields.Code, r.Fields.Name}
	if r.Hierarchical() {
		keys = append(keys, r.Fields.Parent)
	}
	for _, e := range r.Extra {
		keys = append(keys, e.Name)
	}
	if !slices.Equal(b.order[method], keys) {
		t.Fatalf("%s fields %v, want %v", method, b.order[method], keys)
	}
	is := func(p *bool, want bool) bool { return p != nil && *p == want }
	id := fields["id"]
	if id.Type != "integer" || !is(id.Required, false) || !is(id.ReadOnly, true) || id.Label != "ID" {
		t.Errorf("id: %+v", id)
	}
	for key, limit := range map[string]int{r.Fields.Code: r.Limits.Code, r.Fields.Name: r.Limits.Name} {
		f := fields[key]
		if f.Type != "string" || !is(f.Required, true) || !is(f.ReadOnly, false) || f.Label == "" || f.MaxLength == nil || *f.MaxLength != limit {
			t.Errorf("%s: %+v, want a required string of at most %d", key, f, limit)
		}
	}
	if r.Hierarchical() {
		if f := fields[r.Fields.Parent]; f.Type != "field" || !is(f.Required, false) || !is(f.ReadOnly, false) {
			t.Errorf("%s: %+v, want an optional related field", r.Fields.Parent, f)
		}
	}
	for _, e := range r.Extra {
		f := fields[e.Name]
		required := e.Required && method == http.MethodPost // PUT keeps what it omits
		if !is(f.Required, required) || !is(f.ReadOnly, false) {
			t.Errorf("%s: %+v, want required %v", e.Name, f, required)
		}
		switch e.Type {
		case config.TypeString:
			if f.Type != "string" || f.MaxLength == nil || *f.MaxLength != e.MaxLength {
				t.Errorf("%s: %+v", e.Name, f)
			}
		case config.TypeInteger:
			if f.Type != "integer" || (e.Min != nil) != (f.MinValue != nil) || (e.Max != nil) != (f.MaxValue != nil) ||
				e.Min != nil && *f.MinValue != *e.Min || e.Max != nil && *f.MaxValue != *e.Max {
				t.Errorf("%s: %+v", e.Name, f)
			}
		case config.TypeChoice:
			var got []string
			for _, c := range f.Choices {
				if c.DisplayName != c.Value {
					t.Errorf("%s: choice %+v", e.Name, c)
				}
				got = append(got, c.Value)
			}
			if f.Type != "choice" || !slices.Equal(got, e.Choices) {
				t.Errorf("%s: %+v, want the choices %v", e.Name, f, e.Choices)
			}
		case config.TypeRef, config.TypeRefs:
			// DRF calls a PrimaryKeyRelatedField and a ManyRelatedField "field".
			if f.Type != "field" || f.Choices != nil {
				t.Errorf("%s: %+v, want a related field", e.Name, f)
			}
		default:
			if f.Type != e.Type {
				t.Errorf("%s: type %q, want %q", e.Name, f.Type, e.Type)
			}
		}
	}
}

func TestOptions_DescribeWritesToAnEditorAsDjangoRESTFrameworkDoes(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		coll := describe(t, a, r.coll(), "", "GET, POST, HEAD, OPTIONS")
		checkAction(t, r, http.MethodPost, coll)
		id := a.create(r, "OPT", "Options", nil)
		record := describe(t, a, r.item(id), "", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS")
		checkAction(t, r, http.MethodPut, record)
		if coll.Name == record.Name {
			t.Errorf("the collection and the record are both named %q", coll.Name)
		}
		// No PUT on a record that does not exist (DRF's get_object fails),
		// but still the description.
		if b := describe(t, a, r.item(id+1000), "", "GET, PUT, PATCH, DELETE, HEAD, OPTIONS"); b.Actions != nil {
			t.Errorf("a missing record has actions %v", b.Actions)
		}
	})
}

func TestOptions_ViewersSeeNoActions(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.addUser("viewer-"+r.Name, auth.RoleViewer, "viewer-password")
		viewer := "JWT " + a.login("viewer-"+r.Name, "viewer-password")
		id := a.create(r, "OPT", "Options", nil)
		for path, allow := range map[string]string{
			r.coll():   "GET, POST, HEAD, OPTIONS",
			r.item(id): "GET, PUT, PATCH, DELETE, HEAD, OPTIONS",
		} {
			if b := describe(t, a, path, viewer, allow); b.Actions != nil {
				t.Errorf("OPTIONS %s: a viewer sees actions %v", path, b.Actions)
			}
		}
	})
}

func TestOptions_HierarchyPathsAreReadOnly(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, "OPT", "Options", nil)
		for _, path := range []string{r.coll() + "tree/", r.item(id) + "descendants/", r.item(id) + "ancestors/"} {
			if b := describe(t, a, path, "", "GET, HEAD, OPTIONS"); b.Actions != nil {
				t.Errorf("OPTIONS %s: actions %v", path, b.Actions)
			}
		}
	})
}

func TestOptions_NeedsCredentials(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		wantError(t, a.do(http.MethodOptions, r.coll(), nil, "Authorization", ""), http.StatusUnauthorized)
	})
}
