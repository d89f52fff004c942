// Package store persists the domain with GORM, on PostgreSQL (the path for
// scale: any number of server processes on one database) or on an embedded
// SQLite file (the single-node default). Both dialects share the repositories;
// only the schema files and the connection setup differ.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/glebarez/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	noopmetric "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/worktrack/worktrack/adapters/seats"
	"github.com/worktrack/worktrack/adapters/secretbox"
)

// The dialects Open understands, as reported by DB.Dialect.
const (
	DialectPostgres = "postgres"
	DialectSQLite   = "sqlite"
)

// DB is an open database with its dialect. It is the Transactor, and it makes
// the repositories (Workspaces, Users, APIKeys, Projects).
type DB struct {
	gorm    *gorm.DB
	sql     *sql.DB
	dialect string
	// rawHook sees, and may refuse, the statements that bypass GORM
	// (ObserveRawReads, InterceptRawStatements).
	rawHook atomic.Pointer[func(ctx context.Context, sql string) error]
	// writer serialises write transactions of this process on a SQLite
	// file: SQLite has one writer at a time anyway, and waiting here is
	// cheaper and fairer than every transaction spinning in SQLite's busy
	// handler. It is one seat, queued for by workspace and served in turn,
	// so that one workspace's queue of bulk writes does not stand before
	// another's single write. Other processes on the same file are held
	// off by the busy timeout. Nil for PostgreSQL.
	writer *seats.Seats
	// onSeatWait observes each seat grant's wait (ObserveSeatWaits).
	onSeatWait atomic.Pointer[func(time.Duration)]
	// secrets seals the secrets the store keeps; nil keeps them as they are.
	secrets *secretbox.Keyring
	// url is what Open was given; the PostgreSQL delivery watcher opens its
	// own LISTEN connection with it.
	url string
	// budget bounds the statements of API requests (SetBudget); nil
	// leaves them unbounded.
	budget atomic.Pointer[budget]
	// deliveriesAnnouncer tells other processes' dispatchers of deliveries
	// this process committed (PostgreSQL only; see announcer).
	deliveriesAnnouncer announcer
	// origin is the payload of this handle's delivery notifications, so
	// that its process's watcher can tell them from other processes': the
	// process's dispatcher is woken in process by its commits already, and
	// a second wake-up through the database cost it a claim statement.
	// Handles of one process share it (WithOrigin).
	origin string
}

// The lifetimes of pooled connections (see Open).
const (
	connMaxIdleTime = 5 * time.Minute
	connMaxLifetime = 30 * time.Minute
)

// statementCacheCapacity is how many prepared statements each PostgreSQL
// connection keeps (pgx's statement cache, least recently used dropped
// first). pgx's default, 512, sizes each connection's cache map for 512
// entries up front: about 60 kB a connection, a third of the whole live
// heap of a server under REST load, which the garbage collector's heap goal
// then doubles. The API's fixed statements number a few dozen; the rest
// are IN lists of varying length, for which 128 still leaves room. A
// database URL's own statement_cache_capacity parameter wins.
const statementCacheCapacity = 128

// What a PostgreSQL connection does when the context of its statement ends
// mid-statement (a client that disconnected, a shutdown). pgx's default
// closes the connection at once, so every cancelled request cost the pool a
// connection and the server a new session (make load counted dozens per
// run). Instead the statement gets cancelRequestDelay to finish, which the
// short statements of the API do, and the connection stays in the pool;
// one still running then gets a cancel request and ends with
// query_canceled, and the connection stays too. Only a server that answers
// neither within cancelDeadlineDelay loses the connection.
const (
	cancelRequestDelay  = 100 * time.Millisecond
	cancelDeadlineDelay = 2 * time.Second
)

// Option adjusts how Open connects.
type Option func(*options)

type options struct {
	logger       logger.Interface
	maxOpenConns int
	asyncCommit  bool
	origin       string
	secrets      *secretbox.Keyring
	tracer       trace.TracerProvider
}

// WithLogger logs slow statements (over 200ms) and failures to l. Statement
// parameters are never logged: they include secret hashes and user data.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		o.logger = logger.NewSlogLogger(l, logger.Config{
			SlowThreshold:             200 * time.Millisecond,
			LogLevel:                  logger.Warn,
			IgnoreRecordNotFoundError: true,
			ParameterizedQueries:      true,
		})
	}
}

// WithMaxOpenConns caps the connection pool (default 20 for PostgreSQL, 16
// for a SQLite file; always 1 for SQLite in memory).
func WithMaxOpenConns(n int) Option {
	return func(o *options) { o.maxOpenConns = n }
}

// WithAsyncCommit makes the commits of this pool return before PostgreSQL
// has flushed them to disk (synchronous_commit=off; SQLite ignores it). A
// database crash may then lose the last fraction of a second of its
// commits, never corrupt anything. It is for a pool whose writes are safe
// to lose that way: the webhook dispatcher's leases and outcomes, whose
// loss only means an attempt made again, which at-least-once delivery
// allows. Its commits then stop competing with the API's for the disk.
func WithAsyncCommit() Option {
	return func(o *options) { o.asyncCommit = true }
}

