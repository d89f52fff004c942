package main

import (
	"fmt"
	"log/slog"
	"net/mail"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/secretbox"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

// Config is the whole configuration; it comes from the environment only
// (docs/api.md#running-it, README.md#configuration).
type Config struct {
	Addr        string
	DatabaseURL string
	RedisURL    string
	RateLimit   int
	RateWindow  time.Duration
	// UserRateLimit and WorkspaceRateLimit bound the requests of all of a
	// user's, or a workspace's, keys together (0: RateLimit and 10 ×
	// RateLimit).
	UserRateLimit      int
	WorkspaceRateLimit int
	AuthFailureLimit   int
	// TrustedProxies are the proxies whose X-Forwarded-For names the
	// client (addresses or CIDRs; none by default).
	TrustedProxies []string
	// CORSOrigins are the origins whose pages may call the APIs ("*"
	// alone for every origin; none by default).
	CORSOrigins         []string
	TLSCert, TLSKey     string
	WebhookTimeout      time.Duration
	WebhookBackoffBase  time.Duration
	WebhookBackoffMax   time.Duration
	WebhookRetryWindow  time.Duration
	WebhookAllowPrivate bool
	// WebhookDisableAfter: a webhook whose attempts have all failed this
	// long (at least 10 of them) is disabled.
	WebhookDisableAfter time.Duration
	BootstrapEmail      string
	// GraphQLComplexity and GraphQLDepth refuse GraphQL operations
	// that are too costly or too deeply nested, before they run.
	GraphQLComplexity int
	GraphQLDepth      int
	// PprofAddr, when set, serves net/http/pprof on its own listener (a
	// loopback address: profiles expose the process's internals). Never on
	// the API's listener.
	PprofAddr string
	// ShutdownTimeout bounds the whole shutdown after SIGTERM or SIGINT:
	// requests in flight, then webhook attempts in flight.
	ShutdownTimeout time.Duration
	// LogFormat is "text", "json", or "" (text on a terminal, else JSON).
	LogFormat string
	LogLevel  slog.Level
	// MetricsToken, when set, is the bearer token GET /metrics requires.
	MetricsToken string
	// DBStatementTimeout stops an API request's statement that runs
	// longer; DBSeats is how much database work runs at once (0: four
	// seats a core, at least 8, at most the pool); DBWorkspaceShare is how
	// many seats one workspace holds at once (0: a quarter of the pool).
	DBStatementTimeout time.Duration
	DBSeats            int
	DBWorkspaceShare   int
	// EventRetention is how long the event log keeps an event (longer
	// while a delivery of it is pending).
	EventRetention time.Duration
	// AuditRetention is how long the audit log keeps a record.
	AuditRetention time.Duration
	// Secrets seals the webhook signing secrets the store keeps; empty
	// when WORKTRACK_SECRETS_KEY is unset (they are then stored as they are).
	Secrets *secretbox.Keyring
}

// configHelp is the environment `serve --help` lists: every variable
// LoadConfig reads (a test keeps the two in step).
const configHelp = `Configuration comes from the environment only:

  WORKTRACK_ADDR                    listen address (default 127.0.0.1:8080)
  DATABASE_URL                      postgres://… or sqlite:PATH, sqlite::memory: (default sqlite:worktrack.db)
  REDIS_URL                         redis://… shares rate-limit counters between replicas (default: in process)
  WORKTRACK_RATE_LIMIT              requests per API key per window (default 600)
  WORKTRACK_RATE_WINDOW             the rate-limit window (default 60s)
  WORKTRACK_USER_RATE_LIMIT         requests per user per window, all its keys together (default: WORKTRACK_RATE_LIMIT)
  WORKTRACK_WORKSPACE_RATE_LIMIT    requests per workspace per window, all its keys together (default: 10 × WORKTRACK_RATE_LIMIT)
  WORKTRACK_AUTH_FAILURE_LIMIT      failed authentications per client address per 60s before 429 (default 20)
  WORKTRACK_TRUSTED_PROXIES         proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-For names the client (default none)
  WORKTRACK_CORS_ORIGINS            origins whose pages may call the APIs from a browser: exact origins, comma-separated
                                    (http://localhost:5173,https://board.example.com), or * for any (default none)
  WORKTRACK_TLS_CERT, _TLS_KEY      serve HTTPS with this certificate and key (both or neither)
  WORKTRACK_WEBHOOK_TIMEOUT         per delivery attempt (default 5s)
  WORKTRACK_WEBHOOK_BACKOFF_BASE    first retry delay (default 10s)
  WORKTRACK_WEBHOOK_BACKOFF_MAX     cap on one retry delay (default 2h)
  WORKTRACK_WEBHOOK_RETRY_WINDOW    no attempt starts later than this after the event (default 24h)
  WORKTRACK_WEBHOOK_ALLOW_PRIVATE   allow webhook URLs on loopback/private addresses (default false)
  WORKTRACK_WEBHOOK_DISABLE_AFTER   disable a webhook whose attempts (10 at least) have all failed this long
                                    (default 72h; not shorter than the retry window)
  WORKTRACK_BOOTSTRAP_EMAIL         email of the first admin (default admin@example.com)
  WORKTRACK_GRAPHQL_MAX_COMPLEXITY  GraphQL operations costlier than this are refused, and no more than
                                    this much complexity executes at once (default 25000)
  WORKTRACK_GRAPHQL_MAX_DEPTH       GraphQL operations nested deeper are refused (default 12)
  WORKTRACK_DB_STATEMENT_TIMEOUT    an API request's database statement (or the webhook dispatcher's claim,
                                    on PostgreSQL) running longer is stopped, and the request answered 503
                                    (default 5s)
  WORKTRACK_DB_SEATS                database seats: how much database work runs at once, each statement
                                    taking seats by its cost; more waits, workspaces served in turn
                                    (default: four a core, at least 8, at most the pool)
  WORKTRACK_DB_WORKSPACE_SHARE      database seats one workspace holds at once; more wait, then 429
                                    (default: a quarter of the pool, 5 on PostgreSQL, 4 on SQLite)
  WORKTRACK_SHUTDOWN_TIMEOUT        after SIGTERM/SIGINT, time for work in flight to finish (default 30s)
  WORKTRACK_LOG_FORMAT              text or json (default: text on a terminal, else json)
  WORKTRACK_LOG_LEVEL               debug, info, warn or error (default info)
  WORKTRACK_EVENT_RETENTION         how long the event log keeps an event (default 720h; not shorter than the retry window)
  WORKTRACK_AUDIT_RETENTION         how long the audit log keeps a record (default 4320h, 180 days)
  WORKTRACK_METRICS_TOKEN           GET /metrics then needs "Authorization: Bearer <token>" (default: open)
  WORKTRACK_PPROF_ADDR              serve Go's pprof profiles on this address, e.g. 127.0.0.1:6060 (default off)
  WORKTRACK_SECRETS_KEY             base64 of 32 random bytes (openssl rand -base64 32), comma-separated, newest
                                    first: stored webhook secrets are encrypted with it (default: stored in plaintext)
  OTEL_EXPORTER_OTLP_ENDPOINT       send traces to this OpenTelemetry collector (OTLP/HTTP, or gRPC with
                                    OTEL_EXPORTER_OTLP_PROTOCOL=grpc); the other OTEL_* variables as the
                                    specification says (default: tracing off; docs/operations.md#traces)

A bad value stops serve with one line naming the variable.`

// DefaultAuditRetention is WORKTRACK_AUDIT_RETENTION's default: 180 days.
const DefaultAuditRetention = 180 * 24 * time.Hour

// configError names the variable at fault in one line.
type configError struct{ name, problem string }

func (e *configError) Error() string { return e.name + ": " + e.problem }

type env struct {
	lookup func(string) (string, bool)
	err    error
}

func (e *env) str(name, def string) string {
	if v, ok := e.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

func (e *env) fail(name, format string, args ...any) {
	if e.err == nil {
		e.err = &configError{name: name, problem: fmt.Sprintf(format, args...)}
	}
}

func (e *env) duration(name string, def time.Duration) time.Duration {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.fail(name, "%q is not a positive duration (examples: 500ms, 10s, 2h)", v)
		return def
	}
	return d
}

func (e *env) positiveInt(name string, def int) int {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.fail(name, "%q is not a positive integer", v)
		return def
	}
	return n
}

