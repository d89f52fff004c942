package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/metrics"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/secretbox"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/cmd/worktrack/wiring"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/graph/server"
)

func serveCmd(stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Serve REST under /v1 and GraphQL at /graphql, and dispatch webhooks",
		Long: "Serve REST under /v1 and GraphQL at /graphql, and dispatch webhooks.\n\n" +
			"On first start with an empty database it creates workspace \"Default\", an admin user and\n" +
			"one API key, whose secret it prints once.\n\n" + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err == nil {
				err = serve(cmd.Context(), cfg, stderr, nil)
			}
			if err != nil && logFormat(stderr, os.Getenv("WORKTRACK_LOG_FORMAT")) == logJSON {
				return reportJSON(stderr, err)
			}
			return err
		},
	}
}

// serve runs the server until ctx is cancelled (SIGINT/SIGTERM), then lets
// in-flight requests finish and returns nil. ready, when not nil, receives
// the bound address once the server accepts connections.
func serve(ctx context.Context, cfg Config, stderr io.Writer, ready chan<- string) error {
	log, out := newLogger(stderr, cfg)
	defer func() { _ = out.Flush() }()
	tracing, err := telemetry.Setup(ctx, currentBuild().Version)
	if err != nil {
		return err
	}
	defer flushTraces(tracing, log)

	// The address is taken before anything is created: a first start on a
	// busy port must not store a bootstrap key it can then never print.
	ln, base, err := listen(cfg)
	if err != nil {
		return err
	}
	defer ln.Close()
	limiter, closeLimiter, err := openLimiter(cfg, log)
	if err != nil {
		return err
	}
	defer closeLimiter()

	db, err := openServeStore(ctx, cfg, log, store.WithTracing(tracing.Provider))
	if err != nil {
		return err
	}
	defer db.Close()

	m := newMetrics(db)
	if tracing.Provider != nil {
		m.WatchTraces(tracing.Dropped)
	}

	a := newApp(db, cfg, log)
	stopDispatcher := startDispatcher(ctx, a, db, cfg, log, m, tracing.Provider)
	// On the error paths below; shutdown stops it within its timeout first.
	defer stopDispatcher(context.Background())
	if err := bootstrap(ctx, a, cfg, out, base); err != nil {
		return err
	}
	text := logFormat(stderr, cfg.LogFormat) == logText

	// One HTTP edge, and the two APIs side by side on it.
	edge, sockets := wiring.HTTP(a, db, httpedge.Options{
		Logger:             log,
		Limiter:            limiter,
		RateLimit:          cfg.RateLimit,
		UserRateLimit:      cfg.UserRateLimit,
		WorkspaceRateLimit: cfg.WorkspaceRateLimit,
		RateWindow:         cfg.RateWindow,
		AuthFailureLimit:   cfg.AuthFailureLimit,
		TrustedProxies:     cfg.TrustedProxies,
		CORSOrigins:        cfg.CORSOrigins,
		Ready:              db.Ping,
		Observer:           m,
		Tracing:            tracing.Provider,
	}, server.Options{
		MaxComplexity: cfg.GraphQLComplexity,
		MaxDepth:      cfg.GraphQLDepth,
		Logger:        log,
		Tracing:       tracing.Provider,
	})
	edge.MountMetrics(m.Handler(), cfg.MetricsToken)
	srv := httpServer(edge, log)

	stopPprof := startPprof(ctx, cfg.PprofAddr, log)
	defer stopPprof()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	go purgeIdempotencyKeys(ctx, db.Idempotency(), log)
	go purgeEvents(ctx, a, cfg.EventRetention, log)
	go pruneAudit(ctx, a, cfg.AuditRetention, log)
	go foldCounts(ctx, db, log)
	go a.Live.Run(ctx)
	m.WatchSubscriptions(a.Live.Subscriptions)
	log.Info("listening", "addr", ln.Addr().String(), "url", base, "database", redactURL(cfg.DatabaseURL))
	if text {
		printListening(out, base)
	}
	_ = out.Flush()
	if ready != nil {
		ready <- ln.Addr().String()
	}

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, sockets, errc, stopDispatcher, cfg.ShutdownTimeout, log)
}

