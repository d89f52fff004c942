package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/worktrack/worktrack/adapters/store"
)

// Environment variables read by this package.
const (
	EnvDatabaseURL     = "TEST_DATABASE_URL"
	EnvRequirePostgres = "WORKTRACK_REQUIRE_POSTGRES"
	// EnvPostgresImage names the image started when TEST_DATABASE_URL is
	// unset, e.g. worktrack/postgres-test:15 built by `make test-image` where
	// no registry is reachable.
	EnvPostgresImage = "WORKTRACK_TEST_PG_IMAGE"
)

// defaultImage is the PostgreSQL started when TEST_DATABASE_URL and
// WORKTRACK_TEST_PG_IMAGE are unset; Docker pulls it from Docker Hub.
const defaultImage = "postgres:16-alpine"

// offlineImage is the image `make test-image` builds from Debian's packages
// where no registry answers (the Makefile's TEST_PG_IMAGE).
const offlineImage = "worktrack/postgres-test:15"

// fixPostgres is how to run the PostgreSQL tests when nothing more precise
// is known.
const fixPostgres = "set " + EnvDatabaseURL + "=postgres://postgres@127.0.0.1:5432/test?sslmode=disable, " +
	"or start a Docker engine for testcontainers (docs/testing.md)"

// containerLabel marks the containers this package starts, so that leftovers
// of a test binary that died before Main's cleanup can be found
// (`make clean-containers`).
const containerLabel = "org.worktrack.storetest"

// server is the PostgreSQL of this test binary, found once.
var server struct {
	mainCalled bool
	once       sync.Once
	baseURL    string // the test database; schemas are created in it
	admin      *store.DB
	container  *tcpostgres.PostgresContainer
	err        error // why PostgreSQL is unavailable
}

// Main runs the tests of a package, then after (the package's own
// clean-ups), and then releases the PostgreSQL container, if one was
// started; call it from TestMain. The container is started on the first
// Postgres call, so packages that run only SQLite tests never wait for one.
func Main(m *testing.M, after ...func()) {
	server.mainCalled = true
	code := m.Run()
	for _, f := range after {
		f()
	}
	drops.Wait()
	if server.admin != nil {
		_ = server.admin.Close()
	}
	if server.container != nil {
		if err := testcontainers.TerminateContainer(server.container); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: terminate postgres container: %v\n", err)
		}
	}
	os.Exit(code)
}

