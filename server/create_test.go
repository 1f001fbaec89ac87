package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestCreate_ReturnsRecordWithIDLocationAndETag(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		resp := a.do(http.MethodPost, r.coll(), r.body("HR", "Human Resources", nil))
		if resp.Status != http.StatusCreated {
			t.Fatalf("create: %s", resp)
		}
		rec := r.decodeRecord(t, resp.Body)
		if rec.ID < 1 || rec.Code != "HR" || rec.Name != "Human Resources" || rec.Parent != nil {
			t.Fatalf("created %+v", rec)
		}
		if loc, want := resp.Header.Get("Location"), "http://example.com"+r.item(rec.ID); loc != want {
			t.Errorf("Location = %q, want %q", loc, want)
		}
		if resp.Header.Get("ETag") == "" {
			t.Error("no ETag on create")
		}
		if got := a.get(r, rec.ID); !got.equal(rec) {
			t.Errorf("read back %+v, want %+v", got, rec)
		}
	})
}

func TestCreate_IgnoresIDAndUnknownFields(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		body := r.body("OPS", "Operations", nil)
		body["id"] = 4242
		body["colour"] = "blue"
		resp := a.do(http.MethodPost, r.coll(), body)
		if resp.Status != http.StatusCreated {
			t.Fatalf("create: %s", resp)
		}
		if rec := r.decodeRecord(t, resp.Body); rec.ID == 4242 {
			t.Fatal("id was taken from the body")
		}
	})
}

func TestCreate_TrimsCodeAndName(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		id := a.create(r, " \tFIN\n", "  Finance  ", omit)
		if rec := a.get(r, id); rec.Code != "FIN" || rec.Name != "Finance" {
			t.Fatalf("stored %q %q, want them trimmed", rec.Code, rec.Name)
		}
	})
}

func TestCreate_FieldRules(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		code, name := r.Fields.Code, r.Fields.Name
		long := func(n int, s string) string { return strings.Repeat(s, n) }
		for _, tc := range []struct {
			name     string
			body     map[string]any
			field    string // "" when the body is valid
			wantMsg  string
			wantCode string
			wantName string
		}{
			{"code missing", map[string]any{name: "x"}, code, "This field is required.", "", ""},
			{"name missing", map[string]any{code: "A1"}, name, "This field is required.", "", ""},
			{"code null", map[string]any{code: nil, name: "x"}, code, "This field may not be null.", "", ""},
			{"code blank", map[string]any{code: "", name: "x"}, code, "This field may not be blank.", "", ""},
			{"name only spaces", map[string]any{code: "A2", name: " \t "}, name, "This field may not be blank.", "", ""},
			{"code a number", map[string]any{code: 12, name: "x"}, code, "Not a valid string.", "", ""},
			{"code a bool", map[string]any{code: true, name: "x"}, code, "Not a valid string.", "", ""},
			{"name an object", map[string]any{code: "A3", name: map[string]any{}}, name, "Not a valid string.", "", ""},
			{"name a list", map[string]any{code: "A4", name: []any{"x"}}, name, "Not a valid string.", "", ""},
			{"code with NUL", map[string]any{code: "A\x005", name: "x"}, code, "Null characters are not allowed.", "", ""},
			{"code too long", map[string]any{code: long(r.Limits.Code+1, "c"), name: "x"}, code, fmt.Sprintf("Ensure this field has no more than %d characters.", r.Limits.Code), "", ""},
			{"name too long", map[string]any{code: "A6", name: long(r.Limits.Name+1, "n")}, name, fmt.Sprintf("Ensure this field has no more than %d characters.", r.Limits.Name), "", ""},
			{"limits count characters, not bytes", map[string]any{code: long(r.Limits.Code, "Ж"), name: long(r.Limits.Name, "名")}, "", "", long(r.Limits.Code, "Ж"), long(r.Limits.Name, "名")},
			{"limit applies after trimming", map[string]any{code: " " + long(r.Limits.Code, "k") + " ", name: "x"}, "", "", long(r.Limits.Code, "k"), "x"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				body := r.body("", "", omit) // the required extra fields
				for k, v := range tc.body {
					body[k] = v
				}
				resp := a.do(http.MethodPost, r.coll(), body)
				if tc.field == "" {
					if resp.Status != http.StatusCreated {
						t.Fatalf("got %s, want 201", resp)
					}
					if rec := r.decodeRecord(t, resp.Body); rec.Code != tc.wantCode || rec.Name != tc.wantName {
						t.Fatalf("stored %+v", rec)
					}
					return
				}
				wantError(t, resp, http.StatusBadRequest, tc.field, tc.wantMsg)
			})
		}
	})
}

