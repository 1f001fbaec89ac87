package resource

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"personnel/apierror"
	"personnel/jsonbody"
)

// Input is a validated request body. Nil fields were not given.
type Input struct {
	Code, Name *string // trimmed, not blank, within the limits
	ParentSet  bool    // the parent field was given
	Parent     *int    // nil with ParentSet: clear the parent
}

// Messages of Django REST Framework, which clients of the original API know.
const (
	msgRequired  = "This field is required."
	msgNull      = "This field may not be null."
	msgBlank     = "This field may not be blank."
	msgNotString = "Not a valid string."
	msgNulChar   = "Null characters are not allowed."
)

func msgTooLong(limit int) string {
	return fmt.Sprintf("Ensure this field has no more than %d characters.", limit)
}

func msgNoSuchParent(pk string) string {
	return fmt.Sprintf("Invalid pk %q - object does not exist.", pk)
}

// DecodeInput validates the members of a JSON object body. full is true for
// create and update, where code and name are required; a partial update
// requires nothing. Members the resource does not have (id among them) are
// ignored. Every invalid field is reported, in one 400.
func (r *Resource[T]) DecodeInput(m map[string]json.RawMessage, full bool) (Input, error) {
	var in Input
	var errs []apierror.FieldError
	text := func(field string, limit int) *string {
		s, msg := decodeText(m, field, limit, full)
		if msg != "" {
			errs = append(errs, apierror.FieldError{Field: field, Msg: msg})
		}
		return s
	}
	in.Code = text(r.names.code, r.desc.Limits.Code)
	in.Name = text(r.names.name, r.desc.Limits.Name)
	if raw, ok := m[r.names.parent]; ok {
		in.ParentSet = true
		p, msg := decodeParent(raw)
		if msg != "" {
			errs = append(errs, apierror.FieldError{Field: r.names.parent, Msg: msg})
		}
		in.Parent = p
	}
	if len(errs) > 0 {
		return Input{}, apierror.Fields(errs...)
	}
	return in, nil
}

// decodeText validates a code or name: a JSON string, trimmed of white
// space, not blank, without NUL, at most limit characters.
func decodeText(m map[string]json.RawMessage, field string, limit int, required bool) (*string, string) {
	raw, ok := m[field]
	switch {
	case !ok && required:
		return nil, msgRequired
	case !ok:
		return nil, ""
	case string(raw) == "null":
		return nil, msgNull
	case len(raw) == 0 || raw[0] != '"':
		return nil, msgNotString
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, msgNotString
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil, msgBlank
	case strings.IndexByte(s, 0) >= 0:
		return nil, msgNulChar
	case utf8.RuneCountInString(s) > limit:
		return nil, msgTooLong(limit)
	}
	return &s, ""
}

// decodeParent validates a parent: null, a JSON integer, or a string of
// ASCII digits. Anything else (3.0, "+3", " 3 ", "", true, an object) is the
// wrong type. An integer no record can have (0, negative, too large) is
// reported as missing without asking the database.
func decodeParent(raw json.RawMessage) (*int, string) {
	s := string(raw)
	if s == "null" {
		return nil, ""
	}
	wrongType := "Incorrect type. Expected pk value, received " + jsonbody.TypeName(raw) + "."
	digits := s
	switch {
	case strings.HasPrefix(s, `"`):
		var str string
		if err := json.Unmarshal(raw, &str); err != nil || str == "" || strings.Trim(str, "0123456789") != "" {
			return nil, wrongType
		}
		digits = str
	case jsonbody.TypeName(raw) != "int":
		return nil, wrongType
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id < 1 || id > math.MaxInt {
		return nil, msgNoSuchParent(digits)
	}
	n := int(id)
	return &n, ""
}
