package main

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/worktrack/worktrack/adapters/telemetry"
)

// Log formats of WORKTRACK_LOG_FORMAT.
const (
	logText = "text"
	logJSON = "json"
)

// newLogger is serve's logger: cfg.LogFormat ("text", "json", or "" for
// text when w is a terminal, JSON otherwise) at cfg.LogLevel, writing to w
// through the returned logBuffer. Whatever else serve writes to w goes
// through that buffer too, and is flushed, so that the lines keep their order.
func newLogger(w io.Writer, cfg Config) (*slog.Logger, *logBuffer) {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	buf := newLogBuffer(w)
	var h slog.Handler = slog.NewJSONHandler(buf, opts)
	if logFormat(w, cfg.LogFormat) == logText {
		h = slog.NewTextHandler(buf, opts)
	}
	if telemetry.Enabled(os.Getenv) {
		// Lines logged under a traced request carry its trace_id and span_id.
		h = telemetry.LogHandler(h)
	}
	return slog.New(flushAtWarn{h, buf}), buf
}

// logFormat is the format serve writes to w: format when it is text or json,
// else (unset, or not yet known to be valid) text when w is a terminal and
// JSON otherwise. In JSON, every line serve writes to w is one JSON object:
// the start-up lines, the first start's key and a failure to start
// included.
func logFormat(w io.Writer, format string) string {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case logText:
		return logText
	case logJSON:
		return logJSON
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return logText
	}
	return logJSON
}

// errReported is the error of a command that has told the person (or the
// log shipper) why it failed already: run adds no line of its own.
var errReported = errors.New("reported")

// reportJSON writes err as one JSON log record to w, for a serve that fails
// in JSON mode, and returns errReported.
func reportJSON(w io.Writer, err error) error {
	l := slog.New(slog.NewJSONHandler(w, nil))
	l.Error("worktrack: " + oneLine(err))
	return errReported
}