// newMetrics is the process's collectors, watching db's pool and backlog.
func newMetrics(db *store.DB) *metrics.Metrics {
	m := metrics.New()
	db.ObserveSeatWaits(m.ObserveSeatWait)
	m.WatchSeats(func() (capacity, inUse, waiting int) {
		st := db.SeatStats()
		return st.Capacity, st.InUse, st.Waiting
	})
	if sqlDB, err := db.Gorm().DB(); err == nil {
		m.WatchPool("api", sqlDB)
	}
	m.WatchBacklog(db.Deliveries().Backlog)
	return m
}

// openServeStore opens and migrates the database for serve, warns about
// what shares it, and checks that the stored secrets open.
func openServeStore(ctx context.Context, cfg Config, log *slog.Logger, opts ...store.Option) (*store.DB, error) {
	db, applied, err := openStore(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "versions", applied)
	}
	warnNeighbours(ctx, db, log)
	if err := checkSecrets(ctx, db, cfg, log); err != nil {
		_ = db.Close()
		return nil, err
	}
	b := store.DefaultBudget(db.MaxOpenConns(), runtime.GOMAXPROCS(0))
	b.StatementTimeout = cfg.DBStatementTimeout
	if cfg.DBWorkspaceShare > 0 {
		b.WorkspaceShare, b.WorkspaceQueue = cfg.DBWorkspaceShare, store.QueueFor(cfg.DBWorkspaceShare)
	}
	if cfg.DBSeats > 0 {
		b.Seats = cfg.DBSeats
	}
	b.Seats = max(b.Seats, b.WorkspaceShare)
	db.SetBudget(b)
	return db, nil
}

// flushTraces exports the spans still queued when serve returns, for at
// most traceFlushTimeout: a collector that is down does not hold the exit.
func flushTraces(t *telemetry.Tracing, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		log.Warn("traces: exporting the last spans failed", "error", err.Error())
	}
}

// traceFlushTimeout bounds flushTraces.
const traceFlushTimeout = 5 * time.Second

// checkSecrets refuses to start when the keyring cannot open a stored
// secret (a server that cannot sign deliveries must not serve), and warns
// once when secrets are stored in plaintext.
func checkSecrets(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) error {
	if _, err := db.CheckSecrets(ctx); err != nil {
		if errors.Is(err, secretbox.ErrNoKey) || errors.Is(err, secretbox.ErrCorrupt) {
			return &configError{secretbox.EnvKey, fmt.Sprintf("cannot decrypt the stored webhook secrets (%v); "+
				"set it to the keys they were encrypted with (any listed key decrypts)", err)}
		}
		return fmt.Errorf("reading the stored webhook secrets: %w", err)
	}
	if !cfg.Secrets.Enabled() {
		log.Warn(secretbox.EnvKey + " is not set: webhook signing secrets are stored in plaintext, so a copy of the database " +
			"lets anyone sign deliveries. Set it (openssl rand -base64 32) and run `worktrack secrets reencrypt`.")
	}
	return nil
}

// warnNeighbours warns when Worktrack's tables share their database with
// something else: PostgreSQL's maintenance database, or tables Worktrack's
// migrations did not make. It serves all the same.
func warnNeighbours(ctx context.Context, db *store.DB, log *slog.Logger) {
	n, err := db.Neighbours(ctx)
	if err != nil {
		log.Warn("could not list the database's other tables", "error", err.Error())
		return
	}
	if n.Maintenance {
		log.Warn("DATABASE_URL names PostgreSQL's maintenance database \"postgres\": Worktrack's tables now live beside whatever else uses it. " +
			"Give Worktrack a database of its own (CREATE DATABASE worktrack) and point DATABASE_URL at it.")
	}
	if len(n.Tables) > 0 {
		log.Warn("the database also holds tables Worktrack did not make; if it was meant for something else, "+
			"give Worktrack a database of its own and point DATABASE_URL at it", "tables", n.Tables)
	}
}

