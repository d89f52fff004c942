package store

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// Migrations are forward-only SQL files, one directory per dialect, with the
// same version numbers in both. A released file is never edited; a change is
// a new version.
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Migrate applies the pending migrations and returns their versions (empty,
// not nil, when nothing was pending). Several processes may migrate one
// database at once: on PostgreSQL they take turns on an advisory lock; on
// SQLite the loser of a race finds the work done and retries.
func (db *DB) Migrate(ctx context.Context) ([]int64, error) {
	attempts := 1
	if db.dialect == DialectSQLite {
		// Another process may have applied a migration between our reading
		// the version table and our BEGIN IMMEDIATE getting the write lock;
		// the retry then sees it applied.
		attempts = 3
	}
	var err error
	for range attempts {
		var applied []int64
		if applied, err = db.migrateOnce(ctx); err == nil {
			return applied, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, err
}

func (db *DB) migrateOnce(ctx context.Context) ([]int64, error) {
	fsys, err := fs.Sub(migrations, "migrations/"+db.dialect)
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	dialect := goose.DialectSQLite3
	if db.dialect == DialectPostgres {
		dialect = goose.DialectPostgres
		locker, err := db.migrationLocker(ctx)
		if err != nil {
			return nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	// The provider is not closed: Close would close db's pool.
	p, err := goose.NewProvider(dialect, db.sql, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("store: migrations: %w", err)
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// migrationLocker is a session (advisory) lock keyed by database and schema:
// processes migrating the same schema take turns, while different schemas of
// one database (one per test, say) do not wait for each other, as they would
// on goose's single default lock id. It is retried every second for up to ten
// minutes.
func (db *DB) migrationLocker(ctx context.Context) (lock.SessionLocker, error) {
	var where string
	if err := db.sql.QueryRowContext(ctx,
		`SELECT current_database() || '/' || coalesce(current_schema(), '')`).Scan(&where); err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("worktrack/goose/" + where))
	return lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(h.Sum64())),
		lock.WithLockTimeout(1, 600),
	)
}

// MigrationsDigest identifies the migrations of dialect this binary carries:
// a hex SHA-256 of their names and contents. Test tooling keys databases it
// migrated once and copies by it, so that a changed migration is never
// served from a stale copy.
func MigrationsDigest(dialect string) (string, error) {
	dir := "migrations/" + dialect
	entries, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return "", fmt.Errorf("store: migrations of %q: %w", dialect, err)
	}
	h := sha256.New()
	for _, e := range entries { // fs.ReadDir sorts by name
		b, err := fs.ReadFile(migrations, dir+"/"+e.Name())
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", e.Name(), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