func TestCreate_ParentRules(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		root := a.create(r, "ROOT", "Root", nil)
		wrongType := func(typ string) string { return "Incorrect type. Expected pk value, received " + typ + "." }
		missing := func(pk string) string { return `Invalid pk "` + pk + `" - object does not exist.` }
		n := 0
		for _, tc := range []struct {
			name    string
			parent  any
			want    *int   // the stored parent when accepted
			wantMsg string // the error when refused
		}{
			{"null", nil, nil, ""},
			{"integer", root, &root, ""},
			{"string of digits", strconv.Itoa(root), &root, ""},
			{"float", 1.0, nil, wrongType("float")}, // json.Marshal writes 1.0 as 1; see the raw case below
			{"plus sign", "+1", nil, wrongType("str")},
			{"padded", " 1 ", nil, wrongType("str")},
			{"empty string", "", nil, wrongType("str")},
			{"letters", "abc", nil, wrongType("str")},
			{"bool", true, nil, wrongType("bool")},
			{"object", map[string]any{"id": 1}, nil, wrongType("dict")},
			{"list", []any{1}, nil, wrongType("list")},
			{"missing id", 999999, nil, missing("999999")},
			{"zero", 0, nil, missing("0")},
			{"negative", -5, nil, missing("-5")},
			{"beyond int64", "99999999999999999999", nil, missing("99999999999999999999")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.name == "float" {
					n++
					resp := a.do(http.MethodPost, r.coll(), `{"`+r.Fields.Code+`":"F`+string(rune('a'+n))+`","`+r.Fields.Name+`":"x","`+r.Fields.Parent+`":1.0}`)
					wantError(t, resp, http.StatusBadRequest, r.Fields.Parent, tc.wantMsg)
					return
				}
				n++
				resp := a.do(http.MethodPost, r.coll(), r.body("P"+strings.Repeat("x", n), "x", tc.parent))
				if tc.wantMsg != "" {
					wantError(t, resp, http.StatusBadRequest, r.Fields.Parent, tc.wantMsg)
					return
				}
				if resp.Status != http.StatusCreated {
					t.Fatalf("got %s, want 201", resp)
				}
				if rec := r.decodeRecord(t, resp.Body); !sameParent(rec.Parent, tc.want) {
					t.Fatalf("parent %v, want %v", rec.Parent, tc.want)
				}
			})
		}
	})
}

func TestCreate_DuplicateCodeIgnoringCaseIs400(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		a.create(r, "HR", "Human Resources", nil)
		a.create(r, "Ärzte", "Doctors", nil)
		a.create(r, "отдел", "Department", nil)
		for _, code := range []string{"HR", "hr", "Hr", "ÄRZTE", "ärzte", "ОТДЕЛ"} {
			resp := a.do(http.MethodPost, r.coll(), r.body(code, "Other", nil))
			wantError(t, resp, http.StatusBadRequest, r.Fields.Code, r.Name+" with this "+r.Fields.Code+" already exists.")
		}
		if lb := a.list(r, ""); lb.Count != 3 {
			t.Fatalf("count %d after refused duplicates, want 3", lb.Count)
		}
	})
}

func TestCreate_ReportsEveryInvalidFieldAtOnce(t *testing.T) {
	forEachTree(t, func(t *testing.T, a *api, r res) {
		resp := a.do(http.MethodPost, r.coll(), map[string]any{r.Fields.Name: "", r.Fields.Parent: "x"})
		wantError(t, resp, http.StatusBadRequest,
			r.Fields.Code, "This field is required.",
			r.Fields.Name, "This field may not be blank.",
			r.Fields.Parent, "")
		a.create(r, "DUP", "x", nil)
		resp = a.do(http.MethodPost, r.coll(), r.body("dup", "x", 424242))
		wantError(t, resp, http.StatusBadRequest, r.Fields.Code, "", r.Fields.Parent, `Invalid pk "424242" - object does not exist.`)
	})
}

func TestCreate_NullAndLoneSurrogateCharactersAre400(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, tc := range []struct{ code, msg string }{
			{`A\u0000B`, "Null characters are not allowed."},
			{`A\ud800B`, "Surrogate characters are not allowed: U+D800."},
			{`\udfff`, "Surrogate characters are not allowed: U+DFFF."},
		} {
			body := r.body("", "x", omit)
			raw, _ := json.Marshal(body)
			raw = append([]byte(`{"`+r.Fields.Code+`":"`+tc.code+`",`), raw[1:]...)
			wantError(t, a.do(http.MethodPost, r.coll(), raw), http.StatusBadRequest, r.Fields.Code, tc.msg)
		}
		if lb := a.list(r, ""); lb.Count != 0 {
			t.Fatalf("refused creates stored %d records", lb.Count)
		}
	})
}