// WithSecrets seals the secrets the store keeps (webhook signing secrets,
// idempotency replays) under the keyring, and opens them with it
// (docs/operations.md#secrets-at-rest). Without it, or with an empty ring,
// they are stored as they are.
func WithSecrets(k *secretbox.Keyring) Option {
	return func(o *options) { o.secrets = k }
}

// WithTracing traces every statement run under a traced context as a
// client span of tp: its text with placeholders, never its values
// (docs/operations.md#traces). A statement whose context carries no
// recording span starts none. Without it, or with nil, nothing is
// installed.
func WithTracing(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// WithOrigin makes the handle tag its delivery notifications with origin,
// and its WatchDeliveries pass over notifications so tagged: give every
// handle of one process the Origin of the first, so that none of that
// process's commits wakes its dispatcher through the database (the core
// wakes it in process). By default each handle has a random origin of its
// own, as another process would.
func WithOrigin(origin string) Option {
	return func(o *options) { o.origin = origin }
}

// Origin is the tag of this handle's delivery notifications (WithOrigin).
func (db *DB) Origin() string { return db.origin }

// Open connects to the database named by url and checks that it answers:
// postgres://… or postgresql://… for PostgreSQL, sqlite:PATH or
// sqlite::memory: for SQLite. It does not migrate; call Migrate.
func Open(ctx context.Context, url string, opts ...Option) (*DB, error) {
	o := options{logger: logger.Discard}
	for _, opt := range opts {
		opt(&o)
	}
	var (
		dialector gorm.Dialector
		dialect   string
		memory    bool
		err       error
	)
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		dialect = DialectPostgres
		if dialector, err = postgresDialector(url, &o); err != nil {
			return nil, err
		}
	case strings.HasPrefix(url, "sqlite:"):
		dialect = DialectSQLite
		if dialector, memory, err = sqliteDialector(url, &o); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("store: unsupported database URL scheme %q (want postgres://…, postgresql://…, sqlite:PATH or sqlite::memory:)", scheme(url))
	}

	g, err := gorm.Open(dialector, &gorm.Config{
		Logger:         o.logger,
		TranslateError: true,
		// Every write is a single statement or runs inside InTx; GORM's
		// implicit per-statement transaction would only add round trips.
		SkipDefaultTransaction: true,
		DisableAutomaticPing:   true,
		NowFunc:                func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	if err := registerUnavailable(g); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	configurePool(sqlDB, o.maxOpenConns, memory)
	db := &DB{gorm: g, sql: sqlDB, dialect: dialect, url: url, secrets: o.secrets, origin: o.origin}
	if db.origin == "" {
		db.origin = rand.Text()
	}
	if err := registerBudget(db); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dialect, err)
	}
	db.deliveriesAnnouncer.gap = announceGap
	db.deliveriesAnnouncer.send = func(ctx context.Context) error {
		return db.gorm.WithContext(ctx).Exec("SELECT pg_notify("+channelExpr+", ?)", db.origin).Error
	}
	if dialect == DialectSQLite && !memory {
		db.writer = seats.New(seats.Limits{Capacity: 1, Share: 1, Queue: math.MaxInt32})
	}
	if err := db.Ping(ctx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("store: connect to %s: %w", dialect, err)
	}
	return db, nil
}

// ConnectTimeout is how long connecting to PostgreSQL may take when the URL
// sets no connect_timeout: a server that drops packets is reported
// unavailable after it, rather than holding requests for minutes.
const ConnectTimeout = 5 * time.Second

// postgresDialector opens PostgreSQL through pgx's database/sql driver,
// with the statement cache and cancellation this store relies on; a pool of
// 20 unless o says otherwise.
func postgresDialector(url string, o *options) (gorm.Dialector, error) {
	cfg, err := postgresConfig(url, o)
	if err != nil {
		return nil, err
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{
			Conn: c, CancelRequestDelay: cancelRequestDelay, DeadlineDelay: cancelDeadlineDelay,
		}
	}
	if o.maxOpenConns == 0 {
		o.maxOpenConns = 20
	}
	return postgres.New(postgres.Config{Conn: stdlib.OpenDB(*cfg)}), nil
}

