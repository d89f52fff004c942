package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logFlushInterval is how long a log line may wait in logBuffer before it
// is written out.
const logFlushInterval = 100 * time.Millisecond

// logBuffer batches serve's log lines into few writes. Under load the access
// log writes a line per request; written one by one, each costs a write
// system call, about a tenth of a small read's CPU time. A line waits at most
// logFlushInterval, or until 32 KiB are waiting; Flush writes it at once.
// Safe for concurrent use.
type logBuffer struct {
	mu       sync.Mutex
	out      io.Writer
	w        *bufio.Writer
	timer    *time.Timer
	pending  bool          // a flush is scheduled
	interval time.Duration // logFlushInterval
}

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{out: w, w: bufio.NewWriterSize(w, 32<<10), interval: logFlushInterval}
	b.timer = time.AfterFunc(time.Hour, func() { _ = b.Flush() })
	b.timer.Stop()
	return b
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.w.Write(p)
	if err != nil {
		b.reset()
	}
	if b.w.Buffered() > 0 && !b.pending {
		b.pending = true
		b.timer.Reset(b.interval)
	}
	return n, err
}

// Flush writes out what is waiting.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = false
	err := b.w.Flush()
	if err != nil {
		b.reset()
	}
	return err
}

// reset drops what is waiting after a failed write: a bufio.Writer keeps
// its first error and refuses every write after it, which would silence the
// log for good after one failure of stderr (a full disk, say), where writing
// line by line lost only the lines that failed.
func (b *logBuffer) reset() { b.w.Reset(b.out) }

// flushAtWarn is a slog.Handler that flushes its logBuffer after every
// record at warn or above: warnings and errors are in the log at once, not up
// to logFlushInterval later (nor lost, if the process then dies).
type flushAtWarn struct {
	slog.Handler
	buf *logBuffer
}

func (h flushAtWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.buf.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h flushAtWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushAtWarn{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushAtWarn) WithGroup(name string) slog.Handler {
	return flushAtWarn{h.Handler.WithGroup(name), h.buf}
}
