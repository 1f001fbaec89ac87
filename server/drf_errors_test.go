package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

func TestErrors_FieldMessagesAreAlsoAtTheTopLevelForDRFClients(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		resp := a.do(http.MethodPost, r.coll(), r.body("", "", nil))
		wantError(t, resp, http.StatusBadRequest, r.Fields.Code, "This field is required.", r.Fields.Name, "This field is required.")
		var body map[string]json.RawMessage
		json.Unmarshal(resp.Body, &body)
		var nested struct{ Errors map[string][]string }
		json.Unmarshal(resp.Body, &nested)
		for _, f := range []string{r.Fields.Code, r.Fields.Name} {
			var top []string
			if err := json.Unmarshal(body[f], &top); err != nil || !slices.Equal(top, nested.Errors[f]) {
				t.Fatalf("top-level %s = %s, errors has %q: %s", f, body[f], nested.Errors[f], resp.Body)
			}
		}
		if _, ok := body["detail"]; ok {
			t.Fatalf("a validation error carries detail: %s", resp.Body)
		}
	})
}

func TestErrors_OtherErrorsCarryDetail(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		for _, resp := range []*response{
			a.do(http.MethodGet, r.item(999999), nil),
			a.do(http.MethodGet, r.coll(), nil, "Authorization", ""),
			a.do(http.MethodPost, r.coll(), `{}`, "Content-Type", "text/plain"),
		} {
			var body struct{ Msg, Detail string }
			if err := json.Unmarshal(resp.Body, &body); err != nil || body.Msg == "" || body.Detail != body.Msg {
				t.Fatalf("want detail equal to msg: %s", resp)
			}
		}
	})
}
