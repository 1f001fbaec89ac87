package jsonbody_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"personnel/apierror"
	"personnel/jsonbody"
)

func TestObject(t *testing.T) {
	deep := strings.Repeat("[", jsonbody.MaxDepth+1) + strings.Repeat("]", jsonbody.MaxDepth+1)
	for _, tc := range []struct {
		name, contentType, body string
		limit                   int64
		wantStatus              int // 0: accepted
		wantMsg                 string
	}{
		{"object", "application/json", `{"a":1}`, 100, 0, ""},
		{"charset utf-8", "application/json; charset=UTF-8", `{"a":1}`, 100, 0, ""},
		{"surrounding space", "application/json", " \n{\"a\":1}\t", 100, 0, ""},
		{"deep string is fine", "application/json", `{"a":"` + deep + `"}`, 1000, 0, ""},
		{"no content type", "", `{}`, 100, 415, "Unsupported media type"},
		{"form", "application/x-www-form-urlencoded", `a=1`, 100, 415, "Unsupported media type"},
		{"latin1", "application/json; charset=latin1", `{}`, 100, 415, ""},
		{"too large", "application/json", `{"a":"` + strings.Repeat("x", 100) + `"}`, 50, 413, ""},
		{"empty", "application/json", ``, 100, 400, "empty"},
		{"blank", "application/json", "  \n", 100, 400, "empty"},
		{"not utf-8", "application/json", "{\"a\":\"\xff\"}", 100, 400, "UTF-8"},
		{"array", "application/json", `[1]`, 100, 400, "got list"},
		{"string", "application/json", `"x"`, 100, 400, "got str"},
		{"null", "application/json", `null`, 100, 400, "got NoneType"},
		{"two objects", "application/json", `{}{}`, 100, 400, "JSON parse error"},
		{"truncated", "application/json", `{"a":`, 100, 400, "JSON parse error"},
		{"garbage", "application/json", `{a:1}`, 100, 400, "JSON parse error"},
		{"too deep", "application/json", `{"a":` + deep + `}`, 1000, 400, "nested deeper"},
		{"bom", "application/json", "\ufeff{}", 100, 400, "JSON parse error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			if tc.contentType != "" {
				r.Header.Set("Content-Type", tc.contentType)
			}
			m, err := jsonbody.Object(r, tc.limit)
			if tc.wantStatus == 0 {
				if err != nil || m == nil {
					t.Fatalf("Object() = %v, %v; want an object", m, err)
				}
				return
			}
			var e *apierror.Error
			if !errors.As(err, &e) {
				t.Fatalf("Object() error = %v, want an *apierror.Error", err)
			}
			if e.Kind.Status() != tc.wantStatus || !strings.Contains(e.Msg, tc.wantMsg) {
				t.Fatalf("Object() = %d %q, want %d containing %q", e.Kind.Status(), e.Msg, tc.wantStatus, tc.wantMsg)
			}
		})
	}
}

func TestObject_ChunkedBodyOverAMaxBytesReaderIs413(t *testing.T) {
	body := `{"a":"` + strings.Repeat("x", 100) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.ContentLength = -1 // chunked: the size is not known in advance
	r.Header.Set("Content-Type", "application/json")
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 50)
	_, err := jsonbody.Object(r, 1000)
	var e *apierror.Error
	if !errors.As(err, &e) || e.Kind.Status() != http.StatusRequestEntityTooLarge {
		t.Fatalf("error %v, want a 413", err)
	}
}
