package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"personnel/logging"
)

// lines decodes every line logged.
func lines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// A request line that may be held is encoded by a handler of its own; it
// must say what the logger's handler says for the same record, byte for
// byte but the time, whatever the strings hold.
func TestLogRequest_WritesTheLineSlogWould(t *testing.T) {
	reqs := []logging.Request{
		{Method: "GET", Route: "/personnel/api/departments/{id}/", ID: "5000", Status: 200, Latency: 965 * time.Microsecond, Bytes: 84, User: "load", Client: "127.0.0.1"},
		{Method: "POST", Route: "/personnel/api/departments/", Status: 201, Latency: 20 * time.Minute, Bytes: 0, User: "", Client: "::1"},
		{Method: "OTHER", Route: "unmatched", Status: 404, Latency: 12*time.Second + 345678*time.Nanosecond, Bytes: 1 << 20,
			User: "ñandú \"q\" \\ <b>&</b>", Client: "10.0.0.1"},
		{Method: "GET", Route: "/x", ID: "a\x00b\x1f\n\r\t\u2028\u2029\xff\xfe€", Status: 503, Latency: time.Nanosecond, Bytes: 3, User: "\u00e9", Client: "[fe80::1]"},
	}
	for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelError} {
		for _, r := range reqs {
			ctx := logging.WithRequestID(context.Background(), "req-1")
			if r.Status == 201 {
				ctx = context.Background() // no request id
			}
			var fast, slow bytes.Buffer
			logging.LogRequest(ctx, logging.New(&fast, "json", slog.LevelDebug), lvl, r)
			// A logger derived from New's (with no attributes added) never
			// holds a line.
			logging.LogRequest(ctx, slog.New(logging.New(&slow, "json", slog.LevelDebug).Handler().WithAttrs(nil)), lvl, r)
			got, want := fast.String(), slow.String()
			const timeEnd = len(`{"time":"2006-01-02T15:04:05`)
			if !strings.HasPrefix(got, `{"time":"`) || len(got) < timeEnd || len(want) < timeEnd {
				t.Fatalf("no time first: %q", got)
			}
			cut := func(s string) string { _, rest, _ := strings.Cut(s, `","level"`); return rest }
			if cut(got) != cut(want) {
				t.Errorf("level %v, %+v:\n got %s\nwant %s", lvl, r, got, want)
			}
			at, err := time.Parse(time.RFC3339Nano, lines(t, got)[0]["time"].(string))
			if err != nil || time.Since(at) > time.Minute || time.Since(at) < 0 {
				t.Errorf("time %v (%v)", at, err)
			}
		}
	}
}

