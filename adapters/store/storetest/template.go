package storetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/worktrack/worktrack/adapters/store"
)

// Every test gets a database of its own, but none of them is migrated from
// scratch: the migrations run once per test binary (SQLite) or once per set
// of migrations on the server (PostgreSQL), and each test gets a copy. A copy
// costs a few milliseconds on SQLite and about a tenth of a second on
// PostgreSQL, against half a second or more for the ten migrations
// (docs/testing.md#test-databases).

// sqliteTemplate is a migrated SQLite database file, read into memory once.
var sqliteTemplate struct {
	once  sync.Once
	bytes []byte
	err   error
}

// newSQLiteFile writes a copy of the migrated SQLite database into
// t.TempDir() and returns its path.
func newSQLiteFile(t testing.TB) string {
	t.Helper()
	sqliteTemplate.once.Do(func() { sqliteTemplate.bytes, sqliteTemplate.err = migrateSQLiteTemplate() })
	if sqliteTemplate.err != nil {
		t.Fatalf("storetest: migrate sqlite: %v", sqliteTemplate.err)
	}
	path := filepath.Join(t.TempDir(), "worktrack.db")
	if err := os.WriteFile(path, sqliteTemplate.bytes, 0o600); err != nil {
		t.Fatalf("storetest: copy sqlite: %v", err)
	}
	return path
}

// migrateSQLiteTemplate migrates a new SQLite file and returns its bytes,
// with every change checkpointed out of the write-ahead log into the file.
func migrateSQLiteTemplate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "worktrack-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, "sqlite:"+path)
	if err != nil {
		return nil, err
	}
	_, err = db.Migrate(ctx)
	if err == nil {
		err = db.Gorm().WithContext(ctx).Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// pgTemplate is the migrated PostgreSQL database every test database is
// created from, found or made once per test binary.
var pgTemplate struct {
	once sync.Once
	name string // "" when the role may not create databases: schemas then
	err  error
}

// drops are the test databases being dropped in the background; Main waits
// for them.
var drops sync.WaitGroup

// templatePrefix starts the name of every template database; what follows is
// the start of the migrations' digest, so a changed migration makes a new
// template and the test server keeps at most one per set of migrations.
const templatePrefix = "worktrack_template_"

// testDBPrefix starts the name of every database a test gets.
const testDBPrefix = "worktrack_t_"

// newDatabase returns the URL of a migrated PostgreSQL database of t's own,
// dropped when t ends: a copy of the template database, or, when the role
// may not create databases, a schema of the test database migrated for t.
func newDatabase(t testing.TB) string {
	t.Helper()
	admin := requirePostgres(t)
	pgTemplate.once.Do(func() { pgTemplate.name, pgTemplate.err = findTemplate(admin) })
	if pgTemplate.err != nil {
		t.Fatalf("storetest: template database: %v", pgTemplate.err)
	}
	if pgTemplate.name == "" {
		return newMigratedSchema(t, admin)
	}
	name := testDBPrefix + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := admin.Gorm().WithContext(ctx).Exec(
		"CREATE DATABASE " + name + " TEMPLATE " + pgTemplate.name).Error; err != nil {
		t.Fatalf("storetest: create database from %s: %v", pgTemplate.name, err)
	}
	t.Cleanup(func() {
		drops.Add(1)
		go func() {
			defer drops.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// FORCE: a connection a test's process left open must not keep
			// the database.
			if err := admin.Gorm().WithContext(ctx).Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)").Error; err != nil {
				fmt.Fprintf(os.Stderr, "storetest: drop database %s: %v\n", name, err)
			}
		}()
	})
	u, err := url.Parse(server.baseURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// findTemplate returns the name of the migrated template database for this
// binary's migrations, making it if the server has none yet. Test binaries
// running at once take turns on an advisory lock, so one migrates and the
// others find its work. It returns "" when the role may not create
// databases.
func findTemplate(admin *store.DB) (string, error) {
	digest, err := store.MigrationsDigest(store.DialectPostgres)
	if err != nil {
		return "", err
	}
	name := templatePrefix + digest[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sqlDB, err := admin.Gorm().DB()
	if err != nil {
		return "", err
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext($1))", templatePrefix); err != nil {
		return "", err
	}
	defer func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", templatePrefix)
	}()
	var found int
	err = conn.QueryRowContext(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", name).Scan(&found)
	if err == nil {
		return name, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	made, err := buildTemplate(ctx, conn, name)
	if err != nil || !made {
		return "", err
	}
	// Templates of other migrations (another branch's, an older commit's)
	// would otherwise pile up; one in use by a running binary stays.
	var stale []string
	if err := admin.Gorm().WithContext(ctx).Raw("SELECT datname FROM pg_database WHERE datname LIKE ? AND datname <> ?",
		templatePrefix+"%", name).Scan(&stale).Error; err != nil {
		return "", err
	}
	for _, s := range stale {
		_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+s)
	}
	return name, nil
}

// buildTemplate migrates a new database and names it name; false, and no
// error, when the role may not create databases. The database is made under
// another name and renamed when complete, so a binary that died while
// migrating leaves no half-made template. conn holds the templates' lock.
func buildTemplate(ctx context.Context, conn *sql.Conn, name string) (bool, error) {
	building := name + "_new"
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return false, err
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
			return false, nil
		}
		return false, err
	}
	u, err := url.Parse(server.baseURL)
	if err != nil {
		return false, err
	}
	u.Path = "/" + building
	db, err := store.Open(ctx, u.String())
	if err != nil {
		return false, err
	}
	_, err = db.Migrate(ctx)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", building, err)
	}
	if _, err := conn.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return false, err
	}
	return true, nil
}

// newMigratedSchema is newDatabase for a role that may not create
// databases: a schema of the test database, migrated for t and dropped
// when t ends (search_path set in the URL; pgx sends unknown URL parameters
// as run-time parameters).
func newMigratedSchema(t testing.TB, admin *store.DB) string {
	t.Helper()
	schema := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := admin.Gorm().WithContext(ctx).Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatalf("storetest: create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := admin.Gorm().WithContext(ctx).Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
			t.Errorf("storetest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(server.baseURL)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("storetest: open postgres schema: %v", err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("storetest: migrate postgres: %v", err)
	}
	return u.String()
}