// httpServer serves h with the timeouts of a public API: slow clients cannot
// hold a connection forever (WebSockets lift them for themselves).
func httpServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// printListening tells a person at the terminal where everything is.
func printListening(w io.Writer, base string) {
	fmt.Fprintf(w, "\nWorktrack is listening on %s\n  REST:    %s/v1   (try: curl -H \"Authorization: Bearer $WORKTRACK_KEY\" %s/v1/users/me)\n  Docs:    %s/docs   (OpenAPI: %s/v1/openapi.json)\n  GraphQL: %s/graphql   (GraphiQL in a browser)\n  Health:  %s/healthz   Metrics: %s/metrics\nStop with Ctrl-C.\n\n",
		base, base, base, base, base, base, base, base)
}

// listen takes WORKTRACK_ADDR, with TLS when WORKTRACK_TLS_CERT and _KEY
// are set, and returns the listener and its base URL.
func listen(cfg Config) (net.Listener, string, error) {
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, "", fmt.Errorf("WORKTRACK_TLS_CERT/WORKTRACK_TLS_KEY: %w", err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, "", fmt.Errorf("WORKTRACK_ADDR: %w", err)
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
		ln = tls.NewListener(ln, tlsCfg)
	}
	return ln, scheme + "://" + ln.Addr().String(), nil
}

