// Package apierror is the error vocabulary of the Personnel API and the one
// place where an error becomes an HTTP status and a JSON body.
//
// Handlers return errors; they never choose a status. An *Error carries a
// Kind (what went wrong, in the client's terms), a message a person can act
// on, and, for invalid input, the messages of each field. Anything that is
// not an *Error is an internal failure: it is logged with its cause and the
// client sees only a generic message, never SQL, a driver message or a stack.
package apierror

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
)

// Kind classifies an error by what the client should make of it.
type Kind uint8

// The kinds, each mapped to exactly one status in statuses.
const (
	Internal Kind = iota
	Invalid
	Unauthorized
	Forbidden
	NotFound
	MethodNotAllowed
	Conflict
	PreconditionFailed
	Gone
	TooLarge
	UnsupportedMediaType
	TooManyRequests
	Unavailable
	RequestTimeout
)

// statuses is the single table from error kinds to HTTP statuses.
var statuses = [...]int{
	Internal:             http.StatusInternalServerError,
	Invalid:              http.StatusBadRequest,
	Unauthorized:         http.StatusUnauthorized,
	Forbidden:            http.StatusForbidden,
	NotFound:             http.StatusNotFound,
	MethodNotAllowed:     http.StatusMethodNotAllowed,
	Conflict:             http.StatusConflict,
	PreconditionFailed:   http.StatusPreconditionFailed,
	Gone:                 http.StatusGone,
	TooLarge:             http.StatusRequestEntityTooLarge,
	UnsupportedMediaType: http.StatusUnsupportedMediaType,
	TooManyRequests:      http.StatusTooManyRequests,
	Unavailable:          http.StatusServiceUnavailable,
	RequestTimeout:       http.StatusRequestTimeout,
}

// Status returns the HTTP status of k.
func (k Kind) Status() int { return statuses[k] }

// Messages shown when an error carries no message of its own.
const (
	msgInternal    = "A server error occurred."
	msgUnavailable = "The database is unavailable; try again shortly."
	msgBusy        = "The database is busy with other writes to the same records; retry the request."
)

// FieldError is one message about one field (or query parameter).
type FieldError struct {
	Field string
	Msg   string
}

// Error is an error the client is told about.
type Error struct {
	Kind   Kind
	Msg    string
	Fields []FieldError // in the order they were found; rendered as "errors"
	Cause  error        // logged, never shown
	// Errors, when set, is the JSON rendered as "errors" instead of
	// Fields (a bulk create's list, one object per element).
	Errors []byte
	// Extra are more members of the body, as JSON (`"rows":[...]`).
	Extra []byte
}

// Error implements error. It includes the cause, for logs.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Msg + ": " + e.Cause.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// New returns an error of kind k with message msg.
func New(k Kind, msg string) *Error { return &Error{Kind: k, Msg: msg} }

// Wrap returns an error of kind k with message msg whose cause is logged.
func Wrap(k Kind, msg string, cause error) *Error { return &Error{Kind: k, Msg: msg, Cause: cause} }

// Fields returns an Invalid error listing each field's messages. Its Msg
// joins them as "field: message", so a client that shows only msg still
// says everything.
func Fields(errs ...FieldError) *Error {
	parts := make([]string, len(errs))
	for i, fe := range errs {
		parts[i] = fe.Field + ": " + fe.Msg
	}
	return &Error{Kind: Invalid, Msg: strings.Join(parts, " "), Fields: errs}
}

// NotFoundError is the 404 every missing record and unknown path answers.
func NotFoundError() *Error { return New(NotFound, "Not found.") }

// Unavailability wraps a database failure that is not the client's doing
// (connection refused, timeout, server gone) as a 503.
func Unavailability(cause error) *Error { return Wrap(Unavailable, msgUnavailable, cause) }

// Busy wraps a write the database kept aborting (deadlocks, write
// conflicts) until the time for retries ran out, as a 503 that asks the
// client to retry: the database is busy, not unavailable.
func Busy(cause error) *Error { return Wrap(Unavailable, msgBusy, cause) }

