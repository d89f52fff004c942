package storetest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/worktrack/worktrack/adapters/store"
)

// EnvRequireDocker makes OwnPostgres fail, not skip, when no container can
// be started: CI's testcontainers step sets it, so the fault tests run there.
const EnvRequireDocker = "WORKTRACK_REQUIRE_DOCKER"

// OwnServer is a PostgreSQL container of one test's own, for fault tests
// that stop and start the database: the server every other test shares
// (TEST_DATABASE_URL) is never disturbed. Its host port is fixed for its
// life, so that the URL stays valid across Stop and Start.
type OwnServer struct {
	t testing.TB
	c *tcpostgres.PostgresContainer
	// URL is the migrated database's URL.
	URL string
}

// OwnPostgres starts a PostgreSQL container of t's own (the image
// chooseImage picks), migrates it and returns it; it is removed when t
// ends. Without a Docker engine, t is skipped, unless
// WORKTRACK_REQUIRE_DOCKER=1.
func OwnPostgres(t testing.TB) *OwnServer {
	t.Helper()
	image := chooseImage()
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := func() (c *tcpostgres.PostgresContainer, err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("testcontainers panicked: %v", r)
			}
		}()
		return tcpostgres.Run(ctx, image,
			tcpostgres.WithDatabase("worktrack_fault"),
			tcpostgres.WithUsername("worktrack"),
			tcpostgres.WithPassword("worktrack"),
			tcpostgres.BasicWaitStrategies(),
			testcontainers.WithLabels(map[string]string{containerLabel: "postgres-own"}),
			testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{
					network.MustParsePort("5432/tcp"): {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(port)}},
				}
			}),
		)
	}()
	if c != nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = c.Terminate(ctx)
		})
	}
	if err != nil {
		msg := fmt.Sprintf("storetest: no PostgreSQL container of the test's own (image %s): %v. To run these tests: %s.",
			image, err, fixFor(err, "start a Docker engine (docs/testing.md)"))
		if os.Getenv(EnvRequireDocker) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + " Skipping; " + EnvRequireDocker + "=1 makes this a failure.")
	}
	s := &OwnServer{t: t, c: c,
		URL: fmt.Sprintf("postgres://worktrack:worktrack@127.0.0.1:%d/worktrack_fault?sslmode=disable", port)}
	db, err := store.Open(ctx, s.URL)
	if err != nil {
		t.Fatalf("storetest: open own postgres: %v", err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("storetest: migrate own postgres: %v", err)
	}
	return s
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s), as an operator
// restarting it would.
func (s *OwnServer) Stop() {
	s.t.Helper()
	timeout := 10 * time.Second
	if err := s.c.Stop(context.Background(), &timeout); err != nil {
		s.t.Fatalf("storetest: stop postgres: %v", err)
	}
}

// Start starts the stopped server again and waits until it answers.
func (s *OwnServer) Start() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.c.Start(ctx); err != nil {
		s.t.Fatalf("storetest: start postgres: %v", err)
	}
	for {
		db, err := store.Open(ctx, s.URL)
		if err == nil {
			err = db.Ping(ctx)
			_ = db.Close()
			if err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			s.t.Fatalf("storetest: postgres did not answer after start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
