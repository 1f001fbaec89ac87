// Package jsonbody reads a request body that must be one JSON object, and
// turns every way a body can be unacceptable into the contract's error:
// 415 for a content type other than JSON, 413 for a body over the limit,
// and 400 for one that is empty, not UTF-8, nested absurdly deep, not valid
// JSON, or not a single object.
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"personnel/apierror"
)

// MaxDepth is the deepest nesting of arrays and objects a body may have.
// Personnel's bodies are flat; the bound keeps hostile input cheap to reject.
const MaxDepth = 32

// Object reads r's body, at most limit bytes, as a single JSON object and
// returns its members undecoded. Errors are *apierror.Error values.
func Object(r *http.Request, limit int64) (map[string]json.RawMessage, error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, err
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		// A body without Content-Length (chunked) that outgrew an
		// http.MaxBytesReader is as much too large as one that said so.
		return nil, tooLarge(limit)
	}
	if err != nil {
		return nil, apierror.Wrap(apierror.Invalid, "The request body could not be read.", err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(limit)
	}
	return Parse(data)
}

// Parse checks data as a JSON object body and returns its members.
func Parse(data []byte) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, apierror.New(apierror.Invalid, "The request body is empty; send a JSON object.")
	}
	if !utf8.Valid(data) {
		return nil, apierror.New(apierror.Invalid, "The request body is not valid UTF-8.")
	}
	if depth(trimmed) > MaxDepth {
		return nil, apierror.New(apierror.Invalid, fmt.Sprintf("JSON parse error - nested deeper than %d levels.", MaxDepth))
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, apierror.New(apierror.Invalid, "JSON parse error - "+syntaxMessage(err))
	}
	if trimmed[0] != '{' {
		return nil, apierror.Fields(apierror.FieldError{
			Field: "non_field_errors",
			Msg:   "Invalid data. Expected a dictionary, but got " + TypeName(trimmed) + ".",
		})
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, apierror.New(apierror.Invalid, "JSON parse error - "+syntaxMessage(err))
	}
	return m, nil
}

// TypeName names the JSON type of a raw value the way Django REST
// Framework's messages do (Python's type names).
func TypeName(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "NoneType"
	}
	switch raw[0] {
	case '{':
		return "dict"
	case '[':
		return "list"
	case '"':
		return "str"
	case 't', 'f':
		return "bool"
	case 'n':
		return "NoneType"
	}
	if bytes.ContainsAny(raw, ".eE") {
		return "float"
	}
	return "int"
}

func checkContentType(ct string) error {
	unsupported := func() error {
		shown := ct
		if shown == "" {
			shown = "(none)"
		}
		return apierror.New(apierror.UnsupportedMediaType,
			fmt.Sprintf("Unsupported media type %q in request; send application/json.", shown))
	}
	if ct == "" {
		return unsupported()
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return unsupported()
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return unsupported()
	}
	return nil
}

func tooLarge(limit int64) error {
	return apierror.New(apierror.TooLarge, fmt.Sprintf("The request body is larger than %d bytes.", limit))
}

// depth returns the deepest nesting of arrays and objects in data, looking
// past string contents; it stops counting once past MaxDepth.
func depth(data []byte) int {
	d, most, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			d++
			if d > most {
				most = d
				if most > MaxDepth {
					return most
				}
			}
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// syntaxMessage describes a JSON syntax error with its position, which is
// all a client needs; it says nothing about our types.
func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of JSON input"
	}
	return "malformed JSON"
}
