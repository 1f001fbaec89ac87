package logging

import (
	"io"
	"sync"
	"time"
)

// maxHeld is the most bytes of request lines held before they are written
// whatever the interval: a busy server writes every few milliseconds.
const maxHeld = 64 << 10

// lineWriter is the one writer of a logger's lines. Request lines may be
// held up to an interval and written together: at thousands of requests a
// second, a write(2) per line costs a server as much as its log encoding.
// Every other line is written at once, after the lines held before it, so
// the log keeps its order and a warning or error is never held.
type lineWriter struct {
	mu       sync.Mutex
	w        io.Writer
	interval time.Duration // 0: request lines are written at once too
	held     []byte
	armed    bool // a flush is scheduled
}

// heldLines is the writer of the lines that may be held: slog's JSON
// handler writes each line in one call.
type heldLines struct{ lw *lineWriter }

func (h heldLines) Write(p []byte) (int, error) {
	h.lw.hold(p)
	return len(p), nil
}

// Write writes p at once, after any lines held.
func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.flushLocked()
	return lw.w.Write(p)
}

// hold writes a request line within the interval. It keeps a copy of p.
func (lw *lineWriter) hold(p []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.interval <= 0 {
		lw.w.Write(p) // as slog does, a line that cannot be written is dropped
		return
	}
	lw.held = append(lw.held, p...)
	switch {
	case len(lw.held) >= maxHeld:
		lw.flushLocked()
	case !lw.armed:
		lw.armed = true
		time.AfterFunc(lw.interval, lw.flush)
	}
}

// flush writes the lines held.
func (lw *lineWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.armed = false
	lw.flushLocked()
}

func (lw *lineWriter) flushLocked() {
	if len(lw.held) == 0 {
		return
	}
	lw.w.Write(lw.held)
	if cap(lw.held) > 2*maxHeld { // after a burst of long lines, give the memory back
		lw.held = nil
		return
	}
	lw.held = lw.held[:0]
}
