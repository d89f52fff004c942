package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"
)

// startPprof serves the runtime profiles (CPU, heap, allocations, goroutines)
// on addr, a listener of their own that only exists when
// WORKTRACK_PPROF_ADDR is set, so that the API's listener never exposes
// them. A failure to listen is logged and the server runs without them: a
// profile is a diagnosis aid, not a reason to refuse to start. The returned
// function stops the listener.
func startPprof(ctx context.Context, addr string, log *slog.Logger) func() {
	if addr == "" {
		return func() {}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		log.Warn("pprof listener not started", "addr", addr, "error", err.Error())
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof listener stopped", "error", err.Error())
		}
	}()
	log.Info("pprof listening", "addr", ln.Addr().String())
	return func() { _ = srv.Close() }
}

// memProfileRate is the runtime.MemProfileRate the process runs with, given
// the current one (Go's default, or GODEBUG=memprofilerate's). Go samples
// allocations for the heap profile in every program that links the
// profiler, walking each sample's stack and keeping it in a table of its
// own; only the listener of WORKTRACK_PPROF_ADDR serves that profile, so
// without it sampling is off. An operator's explicit GODEBUG=memprofilerate
// still wins.
func memProfileRate(getenv func(string) string, current int) int {
	if getenv("WORKTRACK_PPROF_ADDR") != "" {
		return current
	}
	for setting := range strings.SplitSeq(getenv("GODEBUG"), ",") {
		if strings.HasPrefix(strings.TrimSpace(setting), "memprofilerate=") {
			return current
		}
	}
	return 0
}
