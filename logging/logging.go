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
	return slog.New(requestIDHandler{Handler: slog.NewJSONHandler(lw, ho), held: slog.NewJSONHandler(heldLines{lw}, ho), lines: lw})
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
	// held and lines are set on the JSON logger New makes, and on no
	// logger derived from it (whose attributes or groups held would leave
	// out): held encodes the request lines LogRequest may hold into lines.
	held  slog.Handler
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