// postgresConfig is pgx's configuration of url, with this store's defaults
// where the URL sets none: ConnectTimeout, statementCacheCapacity.
func postgresConfig(url string, o *options) (*pgx.ConnConfig, error) {
	dsn := url
	if o.asyncCommit {
		var err error
		if dsn, err = withRuntimeParam(url, "synchronous_commit", "off"); err != nil {
			return nil, err
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open postgres: %w", err)
	}
	if !hasParam(dsn, "statement_cache_capacity") {
		cfg.StatementCacheCapacity = statementCacheCapacity
	}
	if !hasParam(dsn, "connect_timeout") {
		cfg.ConnectTimeout = ConnectTimeout
	}
	if o.tracer != nil {
		cfg.Tracer = recordingOnly{otelpgx.NewTracer(otelpgx.WithTracerProvider(o.tracer),
			otelpgx.WithMeterProvider(noopmetric.NewMeterProvider()),
			otelpgx.WithDisableConnectionDetailsInAttributes())}
	}
	return cfg, nil
}

// sqliteDialector opens the SQLite file (or memory database) of url; a pool
// of 16 unless o says otherwise, of one for a memory database, every
// connection to which is a database of its own.
func sqliteDialector(url string, o *options) (gorm.Dialector, bool, error) {
	dsn, memory, err := sqliteDSN(strings.TrimPrefix(url, "sqlite:"))
	if err != nil {
		return nil, false, err
	}
	if memory {
		o.maxOpenConns = 1
	} else if o.maxOpenConns == 0 {
		o.maxOpenConns = 16
	}
	if err := registerLiveFunc(); err != nil {
		return nil, false, fmt.Errorf("store: open sqlite: %w", err)
	}
	if o.tracer == nil {
		return sqlite.Open(dsn), memory, nil
	}
	conn, err := tracedSQLite(dsn, o.tracer)
	if err != nil {
		return nil, false, fmt.Errorf("store: open sqlite: %w", err)
	}
	return &sqlite.Dialector{DSN: dsn, Conn: conn}, memory, nil
}

// configurePool sizes database/sql's pool.
func configurePool(sqlDB *sql.DB, maxOpen int, memory bool) {
	sqlDB.SetMaxOpenConns(maxOpen)
	if memory {
		// The database lives exactly as long as its one connection.
		sqlDB.SetMaxIdleConns(1)
		sqlDB.SetConnMaxLifetime(0)
		sqlDB.SetConnMaxIdleTime(0)
		return
	}
	// Keep every connection the pool may open: with fewer idle slots than
	// open connections, each burst beyond them closes connections only to
	// open new ones moments later (measured under make load: about 70 new
	// PostgreSQL connections per second, each a fork on the server, a
	// TLS-less handshake and a fresh statement cache). Idle connections
	// still go after connMaxIdleTime, and every one is replaced after
	// connMaxLifetime so that server-side memory and a failover's stale
	// routes do not live forever; the jitter database/sql lacks is not
	// needed at 20 connections.
	sqlDB.SetMaxIdleConns(maxOpen)
	sqlDB.SetConnMaxIdleTime(connMaxIdleTime)
	sqlDB.SetConnMaxLifetime(connMaxLifetime)
}

// sqliteDSN builds the driver DSN for a SQLite path. WAL lets readers run
// beside the one writer; the busy timeout makes a writer wait for another
// (in this process or another) instead of failing with SQLITE_BUSY; BEGIN
// IMMEDIATE takes the write lock when a transaction starts, so a transaction
// never fails half-way when it upgrades from reading to writing (a case the
// busy handler cannot retry). busy_timeout comes first so that switching a new
// file to WAL also waits for other connections.
func sqliteDSN(path string) (dsn string, memory bool, err error) {
	if path == "" {
		return "", false, errors.New("store: the sqlite URL names no file (want sqlite:PATH, or sqlite::memory: for a database in memory)")
	}
	if strings.Contains(path, "?") {
		return "", false, fmt.Errorf("store: sqlite path %q must not contain '?'", path)
	}
	memory = path == ":memory:"
	if !memory {
		// The driver reports a missing directory as "out of memory (14)".
		dir := filepath.Dir(path)
		if st, err := os.Stat(dir); err != nil {
			return "", false, fmt.Errorf("store: sqlite: the directory %q of %q does not exist or cannot be read; create it first", dir, path)
		} else if !st.IsDir() {
			return "", false, fmt.Errorf("store: sqlite: %q is not a directory", dir)
		}
	}
	q := []string{
		"_pragma=busy_timeout(10000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(NORMAL)",
		"_txlock=immediate",
	}
	return path + "?" + strings.Join(q, "&"), memory, nil
}

// scheme names the part of url before its first colon, for error messages
// that must not echo credentials.
func scheme(url string) string {
	s, _, ok := strings.Cut(url, ":")
	if !ok || s == "" {
		return "(none)"
	}
	return s
}

// Dialect is DialectPostgres or DialectSQLite.
func (db *DB) Dialect() string { return db.dialect }

// Gorm is the underlying handle, for adapters that need a query the
// repositories do not offer. Prefer the repositories.
func (db *DB) Gorm() *gorm.DB { return db.gorm }

// Ping reports whether the database answers (GET /readyz).
func (db *DB) Ping(ctx context.Context) error {
	return db.sql.PingContext(ctx)
}

// Close closes every connection. For SQLite in memory, it discards the data.
func (db *DB) Close() error {
	return db.sql.Close()
}

// withRuntimeParam adds a run-time parameter to a postgres:// URL; pgx sends
// the query parameters it does not know itself to the server at connect.
// hasParam reports whether the database URL raw sets the query parameter
// name.
func hasParam(raw, name string) bool {
	u, err := neturl.Parse(raw)
	return err == nil && u.Query().Has(name)
}

func withRuntimeParam(raw, name, value string) (string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("store: database URL: %w", err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
