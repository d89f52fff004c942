package store_test

import (
	"context"
	"database/sql"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

func TestOpenRejectsUnknownURLs(t *testing.T) {
	for _, u := range []string{"mysql://root:secret@localhost/db", "worktrack.db", "sqlite:", "sqlite:a.db?mode=ro", "file:x.db"} {
		db, err := store.Open(context.Background(), u)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error leaks the password: %v", u, err)
		}
	}
}

func TestOpenUnreachablePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses at once.
	db, err := store.Open(ctx, "postgres://nobody@127.0.0.1:1/test?sslmode=disable&connect_timeout=5")
	if err == nil {
		db.Close()
		t.Fatal("Open of an unreachable PostgreSQL succeeded")
	}
}

func TestDialectAndPing(t *testing.T) {
	t.Parallel()
	want := map[string]string{"sqlite": store.DialectSQLite, "postgres": store.DialectPostgres}
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		if got := db.Dialect(); got != want[t.Name()[strings.LastIndex(t.Name(), "/")+1:]] {
			t.Fatalf("Dialect = %q", got)
		}
		if err := db.Ping(context.Background()); err != nil {
			t.Fatalf("Ping: %v", err)
		}
		if db.Gorm() == nil {
			t.Fatal("Gorm() is nil")
		}
	})
}

func TestPingAfterClose(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(context.Background()); err == nil {
		t.Fatal("Ping of a closed database succeeded")
	}
}

func TestStatementCounterCountsOnlyItsDatabase(t *testing.T) {
	t.Parallel()
	a, b := storetest.SQLite(t), storetest.SQLite(t)
	ca, cb := storetest.CountStatements(a), storetest.CountStatements(b)
	ca2 := storetest.CountStatements(a)
	newWorkspace(t, a)
	if _, err := a.Workspaces().CountWorkspaces(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ca.N() != 2 || ca2.N() != 2 || cb.N() != 0 {
		t.Fatalf("counted a=%d a'=%d b=%d; want 2, 2, 0: %q", ca.N(), ca2.N(), cb.N(), ca.Statements())
	}
	if s := ca.Statements(); !strings.HasPrefix(s[0], "INSERT INTO") || !strings.HasPrefix(s[1], "SELECT count(*)") {
		t.Fatalf("statements = %q", s)
	}
	ca.Reset()
	if ca.N() != 0 || ca2.N() != 2 {
		t.Fatalf("Reset: a=%d a'=%d", ca.N(), ca2.N())
	}
}

// A pool under load keeps every connection it opened: releasing them all at
// once leaves them idle rather than closing all but a few (which made a read
// load open about 70 PostgreSQL connections a second).
func TestPoolKeepsItsConnections(t *testing.T) {
	t.Parallel()
	const size = 6
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.PostgresURL(t), store.WithMaxOpenConns(size))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqlDB, err := db.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		var conns []*sql.Conn
		for range size {
			c, err := sqlDB.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			_ = c.Close()
		}
	}
	st := sqlDB.Stats()
	if st.OpenConnections != size || st.Idle != size || st.MaxIdleClosed != 0 {
		t.Fatalf("after three bursts of %d: %d open, %d idle, %d closed for want of idle slots; want %d, %d, 0",
			size, st.OpenConnections, st.Idle, st.MaxIdleClosed, size, size)
	}
}

// A pool opened WithAsyncCommit commits without waiting for the disk; the
// default pool, the API's, waits. Both still use the URL's schema.
func TestAsyncCommitIsThatPoolsAlone(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t)
	ctx := context.Background()
	for _, c := range []struct {
		opts []store.Option
		want string
	}{
		{nil, "on"},
		{[]store.Option{store.WithAsyncCommit()}, "off"},
	} {
		db, err := store.Open(ctx, u, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		var setting string
		var webhooks int
		if err := db.Gorm().Raw("SHOW synchronous_commit").Scan(&setting).Error; err != nil {
			t.Fatal(err)
		}
		if err := db.Gorm().Raw("SELECT count(*) FROM webhooks").Scan(&webhooks).Error; err != nil {
			t.Fatalf("the pool lost its schema: %v", err)
		}
		db.Close()
		if setting != c.want {
			t.Fatalf("synchronous_commit %q, want %q (options %d)", setting, c.want, len(c.opts))
		}
	}
}

// Each PostgreSQL connection keeps at most 128 prepared statements, unless
// the database URL says otherwise.
func TestStatementCacheCapacity(t *testing.T) {
	t.Parallel()
	u := storetest.PostgresURL(t)
	capacity := func(url string) int {
		t.Helper()
		ctx := context.Background()
		db, err := store.Open(ctx, url, store.WithMaxOpenConns(1))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		var n int
		onPooledConn(ctx, t, db, func(c *pgx.Conn) { n = c.Config().StatementCacheCapacity })
		return n
	}
	if n := capacity(u); n != 128 {
		t.Errorf("statement cache of %d, want 128", n)
	}
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	if n := capacity(u + sep + "statement_cache_capacity=7"); n != 7 {
		t.Errorf("with statement_cache_capacity=7 in the URL: %d, want 7", n)
	}
}

// A PostgreSQL that accepts connections and never answers (a server that
// drops packets after the handshake, say) makes Open fail, rather than hang:
// the default connect timeout ends the attempt.
func TestOpenGivesUpOnASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	_, err = store.Open(context.Background(), "postgres://u@"+ln.Addr().String()+"/db?sslmode=disable")
	if err == nil {
		t.Fatal("Open succeeded against a server that never answers")
	}
}