func (e *env) boolean(name string, def bool) bool {
	v := e.str(name, "")
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		e.fail(name, "%q is not a boolean (true or false)", v)
		return def
	}
	return b
}

// prefixes reads a comma-separated list of IP addresses and CIDRs; unset is
// none.
func (e *env) prefixes(name string) []string {
	var out []string
	for _, p := range strings.Split(e.str(name, ""), ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				e.fail(name, "%q is not an IP address or CIDR (examples: 10.0.0.5, 10.0.0.0/8, fd00::/8)", p)
				return nil
			}
		}
		out = append(out, p)
	}
	return out
}

// origins reads the origins whose pages may call the APIs; unset is none.
func (e *env) origins(name string) []string {
	out, err := httpedge.ParseCORSOrigins(e.str(name, ""))
	if err != nil {
		e.fail(name, "%v", err)
	}
	return out
}

// keyring reads the keys that seal stored secrets; unset is none.
func (e *env) keyring(name string) *secretbox.Keyring {
	k, err := secretbox.Parse(e.str(name, ""))
	if err != nil {
		e.fail(name, "%v", err)
		return &secretbox.Keyring{}
	}
	return k
}

// oneOf reads a value that must be one of allowed (any case); unset is def.
func (e *env) oneOf(name, def string, allowed ...string) string {
	v := strings.ToLower(e.str(name, def))
	if v == def || slices.Contains(allowed, v) {
		return v
	}
	e.fail(name, "%q is not one of %s", v, strings.Join(allowed, ", "))
	return def
}

