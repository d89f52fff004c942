package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// writeLoad runs goroutines × rounds write transactions (create a project,
// rename it, touch a key) plus plain statements outside transactions, and
// returns every error. Nothing may fail: a writer waits for the lock, it is
// never told the database is locked.
func writeLoad(db *store.DB, ws domain.Workspace, key domain.APIKey, tag string, goroutines, rounds int) []error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for g := range goroutines {
		wg.Go(func() {
			ctx := context.Background()
			for r := range rounds {
				now := time.Now()
				p, err := domain.NewProject(domain.NewID(domain.PrefixProject), ws.ID, domain.ProjectFields{Name: domain.Set("Load"), Key: domain.Set(fmt.Sprintf("%s%dX%d", tag, g, r))}, now)
				if err != nil {
					fail(err)
					return
				}
				err = db.InTx(ctx, func(ctx context.Context) error {
					// Read before writing, as the services do: with a deferred
					// BEGIN this is where SQLite gives up with SQLITE_BUSY.
					if _, err := db.Projects().FindProjects(ctx, ports.ProjectFilter{WorkspaceID: ws.ID, Limit: 1}); err != nil {
						return err
					}
					if err := db.Projects().CreateProject(ctx, p); err != nil {
						return err
					}
					got, err := db.Projects().FindProjectByID(ctx, ws.ID, p.ID)
					if err != nil {
						return err
					}
					upd, _, err := got.Apply(domain.ProjectFields{Name: domain.Set("Renamed")}, now)
					if err != nil {
						return err
					}
					return db.Projects().UpdateProject(ctx, upd)
				})
				if err != nil {
					fail(fmt.Errorf("goroutine %d round %d: transaction: %w", g, r, err))
				}
				// Autocommit statements compete with the transactions too.
				if err := db.APIKeys().TouchAPIKey(ctx, key.ID, now.Add(time.Duration(r)*time.Minute)); err != nil {
					fail(fmt.Errorf("goroutine %d round %d: touch: %w", g, r, err))
				}
				if _, err := db.Projects().FindProjects(ctx, ports.ProjectFilter{WorkspaceID: ws.ID, Limit: 5}); err != nil {
					fail(fmt.Errorf("goroutine %d round %d: list: %w", g, r, err))
				}
			}
		})
	}
	wg.Wait()
	return errs
}

func countProjects(t *testing.T, db *store.DB, ws domain.Workspace) int {
	t.Helper()
	var n int64
	if err := db.Gorm().Table("projects").Where("workspace_id = ? AND name = ?", ws.ID, "Renamed").Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestSQLiteConcurrentWriters(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	ws := newWorkspace(t, db)
	key := newKey(t, db, newUser(t, db, ws, "ada@example.com", base), 0, base)
	const goroutines, rounds = 20, 15
	for _, err := range writeLoad(db, ws, key, "W", goroutines, rounds) {
		t.Error(err)
	}
	if n := countProjects(t, db, ws); n != goroutines*rounds {
		t.Fatalf("%d projects written, want %d", n, goroutines*rounds)
	}
}

// TestSQLiteSeveralHandles: two pools on one file do not share the
// in-process write lock, so they meet only in SQLite's own locking, as two
// processes do.
func TestSQLiteSeveralHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	open := func() *store.DB {
		db, err := store.Open(context.Background(), "sqlite:"+path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	a, b := open(), open()
	migrateConcurrently(t, a, b)
	ws := newWorkspace(t, a)
	key := newKey(t, a, newUser(t, a, ws, "ada@example.com", base), 0, base)
	var wg sync.WaitGroup
	var errsA, errsB []error
	wg.Go(func() { errsA = writeLoad(a, ws, key, "A", 10, 10) })
	wg.Go(func() { errsB = writeLoad(b, ws, key, "B", 10, 10) })
	wg.Wait()
	for _, err := range append(errsA, errsB...) {
		t.Error(err)
	}
	if n := countProjects(t, b, ws); n != 200 {
		t.Fatalf("%d projects written, want 200", n)
	}
}

// migrateConcurrently migrates several handles on one fresh database at
// once: every call succeeds and each version is applied exactly once.
func migrateConcurrently(t *testing.T, dbs ...*store.DB) {
	t.Helper()
	applied := make([][]int64, len(dbs))
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i, db := range dbs {
		wg.Go(func() { applied[i], errs[i] = db.Migrate(context.Background()) })
	}
	wg.Wait()
	seen := map[int64]int{}
	for i := range dbs {
		if errs[i] != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, errs[i])
		}
		for _, v := range applied[i] {
			seen[v]++
		}
	}
	if seen[1] != 1 {
		t.Fatalf("applied %v; want version 1 applied exactly once", applied)
	}
	for v, n := range seen {
		if n != 1 {
			t.Fatalf("version %d applied %d times", v, n)
		}
	}
}

// helperDBEnv makes the test binary a writer process of TestSQLiteSeveralProcesses.
const helperDBEnv = "WORKTRACK_STORE_TEST_WRITER_DB"

func TestSQLiteSeveralProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	db, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, db)
	key := newKey(t, db, newUser(t, db, ws, "ada@example.com", base), 0, base)

	const procs = 3
	cmds := make([]*exec.Cmd, procs)
	outs := make([]strings.Builder, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSQLiteWriterProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), helperDBEnv+"="+path, "WORKTRACK_STORE_TEST_WRITER_ARGS="+ws.ID+","+key.ID+",P"+itoa(i))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	// Meanwhile this process writes too.
	for _, err := range writeLoad(db, ws, key, "M", 5, 10) {
		t.Error(err)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	if n, want := countProjects(t, db, ws), 5*10+procs*5*10; n != want {
		t.Fatalf("%d projects written, want %d", n, want)
	}
}

// TestSQLiteWriterProcess is the body of a writer process; it does nothing
// in a normal run.
func TestSQLiteWriterProcess(t *testing.T) {
	path := os.Getenv(helperDBEnv)
	if path == "" {
		t.Skip("helper process of TestSQLiteSeveralProcesses")
	}
	args := strings.Split(os.Getenv("WORKTRACK_STORE_TEST_WRITER_ARGS"), ",")
	db, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ws := domain.Workspace{ID: args[0]}
	key := domain.APIKey{ID: args[1]}
	for _, err := range writeLoad(db, ws, key, args[2], 5, 10) {
		t.Error(err)
	}
}

func TestSQLiteMemory(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Dialect() != store.DialectSQLite {
		t.Fatalf("Dialect = %q", db.Dialect())
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "applied", applied, migrationVersions(t, "sqlite"))
	// Every statement must see the one in-memory database, whichever
	// goroutine runs it.
	ws := newWorkspace(t, db)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := db.Workspaces().FindWorkspaceByID(ctx, ws.ID); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	key := newKey(t, db, newUser(t, db, ws, "ada@example.com", base), 0, base)
	for _, err := range writeLoad(db, ws, key, "MEM", 4, 5) {
		t.Error(err)
	}
}
