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
// text when w is a terminal, JSON otherwise) at cfg.LogLevel.
func newLogger(w io.Writer, cfg Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	format := cfg.LogFormat
	if format == "" {
		format = logJSON
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = logText
		}
	}
	if format == logText {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