// As returns err as an *Error; anything else becomes Internal with err as
// its cause.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Msg: msgInternal, Cause: err}
}

// Write sends err to the client as the contract's JSON error body and logs
// what the client is not shown. Canceled requests (the client went away)
// are not logged as failures.
func Write(ctx context.Context, w http.ResponseWriter, err error) {
	e := As(err)
	status := e.Kind.Status()
	switch {
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		slog.DebugContext(ctx, "request canceled by client", "error", err)
	case e.Kind == Internal:
		slog.ErrorContext(ctx, "internal error", "error", err)
	case e.Kind == Unavailable:
		slog.WarnContext(ctx, "unavailable", "msg", e.Msg, "error", err)
		w.Header().Set("Retry-After", "1")
	case e.Cause != nil:
		slog.DebugContext(ctx, "client error", "status", status, "error", err)
	}
	msg := e.Msg
	if e.Kind == Internal {
		msg = msgInternal
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if e.Errors == nil && e.Extra == nil {
		_, _ = w.Write(Body(status, msg, e.Fields))
		return
	}
	b := Body(status, msg, e.Fields)
	if e.Errors != nil {
		b = append(b[:len(b)-1], `,"errors":`...)
		b = append(append(b, e.Errors...), '}')
	}
	if e.Extra != nil {
		b = append(append(append(b[:len(b)-1], ','), e.Extra...), '}')
	}
	_, _ = w.Write(b)
}

// AppendFieldsObject appends fields as the JSON object Body renders under
// "errors": {"field":["message",...],...}.
func AppendFieldsObject(b []byte, fields []FieldError) []byte {
	b = append(b, '{')
	b = appendFields(b, fields, false)
	return append(b, '}')
}

// NonFieldErrors is the key under which Django REST Framework reports
// errors about a request as a whole (a failed login, refresh or verify).
const NonFieldErrors = "non_field_errors"

// NonField returns an Invalid error about the request as a whole, such as
// wrong login credentials: its msg is the message itself, and the body
// also carries it under non_field_errors, where DRF clients look.
func NonField(msg string) *Error {
	return &Error{Kind: Invalid, Msg: msg, Fields: []FieldError{{Field: NonFieldErrors, Msg: msg}}}
}

// reserved are the keys of the error body itself: a field of that name is
// reported under "errors" only, never copied to the top level over them.
var reserved = map[string]bool{"code": true, "msg": true, "errors": true, "detail": true}

// Body renders the contract's error body: {"code":N,"msg":"...","errors":{...}}.
// Fields with several messages keep them in order under one key. For the
// clients written against Django REST Framework, the body also carries
// DRF's own keys: each field's messages again at the top level (except a
// field named like one of the body's keys), or, when no field is at fault,
// "detail" with the message.
func Body(status int, msg string, fields []FieldError) []byte {
	b := make([]byte, 0, 64+2*len(msg))
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"msg":`...)
	b = AppendString(b, msg)
	if len(fields) == 0 {
		b = append(b, `,"detail":`...)
		b = AppendString(b, msg)
		return append(b, '}')
	}
	b = append(b, `,"errors":{`...)
	b = appendFields(b, fields, false)
	b = append(b, '}')
	b = appendFields(b, fields, true)
	return append(b, '}')
}

// appendFields appends "field":["message",...] for each field, in the
// order of first appearance; top says these are the top-level copies,
// which follow a member already written and skip the reserved names.
func appendFields(b []byte, fields []FieldError, top bool) []byte {
	done := make(map[string]bool, len(fields))
	first := !top
	for i, fe := range fields {
		if done[fe.Field] || (top && reserved[fe.Field]) {
			continue
		}
		done[fe.Field] = true
		if !first {
			b = append(b, ',')
		}
		first = false
		b = AppendString(b, fe.Field)
		b = append(b, `:[`...)
		firstMsg := true
		for _, other := range fields[i:] {
			if other.Field != fe.Field {
				continue
			}
			if !firstMsg {
				b = append(b, ',')
			}
			firstMsg = false
			b = AppendString(b, other.Msg)
		}
		b = append(b, ']')
	}
	return b
}
