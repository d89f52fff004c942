package store_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		// storetest migrated db already.
		applied, err := db.Migrate(context.Background())
		if err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		if applied == nil || len(applied) != 0 {
			t.Fatalf("second Migrate applied %#v, want an empty, non-nil list", applied)
		}
	})
}

func TestMigrateFresh(t *testing.T) {
	db, err := store.Open(context.Background(), "sqlite:"+t.TempDir()+"/fresh.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applied, err := db.Migrate(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "applied", applied, migrationVersions(t, "sqlite"))
}

// TestPostgresConcurrentMigrate: processes starting together on one fresh
// PostgreSQL schema take turns; each migration is applied once.
func TestPostgresConcurrentMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	admin, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	// A second, empty schema in the same database, for the racing handles.
	schema := "m_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_"))
	schema = schema + "_" + itoa(int(base.UnixNano()%1e6))
	if err := admin.Gorm().Exec("CREATE SCHEMA " + schema).Error; err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	var dbs []*store.DB
	for range 3 {
		db, err := store.Open(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs = append(dbs, db)
	}
	migrateConcurrently(t, dbs...)
	// The tables landed in the schema of the URL.
	var n int64
	if err := dbs[0].Gorm().Raw(`SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name IN ('workspaces','users','api_keys','projects')`, schema).Scan(&n).Error; err != nil || n != 4 {
		t.Fatalf("tables in %s: %d, %v", schema, n, err)
	}
}

// migrationVersions lists the versions of a dialect's migration files, so
// that the tests need no edit when a migration is added.
func migrationVersions(t *testing.T, dialect string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("migrations", dialect))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range entries {
		v, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s has no version prefix", e.Name())
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		t.Fatal("no migrations")
	}
	return out
}

// Neighbours lists the tables Worktrack's migrations did not make, on both
// databases: none beside a fresh migration, and one an operator's other
// application left there.
func TestNeighboursAreTheTablesWorktrackDidNotMake(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		n, err := db.Neighbours(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n.Maintenance || len(n.Tables) != 0 {
			t.Fatalf("a freshly migrated database has neighbours: %+v", n)
		}
		if err := db.Gorm().Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY)").Error; err != nil {
			t.Fatal(err)
		}
		if n, err = db.Neighbours(ctx); err != nil || len(n.Tables) != 1 || n.Tables[0] != "invoices" {
			t.Fatalf("with an invoices table: %+v, %v", n, err)
		}
	})
}

// On PostgreSQL, the maintenance database "postgres" is told apart. The
// test only reads there: nothing is migrated into it.
func TestNeighboursKnowsTheMaintenanceDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(storetest.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/postgres"
	db, err := store.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n, err := db.Neighbours(context.Background())
	if err != nil || !n.Maintenance {
		t.Fatalf("the maintenance database: %+v, %v", n, err)
	}
}
