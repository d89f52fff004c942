package storetest

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
)

func TestMain(m *testing.M) { Main(m) }

// Every test gets a database that is migrated already and its own: what
// one test writes, another does not see, on either database.
func TestEachTestGetsAMigratedDatabaseOfItsOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, open := range map[string]func(testing.TB) *store.DB{"sqlite": SQLite, "postgres": Postgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t), open(t)
			for _, db := range []*store.DB{a, b} {
				if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
					t.Fatalf("a test's database is not migrated: Migrate applied %v, %v", applied, err)
				}
			}
			if err := a.Gorm().Exec("CREATE TABLE only_in_a (id INTEGER)").Error; err != nil {
				t.Fatal(err)
			}
			if err := b.Gorm().Exec("SELECT count(*) FROM only_in_a").Error; err == nil {
				t.Fatal("a table made in one test's database is in another's")
			}
		})
	}
}

// On PostgreSQL each test's database is a copy of the template named after
// the migrations' digest, and is dropped when its test ends.
func TestPostgresDatabasesAreTemplateCopiesDroppedAtTheEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var name string
	t.Run("a test", func(t *testing.T) {
		db := Postgres(t)
		if err := db.Gorm().Raw("SELECT current_database()").Scan(&name).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, testDBPrefix) {
			t.Fatalf("the test's database is %q, not one of its own", name)
		}
	})
	admin := requirePostgres(t)
	digest, err := store.MigrationsDigest(store.DialectPostgres)
	if err != nil {
		t.Fatal(err)
	}
	if pgTemplate.name != "" && pgTemplate.name != templatePrefix+digest[:16] {
		t.Fatalf("template %q, want it named after the migrations' digest %s", pgTemplate.name, digest[:16])
	}
	// The drop runs in the background after the test: wait for it.
	deadline := time.Now().Add(time.Minute)
	for {
		var left int64
		if err := admin.Gorm().WithContext(ctx).Raw("SELECT count(*) FROM pg_database WHERE datname = ?", name).Scan(&left).Error; err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s outlived its test by a minute", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A template is migrated under a name of its own and renamed when done:
// no half-made database keeps the template's name, none is left behind.
func TestBuildTemplateMigratesThenRenames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := requirePostgres(t)
	sqlDB, err := admin.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	name := "worktrack_buildtest_" + randomHex(6) // not a template's name: no test binary drops it as stale
	t.Cleanup(func() { admin.Gorm().Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	made, err := buildTemplate(ctx, conn, name)
	if err != nil || !made {
		t.Fatalf("buildTemplate: %v, %v", made, err)
	}
	var names []string
	if err := admin.Gorm().Raw("SELECT datname FROM pg_database WHERE datname LIKE ?", name+"%").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != name {
		t.Fatalf("databases after the build: %v, want %s alone", names, name)
	}
	u, err := url.Parse(server.baseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	db, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
		t.Fatalf("the template is not migrated: Migrate applied %v, %v", applied, err)
	}
}

// A role that may not create databases gets a schema of the test database,
// migrated, per test.
func TestSchemaOfItsOwnWhereDatabasesCannotBeMade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newMigratedSchema(t, requirePostgres(t))
	if parsed, err := url.Parse(u); err != nil || !strings.HasPrefix(parsed.Query().Get("search_path"), "t_") {
		t.Fatalf("URL %q names no schema of its own (%v)", u, err)
	}
	db, err := store.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if applied, err := db.Migrate(ctx); err != nil || len(applied) != 0 {
		t.Fatalf("the schema is not migrated: Migrate applied %v, %v", applied, err)
	}
}
