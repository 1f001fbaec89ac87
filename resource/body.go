package resource

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"personnel/apierror"
	"personnel/jsonbody"
	"personnel/record"
)

// Mode is what a body is for, which decides the fields it must give.
type Mode uint8

// The modes of a body.
const (
	ModeCreate  Mode = iota // POST: every required field
	ModeReplace             // PUT: the replaced fields (code and name); others are kept when omitted
	ModePatch               // PATCH: nothing
)

// Input is a validated request body: a value for each field given.
type Input struct {
	Given  []bool         // by field index
	Values []record.Value // by field index; meaningful where Given
}

// Messages of Django REST Framework, which clients of the original API know.
const (
	msgRequired   = "This field is required."
	msgNull       = "This field may not be null."
	msgBlank      = "This field may not be blank."
	msgNotString  = "Not a valid string."
	msgNulChar    = "Null characters are not allowed."
	msgInteger    = "A valid integer is required."
	msgBoolean    = "Must be a valid boolean."
	msgDateFormat = "Date has wrong format. Use one of these formats instead: YYYY-MM-DD."
)

func msgTooLong(limit int) string {
	return fmt.Sprintf("Ensure this field has no more than %d characters.", limit)
}

func msgNoSuchParent(pk string) string {
	return fmt.Sprintf("Invalid pk %q - object does not exist.", pk)
}

// DecodeInput validates the members of a JSON object body for mode.
// Members the resource does not have (id among them) are ignored. Every
// invalid field is reported, in one 400.
func (r *Resource) DecodeInput(m map[string]json.RawMessage, mode Mode) (Input, error) {
	in := Input{Given: make([]bool, len(r.fields.List)), Values: make([]record.Value, len(r.fields.List))}
	var errs []apierror.FieldError
	for i := range r.fields.List {
		f := &r.fields.List[i]
		raw, ok := m[f.Key]
		if !ok {
			if mode == ModeCreate && f.Required || mode == ModeReplace && f.Replaced {
				errs = append(errs, apierror.FieldError{Field: f.Key, Msg: msgRequired})
			}
			continue
		}
		v, msg := decodeValue(f, raw)
		if msg != "" {
			errs = append(errs, apierror.FieldError{Field: f.Key, Msg: msg})
			continue
		}
		in.Given[i], in.Values[i] = true, v
	}
	if len(errs) > 0 {
		return Input{}, apierror.Fields(errs...)
	}
	return in, nil
}

// decodeValue validates one member against its field.
func decodeValue(f *record.Field, raw json.RawMessage) (record.Value, string) {
	if string(raw) == "null" {
		if !f.Nullable {
			return record.Value{}, msgNull
		}
		return record.Value{}, ""
	}
	switch f.Kind {
	case record.KindText:
		return decodeText(f, raw)
	case record.KindChoice:
		s, isString := jsonString(raw)
		if !isString || !slices.Contains(f.Choices, s) {
			shown := s
			if !isString {
				shown = string(raw)
			}
			return record.Value{}, fmt.Sprintf("%q is not a valid choice.", shown)
		}
		return record.Value{Str: s, Valid: true}, ""
	case record.KindInteger:
		return decodeInteger(f, raw)
	case record.KindBoolean:
		b, ok := boolValue(raw)
		if !ok {
			return record.Value{}, msgBoolean
		}
		return b, ""
	case record.KindDate:
		s, isString := jsonString(raw)
		if !isString {
			return record.Value{}, msgDateFormat
		}
		d, ok := parseDate(s)
		if !ok {
			return record.Value{}, msgDateFormat
		}
		return d, ""
	case record.KindParent:
		return decodeParent(raw)
	case record.KindRef:
		return decodeRef(raw)
	case record.KindRefs:
		return decodeRefs(f, raw)
	}
	return record.Value{}, "Unsupported field."
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// decodeText validates text: a JSON string, trimmed of white space, not
// blank unless the field is optional, without NUL, within the limit.
func decodeText(f *record.Field, raw json.RawMessage) (record.Value, string) {
	s, ok := jsonString(raw)
	if !ok {
		return record.Value{}, msgNotString
	}
	if r, lone := loneSurrogate(raw); lone {
		// encoding/json would quietly store U+FFFD instead.
		return record.Value{}, fmt.Sprintf("Surrogate characters are not allowed: U+%X.", r)
	}
	s = strings.TrimSpace(s)
	switch {
	case s == "" && !f.Nullable:
		return record.Value{}, msgBlank
	case strings.IndexByte(s, 0) >= 0:
		return record.Value{}, msgNulChar
	case utf8.RuneCountInString(s) > f.MaxLen:
		return record.Value{}, msgTooLong(f.MaxLen)
	}
	return record.Value{Str: s, Valid: true}, ""
}

// loneSurrogate finds a \uXXXX escape in a JSON string that is half of a
// UTF-16 surrogate pair without its other half.
func loneSurrogate(raw json.RawMessage) (rune, bool) {
	escape := func(i int) (rune, bool) { // the \uXXXX at i, if any
		if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 32)
		return rune(n), err == nil
	}
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		r, ok := escape(i)
		if !ok {
			i++ // an escape of one character, such as \\ or \"
			continue
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if low, ok := escape(i + 6); ok && low >= 0xDC00 && low <= 0xDFFF {
				i += 11
				continue
			}
			return r, true
		case r >= 0xDC00 && r <= 0xDFFF:
			return r, true
		}
		i += 5
	}
	return 0, false
}

