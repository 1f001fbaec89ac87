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

func TestWrite_FieldErrorsAreAlsoAtTheTopLevelForDRFClients(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.Write(context.Background(), rec, apierror.Fields(
		apierror.FieldError{Field: "dept_code", Msg: "This field is required."},
		apierror.FieldError{Field: "dept_name", Msg: "First."},
		apierror.FieldError{Field: "dept_name", Msg: "Second."},
	))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	want := `{"code":400,"msg":"dept_code: This field is required. dept_name: First. dept_name: Second.",` +
		`"errors":{"dept_code":["This field is required."],"dept_name":["First.","Second."]},` +
		`"dept_code":["This field is required."],"dept_name":["First.","Second."]}`
	if rec.Body.String() != want {
		t.Fatalf("body\n%s\nwant\n%s", rec.Body, want)
	}
	if _, ok := body["detail"]; ok {
		t.Fatal("a validation error carries detail")
	}
}

func TestWrite_FieldsNamedLikeBodyKeysDoNotClobberThem(t *testing.T) {
	rec := httptest.NewRecorder()
	var fields []apierror.FieldError
	for _, name := range []string{"code", "msg", "errors", "detail", "other"} {
		fields = append(fields, apierror.FieldError{Field: name, Msg: "Bad " + name + "."})
	}
	apierror.Write(context.Background(), rec, apierror.Fields(fields...))
	var body struct {
		Code   int                 `json:"code"`
		Msg    string              `json:"msg"`
		Errors map[string][]string `json:"errors"`
		Detail *string             `json:"detail"`
		Other  []string            `json:"other"`
	}
	dec := json.NewDecoder(strings.NewReader(rec.Body.String()))
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if strings.Count(rec.Body.String(), `"code":`) != 2 || body.Code != 400 || body.Detail != nil ||
		len(body.Errors) != 5 || body.Errors["detail"][0] != "Bad detail." || body.Other[0] != "Bad other." {
		t.Fatalf("body %s", rec.Body)
	}
}

func TestWrite_OtherErrorsCarryDetail(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.Write(context.Background(), rec, apierror.NotFoundError())
	if got := rec.Body.String(); got != `{"code":404,"msg":"Not found.","detail":"Not found."}` {
		t.Fatalf("body %s", got)
	}
	rec = httptest.NewRecorder()
	apierror.Write(context.Background(), rec, errors.New("secret cause"))
	if got := rec.Body.String(); got != `{"code":500,"msg":"A server error occurred.","detail":"A server error occurred."}` {
		t.Fatalf("body %s", got)
	}
}

func TestWrite_NonFieldErrorKeepsItsMessageAsMsg(t *testing.T) {
	rec := httptest.NewRecorder()
	apierror.Write(context.Background(), rec, apierror.NonField("Unable to log in with provided credentials."))
	want := `{"code":400,"msg":"Unable to log in with provided credentials.",` +
		`"errors":{"non_field_errors":["Unable to log in with provided credentials."]},` +
		`"non_field_errors":["Unable to log in with provided credentials."]}`
	if got := rec.Body.String(); rec.Code != 400 || got != want {
		t.Fatalf("%d %s", rec.Code, got)
	}
}
