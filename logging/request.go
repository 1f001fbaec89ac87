package logging

import (
	"context"
	"log/slog"
	"time"
)

// Request is one answered request, as the request log records it.
type Request struct {
	Method string
	Route  string
	ID     string // the record's id in the path; "" when there is none
	Status int
	// Latency is logged in milliseconds to the microsecond.
	Latency time.Duration
	Bytes   int
	User    string
	Client  string
}

// LogRequest logs r at level through l as the message "request" with r's
// fields, and the request id of ctx, as attributes. Through a JSON logger
// made by New with HoldRequests, a line below WARN that is not part of
// the security record is held and written with others.
func LogRequest(ctx context.Context, l *slog.Logger, level slog.Level, r Request) {
	if !l.Enabled(ctx, level) {
		return
	}
	rec := slog.NewRecord(time.Now(), level, "request", 0)
	var attrs [9]slog.Attr
	n := 0
	add := func(a slog.Attr) { attrs[n] = a; n++ }
	add(slog.String("method", r.Method))
	add(slog.String("route", r.Route))
	if r.ID != "" {
		add(slog.String("id", r.ID))
	}
	add(slog.Int("status", r.Status))
	add(slog.Float64("latency_ms", float64(r.Latency.Microseconds())/1000))
	add(slog.Int("bytes", r.Bytes))
	add(slog.String("user", r.User))
	add(slog.String("client", r.Client))
	h := l.Handler()
	if rh, ok := h.(requestIDHandler); ok {
		// The request id is added here, with the other attributes, as
		// rh.Handle would add it: the record then grows once, not twice.
		if id := RequestID(ctx); id != "" {
			add(slog.String("request_id", id))
		}
		h = rh.Handler
		if rh.held != nil && level < slog.LevelWarn && !securityRecord(r.Status) {
			h = rh.held
		}
	}
	rec.AddAttrs(attrs[:n]...)
	_ = h.Handle(ctx, rec) // as slog does, a line that cannot be written is dropped
}

// securityRecord reports whether an answer's line belongs to the security
// record: refused credentials, refused permissions and throttled clients.
// Such a line is written at once, never held, so that a process killed
// during an attack still leaves it in the log.
func securityRecord(status int) bool {
	return status == 401 || status == 403 || status == 429
}