// decodeInteger accepts what Django REST Framework's IntegerField does: a
// JSON integer, a number with a zero fraction, or a string of them.
func decodeInteger(f *record.Field, raw json.RawMessage) (record.Value, string) {
	text := string(raw)
	if s, ok := jsonString(raw); ok {
		text = strings.TrimSpace(s)
	} else if raw[0] == 't' || raw[0] == 'f' || raw[0] == '{' || raw[0] == '[' {
		return record.Value{}, msgInteger
	}
	if i := strings.IndexByte(text, '.'); i >= 0 && strings.Trim(text[i+1:], "0") == "" {
		text = text[:i]
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return record.Value{}, msgInteger
	}
	switch {
	case f.Min != nil && n < *f.Min:
		return record.Value{}, fmt.Sprintf("Ensure this value is greater than or equal to %d.", *f.Min)
	case f.Max != nil && n > *f.Max:
		return record.Value{}, fmt.Sprintf("Ensure this value is less than or equal to %d.", *f.Max)
	}
	return record.Value{Int: n, Valid: true}, ""
}

// boolValue accepts what Django REST Framework's BooleanField does.
func boolValue(raw json.RawMessage) (record.Value, bool) {
	text := string(raw)
	if s, ok := jsonString(raw); ok {
		text = s
	}
	switch text {
	case "true", "True", "TRUE", "1", "yes", "Yes", "YES", "on", "On", "ON", "t", "T", "y", "Y":
		return record.Value{Int: 1, Valid: true}, true
	case "false", "False", "FALSE", "0", "no", "No", "NO", "off", "Off", "OFF", "f", "F", "n", "N":
		return record.Value{Valid: true}, true
	}
	return record.Value{}, false
}

// parseDate parses YYYY-MM-DD, a real calendar date from year 1 on:
// Python's dates, and so Django REST Framework's, start there, and
// PostgreSQL refuses year 0 (which Go's calendar has).
func parseDate(s string) (record.Value, bool) {
	if len(s) != len(time.DateOnly) {
		return record.Value{}, false
	}
	if t, err := time.Parse(time.DateOnly, s); err != nil || t.Year() < 1 {
		return record.Value{}, false
	}
	return record.Value{Str: s, Valid: true}, true
}

// decodeParent validates a parent: a JSON integer, or a string of ASCII
// digits. Anything else (3.0, "+3", " 3 ", "", true, an object) is the
// wrong type. An integer no record can have (0, negative, too large) is
// reported as missing without asking the database.
func decodeParent(raw json.RawMessage) (record.Value, string) {
	s := string(raw)
	wrongType := "Incorrect type. Expected pk value, received " + jsonbody.TypeName(raw) + "."
	digits := s
	switch {
	case strings.HasPrefix(s, `"`):
		str, ok := jsonString(raw)
		if !ok || str == "" || strings.Trim(str, "0123456789") != "" {
			return record.Value{}, wrongType
		}
		digits = str
	case jsonbody.TypeName(raw) != "int":
		return record.Value{}, wrongType
	}
	id, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || id < 1 || id > math.MaxInt {
		return record.Value{}, msgNoSuchParent(digits)
	}
	return record.Value{Int: id, Valid: true}, ""
}
