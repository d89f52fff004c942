package main

import (
	"io"
	"log/slog"
	"os"

	"golang.org/x/term"
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
	format := cfg.LogFormat
	if format == "" {
		format = logJSON
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = logText
		}
	}
	buf := newLogBuffer(w)
	var h slog.Handler = slog.NewJSONHandler(buf, opts)
	if format == logText {
		h = slog.NewTextHandler(buf, opts)
	}
	return slog.New(flushAtWarn{h, buf}), buf
}