// Postgres returns a migrated PostgreSQL database of t's own, dropped when
// t ends, and a handle on it, closed when t ends. Without PostgreSQL it skips
// t, or fails it when WORKTRACK_REQUIRE_POSTGRES=1.
func Postgres(t testing.TB) *store.DB {
	t.Helper()
	u := newDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := store.Open(ctx, u)
	if err != nil {
		t.Fatalf("storetest: open postgres: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// PostgresURL is Postgres for tests that start processes or open the store
// themselves: the URL of a migrated database of t's own, dropped when t
// ends. Stop the processes before then.
func PostgresURL(t testing.TB) string {
	t.Helper()
	return newDatabase(t)
}

// requirePostgres returns a handle on the test database, or skips (or fails)
// t with the reason PostgreSQL is unavailable.
func requirePostgres(t testing.TB) *store.DB {
	t.Helper()
	server.once.Do(findPostgres)
	if server.err == nil {
		return server.admin
	}
	msg := fmt.Sprintf("storetest: PostgreSQL unavailable: %v. To run these tests: %s.", server.err, fixFor(server.err, fixPostgres))
	if os.Getenv(EnvRequirePostgres) == "1" {
		t.Fatalf("%s Failing because %s=1.", msg, EnvRequirePostgres)
	}
	t.Skip(msg + " Skipping.")
	return nil
}

func findPostgres() {
	if !server.mainCalled {
		server.err = errors.New("the test package's TestMain must call storetest.Main(m)")
		return
	}
	base := os.Getenv(EnvDatabaseURL)
	if base == "" {
		u, err := startContainer()
		if err != nil {
			server.err = fmt.Errorf("%s is unset and no container could be started: %w", EnvDatabaseURL, err)
			return
		}
		base = u
	} else if err := checkBaseURL(base); err != nil {
		server.err = fmt.Errorf("%s: %w", EnvDatabaseURL, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := store.Open(ctx, base)
	if err != nil {
		server.err = err
		return
	}
	server.baseURL, server.admin = base, admin
}

// checkBaseURL refuses the database named postgres: tests create and drop
// schemas, which has no place in the maintenance database.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("scheme %q, want postgres://", u.Scheme)
	}
	switch name := strings.TrimPrefix(u.Path, "/"); name {
	case "":
		return errors.New("names no database; name a dedicated test database, e.g. postgres://…/test")
	case "postgres":
		return errors.New("names the database 'postgres'; name a dedicated test database, e.g. postgres://…/test")
	}
	if u.Query().Has("search_path") {
		return errors.New("must not set search_path: each test gets a schema of its own")
	}
	return nil
}

// startContainer runs PostgreSQL in Docker, as the testcontainers-go postgres
// module documents, and returns its URL. Without Docker it fails at once.
func startContainer() (_ string, err error) {
	image := chooseImage()
	var logs string // the end of the log of a container that did not become ready
	defer func() {
		// Some Docker discovery paths of testcontainers panic rather than
		// return an error; either way PostgreSQL is unavailable.
		if r := recover(); r != nil {
			err = fmt.Errorf("testcontainers panicked: %v", r)
		}
		if err != nil {
			err = fmt.Errorf("image %s: %w%s", image, err, logs)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, image,
		tcpostgres.WithDatabase("worktrack_test"),
		tcpostgres.WithUsername("worktrack"),
		tcpostgres.WithPassword("worktrack"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithLabels(map[string]string{containerLabel: "postgres"}),
	)
	if c != nil {
		// Run may return a container together with an error (e.g. the wait
		// strategy failed); Main terminates it either way.
		server.container = c
	}
	if err != nil {
		if c != nil {
			logs = logTail(c)
		}
		return "", fmt.Errorf("testcontainers: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// chooseImage is the PostgreSQL image to start: WORKTRACK_TEST_PG_IMAGE's;
// else the default one when Docker holds it; else the offline image of `make
// test-image` when Docker holds that (a machine without a registry needs no
// more than one make test-image); else the default one, for Docker to pull.
// With the offline image Ryuk, testcontainers' reaper, is turned off unless
// told otherwise: its image is on Docker Hub too, and Main terminates the
// container itself.
func chooseImage() string {
	if image := os.Getenv(EnvPostgresImage); image != "" {
		return image
	}
	if !imagePresent(defaultImage) && imagePresent(offlineImage) {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		return offlineImage
	}
	return defaultImage
}

// imagePresent reports whether the Docker engine of the environment holds
// image, without pulling it.
func imagePresent(image string) bool {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.ImageInspect(ctx, image)
	return err == nil
}

// fixFor is the one command that makes the tests run after a container
// failed to start with err, or fallback when err says nothing more precise.
func fixFor(err error, fallback string) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "reaper") || strings.Contains(msg, "ryuk"):
		return "set TESTCONTAINERS_RYUK_DISABLED=true: Ryuk, testcontainers' reaper, needs its image from Docker Hub " +
			"(storetest.Main terminates the container itself)"
	case strings.Contains(msg, "registry") || strings.Contains(msg, "pull") || strings.Contains(msg, "No such image") ||
		strings.Contains(msg, "manifest"):
		return "make test-image: no image registry answers, and it builds " + offlineImage +
			" from Debian's packages, which the tests then use by themselves"
	case strings.Contains(msg, "external check"):
		return "set TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1: testcontainers could not reach the published port at the host it chose " +
			"(it guesses the gateway when /.dockerenv exists)"
	}
	return fallback
}

// logTail returns the end of the container's log, to show why PostgreSQL did
// not become ready.
func logTail(c testcontainers.Container) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Logs(ctx)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	if len(b) == 0 {
		return ""
	}
	return "\n--- end of the container's log:\n" + strings.TrimRight(string(b), "\n") + "\n---\n"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
