package storetest

import (
	"context"
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
