package apierror_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"personnel/apierror"
)

func TestAppendString_MatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quo"te`, `back\slash`, "tab\tnew\nline\r", "\x00\x01\x1f",
		"Ärzte отдел 部署", "line\u2028sep\u2029", "bad\xffutf8", "<b>&amp;</b>",
	} {
		got := apierror.AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: not JSON: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("AppendString(%q) decodes to %q, encoding/json gives %q", s, back, wantBack)
		}
	}
}

func TestWrite_FieldErrorsBody(t *testing.T) {
	rec := httptest.NewRecorder()
	err := apierror.Fields(
		apierror.FieldError{Field: "dept_code", Msg: "This field is required."},
		apierror.FieldError{Field: "dept_name", Msg: "This field may not be blank."},
		apierror.FieldError{Field: "dept_code", Msg: "Second message."},
	)
	apierror.Write(context.Background(), rec, err)
	if rec.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", rec.Code)
	}
	var body struct {
		Code   int                 `json:"code"`
		Msg    string              `json:"msg"`
		Errors map[string][]string `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if body.Code != 400 || body.Errors["dept_code"][1] != "Second message." || len(body.Errors) != 2 {
		t.Fatalf("body %+v", body)
	}
	if !strings.HasPrefix(body.Msg, "dept_code: This field is required.") {
		t.Fatalf("msg %q does not start with the first field error", body.Msg)
	}
}

func TestWrite_InternalErrorHidesCause(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.Write(context.Background(), rec, errors.New("Error 1146: Table 'test.secret' doesn't exist"))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret") {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
}

func TestWrite_EveryKindHasItsStatus(t *testing.T) {
	want := map[apierror.Kind]int{
		apierror.Internal: 500, apierror.Invalid: 400, apierror.Unauthorized: 401,
		apierror.Forbidden: 403, apierror.NotFound: 404, apierror.MethodNotAllowed: 405,
		apierror.Conflict: 409, apierror.PreconditionFailed: 412, apierror.TooLarge: 413,
		apierror.UnsupportedMediaType: 415, apierror.TooManyRequests: 429, apierror.Unavailable: 503,
		apierror.RequestTimeout: 408,
	}
	for k, status := range want {
		rec := httptest.NewRecorder()
		apierror.Write(context.Background(), rec, apierror.New(k, "m"))
		var body struct{ Code int }
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != status || body.Code != status {
			t.Errorf("kind %d: status %d, body code %d, want %d", k, rec.Code, body.Code, status)
		}
	}
}