// openLimiter is the rate limiter of REDIS_URL (shared by the replicas,
// guarded so that a Redis outage fails open), or one in process.
func openLimiter(cfg Config, log *slog.Logger) (edgeport.RateLimiter, func(), error) {
	if cfg.RedisURL == "" {
		return ratelimit.NewMemory(), func() {}, nil
	}
	ratelimit.LogDriverAt(log)
	client, err := ratelimit.OpenRedis(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	guard := ratelimit.NewGuard(ratelimit.NewRedis(client, "worktrack:rl:"), ratelimit.GuardOptions{Logger: log})
	return guard, func() { _ = client.Close() }, nil
}

// shutdown ends serve after SIGTERM or SIGINT, all within timeout
// (WORKTRACK_SHUTDOWN_TIMEOUT): the listener closes at once, so new
// connections are refused; GraphQL WebSockets close with 1001 (going away);
// requests in flight finish; then the webhook
// dispatcher stops claiming and its attempts in flight finish. When the
// timeout runs out first, the connections still open are closed and the
// attempts still in flight are left to their leases; the exit is still
// clean (nil), since nothing committed is lost.
func shutdown(srv *http.Server, sockets *server.Sockets, errc <-chan error, stopDispatcher func(context.Context), timeout time.Duration, log *slog.Logger) error {
	log.Info("shutting down: finishing in-flight requests", "timeout", timeout.String(), "websockets", sockets.Len())
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Hijacked connections are not the http.Server's to wait for.
	socketsClosed := make(chan error, 1)
	go func() { socketsClosed <- sockets.Close(ctx) }()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown timeout ran out: closing the connections of requests still in flight", "timeout", timeout.String())
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := <-socketsClosed; err != nil {
		log.Warn("shutdown timeout ran out before every WebSocket's close handshake ended")
	}
	stopDispatcher(ctx)
	log.Info("stopped")
	return nil
}

// bootstrap creates the first workspace, admin and key of an empty
// database, and shows the key once: in a banner for a person, or in JSON
// mode as one record with the key in api_key, whatever the log level (it
// is never shown again).
func bootstrap(ctx context.Context, a *app.App, cfg Config, out *logBuffer, base string) error {
	created, _, secret, err := a.Admin.Bootstrap(ctx, cfg.BootstrapEmail)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if !created {
		return nil
	}
	if logFormat(out.out, cfg.LogFormat) == logText {
		printBanner(out, cfg.BootstrapEmail, secret, base)
	} else {
		slog.New(slog.NewJSONHandler(out, nil)).Warn(
			"first start: an admin API key was created; it is shown once and never again, store it like a password",
			"email", cfg.BootstrapEmail, "api_key", secret, "url", base)
	}
	return out.Flush()
}

// printBanner shows the bootstrap key once, on stderr, in a block that
// stands out from the JSON log lines.
func printBanner(w io.Writer, email, secret, base string) {
	line := strings.Repeat("=", 78)
	fmt.Fprintf(w, "\n%s\n  WORKTRACK FIRST START: an admin API key was created for %s.\n  It is shown ONCE and never again. Store it like a password:\n\n      %s\n\n  Try it:\n      export WORKTRACK_KEY=%s\n      curl -H \"Authorization: Bearer $WORKTRACK_KEY\" %s/v1/users/me\n%s\n\n",
		line, email, secret, secret, base, line)
}

// redactURL hides the passwords of a database URL before it is logged: the
// user-info's, and a password query parameter's. A URL that does not parse
// is not logged at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	if _, set := u.User.Password(); set {
		u.User = url.UserPassword(u.User.Username(), "REDACTED")
	}
	q := u.Query()
	for name := range q {
		if strings.EqualFold(name, "password") {
			q[name] = []string{"REDACTED"}
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// purgeIdempotencyKeys deletes idempotency records past their 24-hour window,
// hourly, until ctx ends. Expired records are already ignored when read; this
// only keeps the table small.
func purgeIdempotencyKeys(ctx context.Context, s edgeport.IdempotencyStore, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := s.PurgeIdempotent(ctx, time.Now().Add(-edgeport.IdempotencyWindow)); err != nil {
			if ctx.Err() == nil {
				log.Warn("purging idempotency keys", "error", err.Error())
			}
		} else if n > 0 {
			log.Info("purged idempotency keys", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// foldDeadline bounds one fold's statements, as API statements are bounded
// (WORKTRACK_DB_STATEMENT_TIMEOUT's default).
const foldDeadline = 5 * time.Second

// foldCounts folds projects' pending count deltas into their rows every
// second until ctx ends (store.DB.FoldCounts): once a second, and again at
// once only while a fold took a whole batch of projects (more are pending).
// Reads are exact either way; folding keeps the deltas a read adds to about
// a second's changes of its project. Folding again and again while writes
// went on, as it once did, cost a create under load a tenth of its
// database time for deltas a read sums by one index probe anyway.
func foldCounts(ctx context.Context, db *store.DB, log *slog.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			// A fold is bounded like an API statement: it moves at most
			// FoldBatch projects' deltas, and gives up after the deadline.
			fctx, cancel := context.WithTimeout(ctx, foldDeadline)
			n, err := db.FoldCounts(fctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("folding task counts", "error", err.Error())
				}
				break
			}
			if n < store.FoldBatch {
				break
			}
		}
	}
}

// purgeEvents deletes events past retention (except those with a pending
// delivery), in batches, at start and then hourly, until ctx ends.
func purgeEvents(ctx context.Context, a *app.App, retention time.Duration, log *slog.Logger) {
	const batch = 1000
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		var total int64
		for ctx.Err() == nil {
			n, err := a.Events.Purge(ctx, retention, batch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("purging the event log", "error", err.Error())
				}
				break
			}
			total += n
			if n < batch {
				break
			}
		}
		if total > 0 {
			log.Info("purged events past retention", "count", total, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneAudit removes audit records past retention, in batches of short
// transactions (each bounded like every statement), at start and then
// hourly, until ctx ends. Each workspace's chain keeps the hash of the last
// record removed, so the records kept still verify (docs/audit.md).
func pruneAudit(ctx context.Context, a *app.App, retention time.Duration, log *slog.Logger) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		n, err := a.Audit.Prune(ctx, retention)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("pruning the audit log", "error", err.Error())
		case n > 0:
			log.Info("pruned audit records past retention", "count", n, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
