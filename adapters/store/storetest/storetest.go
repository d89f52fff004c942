// Package storetest gives tests real databases: a migrated SQLite file or
// PostgreSQL database of each test's own, copied from one migrated once, and
// a statement counter.
//
// PostgreSQL comes from TEST_DATABASE_URL when it is set (it must name a
// dedicated test database, never the one named "postgres"); otherwise Main
// starts a postgres:16-alpine container with testcontainers-go on first use.
// When neither is available, PostgreSQL tests are skipped with the reason,
// unless WORKTRACK_REQUIRE_POSTGRES=1, which makes them fail.
//
// Every test package that uses Postgres, PostgresURL or ForEach calls Main
// from its TestMain:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
)

// SQLite returns a migrated SQLite database in a file of t.TempDir(), closed
// when t ends.
func SQLite(t testing.TB) *store.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, SQLiteURL(t))
	if err != nil {
		t.Fatalf("storetest: open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// SQLiteURL is SQLite for tests that open the store themselves (with
// options): the URL of a migrated SQLite file in t.TempDir().
func SQLiteURL(t testing.TB) string {
	t.Helper()
	return "sqlite:" + newSQLiteFile(t)
}

// ForEachURL is ForEach for tests that open the store themselves: fn gets
// the URL of a fresh, migrated database of each kind.
func ForEachURL(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, PostgresURL(t)) })
}

// ForEach runs fn as the subtests "sqlite" and "postgres", each on a fresh,
// migrated database: one suite, every implementation.
func ForEach(t *testing.T, fn func(t *testing.T, db *store.DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}
