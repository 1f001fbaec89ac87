package logging

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"personnel/apierror"
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
// fields, and the request id of ctx, as attributes. A JSON logger made by
// New gets the line encoded here, the same line slog would write, without
// slog's per-record work (the caller's stack, attribute slices, floats
// through encoding/json): it is the one line every request costs.
func LogRequest(ctx context.Context, l *slog.Logger, level slog.Level, r Request) {
	if !l.Enabled(ctx, level) {
		return
	}
	latency := float64(r.Latency.Microseconds()) / 1000
	h, ok := l.Handler().(requestIDHandler)
	if !ok || h.lines == nil {
		attrs := make([]slog.Attr, 0, 9)
		attrs = append(attrs, slog.String("method", r.Method), slog.String("route", r.Route))
		if r.ID != "" {
			attrs = append(attrs, slog.String("id", r.ID))
		}
		attrs = append(attrs, slog.Int("status", r.Status), slog.Float64("latency_ms", latency),
			slog.Int("bytes", r.Bytes), slog.String("user", r.User), slog.String("client", r.Client))
		l.LogAttrs(ctx, level, "request", attrs...)
		return
	}
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = time.Now().AppendFormat(b, time.RFC3339Nano) // as slog's JSON handler
	b = append(b, `","level":`...)
	b = apierror.AppendString(b, level.String())
	b = append(b, `,"msg":"request","method":`...)
	b = apierror.AppendString(b, r.Method)
	b = append(b, `,"route":`...)
	b = apierror.AppendString(b, r.Route)
	if r.ID != "" {
		b = append(b, `,"id":`...)
		b = apierror.AppendString(b, r.ID)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, `,"latency_ms":`...)
	// What encoding/json (and so slog) writes for a float from 1e-6 up to
	// 1e21, which holds every latency in milliseconds to the microsecond.
	b = strconv.AppendFloat(b, latency, 'f', -1, 64)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, int64(r.Bytes), 10)
	b = append(b, `,"user":`...)
	b = apierror.AppendString(b, r.User)
	b = append(b, `,"client":`...)
	b = apierror.AppendString(b, r.Client)
	if id := RequestID(ctx); id != "" {
		b = append(b, `,"request_id":`...)
		b = apierror.AppendString(b, id)
	}
	b = append(b, "}\n"...)
	if level >= slog.LevelWarn || securityRecord(r.Status) {
		h.lines.Write(b)
	} else {
		h.lines.hold(b)
	}
	if cap(b) <= 4<<10 { // the fields are capped, but keep no freak buffer
		*bp = b
		linePool.Put(bp)
	}
}

// securityRecord reports whether an answer's line belongs to the security
// record: refused credentials, refused permissions and throttled clients.
// Such a line is written at once, never held, so that a process killed
// during an attack still leaves it in the log.
func securityRecord(status int) bool {
	return status == 401 || status == 403 || status == 429
}

// linePool holds the buffers request lines are encoded into.
var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
