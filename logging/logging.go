// Package logging sets up Personnel's structured logs (log/slog: JSON in
// production, text on a terminal) and carries each request's id through
// its context, so that every line logged while serving a request, errors
// included, names the request.
package logging

import (
	"context"
	"io"
	"log/slog"
	"os"
	"time"

	"golang.org/x/term"
)

// Option adjusts the logger New makes.
type Option func(*lineWriter)

// HoldRequests lets request lines below WARN (LogRequest, in JSON) wait up
// to d before they are written, so that a busy server writes many in one
// go. Lines still held when the process is killed are lost; Flush writes
// them before a clean exit. Other lines are never held.
func HoldRequests(d time.Duration) Option {
	return func(lw *lineWriter) { lw.interval = d }
}

// EncodeRequestsBySlog has request lines (LogRequest) encoded by slog's
// JSON handler, as any other line, and written at once: the same lines,
// at slog's cost, to measure what encoding them by hand wins
// (PERSONNEL_WITHOUT=log_encoder).
func EncodeRequestsBySlog() Option {
	return func(lw *lineWriter) { lw.bySlog = true }
}

// New returns a logger writing to w in format ("text", "json", or "auto":
// text when w is a terminal) at level.
func New(w io.Writer, format string, level slog.Leveler, opts ...Option) *slog.Logger {
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	lw := &lineWriter{w: w}
	for _, o := range opts {
		o(lw)
	}
	ho := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return slog.New(requestIDHandler{Handler: slog.NewTextHandler(lw, ho)})
	}
	if lw.bySlog {
		return slog.New(requestIDHandler{Handler: slog.NewJSONHandler(lw, ho)})
	}
	return slog.New(requestIDHandler{Handler: slog.NewJSONHandler(lw, ho), lines: lw})
}

// Flush writes the request lines l holds, if any.
func Flush(l *slog.Logger) {
	if h, ok := l.Handler().(requestIDHandler); ok && h.lines != nil {
		h.lines.flush()
	}
}

type ctxKey struct{}

// WithRequestID returns ctx carrying a request id.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}

// RequestID returns the request id ctx carries, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// requestIDHandler adds the request id of a record's context.
type requestIDHandler struct {
	slog.Handler
	// lines is set on the JSON logger New makes, and on no logger derived
	// from it (whose attributes or groups LogRequest would leave out): it
	// is the writer LogRequest writes its lines to itself.
	lines *lineWriter
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{Handler: h.Handler.WithGroup(name)}
}