// level reads a log level: debug, info (the default), warn or error.
func (e *env) level(name string) slog.Level {
	switch v := e.oneOf(name, "info", "debug", "info", "warn", "error"); v {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// LoadConfig reads and validates the configuration. The first problem found
// is returned as one line naming its variable; nothing starts half-configured.
func LoadConfig(lookup func(string) (string, bool)) (Config, error) {
	e := &env{lookup: lookup}
	c := Config{
		Addr:                e.str("WORKTRACK_ADDR", "127.0.0.1:8080"),
		DatabaseURL:         e.str("DATABASE_URL", "sqlite:worktrack.db"),
		RedisURL:            e.str("REDIS_URL", ""),
		RateLimit:           e.positiveInt("WORKTRACK_RATE_LIMIT", 600),
		RateWindow:          e.duration("WORKTRACK_RATE_WINDOW", time.Minute),
		UserRateLimit:       e.positiveInt("WORKTRACK_USER_RATE_LIMIT", 0),
		WorkspaceRateLimit:  e.positiveInt("WORKTRACK_WORKSPACE_RATE_LIMIT", 0),
		AuthFailureLimit:    e.positiveInt("WORKTRACK_AUTH_FAILURE_LIMIT", 20),
		TrustedProxies:      e.prefixes("WORKTRACK_TRUSTED_PROXIES"),
		CORSOrigins:         e.origins("WORKTRACK_CORS_ORIGINS"),
		TLSCert:             e.str("WORKTRACK_TLS_CERT", ""),
		TLSKey:              e.str("WORKTRACK_TLS_KEY", ""),
		WebhookTimeout:      e.duration("WORKTRACK_WEBHOOK_TIMEOUT", 5*time.Second),
		WebhookBackoffBase:  e.duration("WORKTRACK_WEBHOOK_BACKOFF_BASE", 10*time.Second),
		WebhookBackoffMax:   e.duration("WORKTRACK_WEBHOOK_BACKOFF_MAX", 2*time.Hour),
		WebhookRetryWindow:  e.duration("WORKTRACK_WEBHOOK_RETRY_WINDOW", 24*time.Hour),
		WebhookAllowPrivate: e.boolean("WORKTRACK_WEBHOOK_ALLOW_PRIVATE", false),
		WebhookDisableAfter: e.duration("WORKTRACK_WEBHOOK_DISABLE_AFTER", domain.DefaultDisableAfter),
		BootstrapEmail:      e.str("WORKTRACK_BOOTSTRAP_EMAIL", "admin@example.com"),
		GraphQLComplexity:   e.positiveInt("WORKTRACK_GRAPHQL_MAX_COMPLEXITY", server.DefaultMaxComplexity),
		GraphQLDepth:        e.positiveInt("WORKTRACK_GRAPHQL_MAX_DEPTH", server.DefaultMaxDepth),
		PprofAddr:           e.str("WORKTRACK_PPROF_ADDR", ""),
		ShutdownTimeout:     e.duration("WORKTRACK_SHUTDOWN_TIMEOUT", 30*time.Second),
		LogFormat:           e.oneOf("WORKTRACK_LOG_FORMAT", "", logText, logJSON),
		LogLevel:            e.level("WORKTRACK_LOG_LEVEL"),
		MetricsToken:        e.str("WORKTRACK_METRICS_TOKEN", ""),
		DBStatementTimeout:  e.duration("WORKTRACK_DB_STATEMENT_TIMEOUT", 5*time.Second),
		DBSeats:             e.positiveInt("WORKTRACK_DB_SEATS", 0),
		DBWorkspaceShare:    e.positiveInt("WORKTRACK_DB_WORKSPACE_SHARE", 0),
		EventRetention:      e.duration("WORKTRACK_EVENT_RETENTION", 720*time.Hour),
		AuditRetention:      e.duration("WORKTRACK_AUDIT_RETENTION", DefaultAuditRetention),
		Secrets:             e.keyring(secretbox.EnvKey),
	}
	if e.err != nil {
		return c, e.err
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		name := "WORKTRACK_TLS_KEY"
		if c.TLSCert == "" {
			name = "WORKTRACK_TLS_CERT"
		}
		return c, &configError{name, "must be set together with the other half of the TLS pair (WORKTRACK_TLS_CERT, WORKTRACK_TLS_KEY)"}
	}
	if c.EventRetention < c.WebhookRetryWindow {
		return c, &configError{"WORKTRACK_EVENT_RETENTION", "must not be shorter than WORKTRACK_WEBHOOK_RETRY_WINDOW (an event must outlive its deliveries' retries)"}
	}
	if c.WebhookDisableAfter < c.WebhookRetryWindow {
		return c, &configError{"WORKTRACK_WEBHOOK_DISABLE_AFTER", "must not be shorter than WORKTRACK_WEBHOOK_RETRY_WINDOW (a webhook is disabled only after a whole retry window of failures)"}
	}
	if c.WebhookBackoffBase > c.WebhookBackoffMax {
		return c, &configError{"WORKTRACK_WEBHOOK_BACKOFF_BASE", "must not exceed WORKTRACK_WEBHOOK_BACKOFF_MAX"}
	}
	if a, err := mail.ParseAddress(c.BootstrapEmail); err != nil || a.Address != c.BootstrapEmail {
		return c, &configError{"WORKTRACK_BOOTSTRAP_EMAIL", fmt.Sprintf("%q is not an email address", c.BootstrapEmail)}
	}
	if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !strings.HasPrefix(c.DatabaseURL, "postgres://") && !strings.HasPrefix(c.DatabaseURL, "postgresql://") {
		return c, &configError{"DATABASE_URL", "must start with postgres://, postgresql:// or sqlite:"}
	}
	return c, nil
}

// loadConfigOrExit is LoadConfig on the process environment.
func loadConfig() (Config, error) { return LoadConfig(os.LookupEnv) }