func TestLogRequest_TextLogsTheSameFields(t *testing.T) {
	var buf bytes.Buffer
	logging.LogRequest(logging.WithRequestID(context.Background(), "r-9"), logging.New(&buf, "text", slog.LevelInfo), slog.LevelInfo,
		logging.Request{Method: "GET", Route: "/r/{id}/", ID: "7", Status: 200, Latency: 1500 * time.Microsecond, Bytes: 10, User: "u", Client: "c"})
	want := "level=INFO msg=request method=GET route=/r/{id}/ id=7 status=200 latency_ms=1.5 bytes=10 user=u client=c request_id=r-9\n"
	if _, got, _ := strings.Cut(buf.String(), " "); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestLogRequest_BelowTheLevelLogsNothing(t *testing.T) {
	var buf bytes.Buffer
	l := logging.New(&buf, "json", slog.LevelInfo)
	logging.LogRequest(context.Background(), l, slog.LevelDebug, logging.Request{Method: "GET", Route: "/healthz", Status: 200})
	logging.Flush(l)
	if buf.Len() != 0 {
		t.Errorf("logged %q", buf.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the flushing timer's goroutine.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Writes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.writes
}

// Held request lines are written together within the interval, and any
// other line is written at once, after them: the log keeps its order and
// a warning never waits.
func TestHoldRequests_WritesRequestLinesTogetherAndKeepsTheOrder(t *testing.T) {
	var buf syncBuffer
	l := logging.New(&buf, "json", slog.LevelInfo, logging.HoldRequests(time.Hour))
	req := func(status int) {
		logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "GET", Route: "/r/", Status: status})
	}
	req(200)
	req(201)
	if buf.Writes() != 0 {
		t.Fatalf("request lines written at once: %q", buf.String())
	}
	l.Warn("the database is slow")
	req(202)
	logging.LogRequest(context.Background(), l, slog.LevelError, logging.Request{Method: "GET", Route: "/r/", Status: 503})
	req(203)
	recs := lines(t, buf.String())
	if len(recs) != 5 || recs[0]["status"] != 200.0 || recs[1]["status"] != 201.0 || recs[2]["msg"] != "the database is slow" ||
		recs[3]["status"] != 202.0 || recs[4]["status"] != 503.0 {
		t.Fatalf("after a warning and a server error: %v", recs)
	}
	if buf.Writes() != 4 {
		t.Errorf("%d writes for two held lines, a warning, a held line and a server error, want 4", buf.Writes())
	}
	logging.Flush(l)
	if recs := lines(t, buf.String()); len(recs) != 6 || recs[5]["status"] != 203.0 {
		t.Fatalf("after Flush: %v", recs)
	}
}

// Held lines are written by the interval's timer, with no Flush and no
// other line to push them out. (That lines are written together is
// checked above, where no timer can fire in between.)
func TestHoldRequests_WritesWithinTheInterval(t *testing.T) {
	var buf syncBuffer
	l := logging.New(&buf, "json", slog.LevelInfo, logging.HoldRequests(20*time.Millisecond))
	for i := range 3 {
		logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "GET", Route: "/r/", Status: 200 + i})
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(lines(t, buf.String())) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("held lines never written: %q", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// However long the interval, a busy server's lines are written once they
// fill the buffer: memory stays bounded.
func TestHoldRequests_WritesAFullBufferAtOnce(t *testing.T) {
	var buf syncBuffer
	l := logging.New(&buf, "json", slog.LevelInfo, logging.HoldRequests(time.Hour))
	n := 0
	for buf.Writes() == 0 {
		if n++; n > 10000 {
			t.Fatal("10,000 lines held and none written")
		}
		logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "GET", Route: strings.Repeat("r", 60), Status: 200})
	}
	if got := len(lines(t, buf.String())); got != n {
		t.Errorf("%d lines written of %d logged", got, n)
	}
	if n < 100 || n > 1000 {
		t.Errorf("the buffer filled after %d lines of about 150 bytes", n)
	}
}

// The lines of refused credentials, refused permissions and throttled
// clients are the security record: none is held.
func TestHoldRequests_NeverHoldsTheSecurityRecord(t *testing.T) {
	for _, status := range []int{401, 403, 429} {
		var buf syncBuffer
		l := logging.New(&buf, "json", slog.LevelInfo, logging.HoldRequests(time.Hour))
		logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "GET", Route: "/r/", Status: 200})
		logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "POST", Route: "/r/", Status: status})
		recs := lines(t, buf.String())
		if len(recs) != 2 || recs[0]["status"] != 200.0 || recs[1]["status"] != float64(status) {
			t.Errorf("a %d answer's line was held: written %v", status, recs)
		}
	}
}

func TestHoldRequests_ZeroWritesEachLineAtOnce(t *testing.T) {
	var buf syncBuffer
	l := logging.New(&buf, "json", slog.LevelInfo, logging.HoldRequests(0))
	logging.LogRequest(context.Background(), l, slog.LevelInfo, logging.Request{Method: "GET", Route: "/r/", Status: 200})
	if len(lines(t, buf.String())) != 1 {
		t.Fatalf("line held: %q", buf.String())
	}
}

// BenchmarkLogRequest is the request line every request writes: encoded
// by hand (as served), and through slog's JSON handler (as before, and as
// a logger derived from New's still is), to a writer that drops it.
//
//	go test -run '^$' -bench BenchmarkLogRequest -benchmem ./logging/
func BenchmarkLogRequest(b *testing.B) {
	r := logging.Request{Method: "GET", Route: "/personnel/api/departments/{id}/", ID: "5000", Status: 200,
		Latency: 965 * time.Microsecond, Bytes: 84, User: "load", Client: "127.0.0.1"}
	ctx := logging.WithRequestID(context.Background(), "e29b5757c455011ad40a0a4a547a6c4a")
	l := logging.New(io.Discard, "json", slog.LevelInfo)
	b.ReportAllocs()
	for b.Loop() {
		logging.LogRequest(ctx, l, slog.LevelInfo, r)
	}
}
