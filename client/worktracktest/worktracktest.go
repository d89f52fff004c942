// Package worktracktest starts a real Worktrack for integration tests, with
// testcontainers-go: the Worktrack image and a PostgreSQL, on a network of
// their own, in the style of the testcontainers-go modules.
//
//	wt, err := worktracktest.Run(ctx)
//	if err != nil {
//		t.Fatal(err)
//	}
//	t.Cleanup(func() { _ = wt.Terminate(context.Background()) })
//	c := wt.Client() // a *client.Client with the admin key
//
// It works on a machine with a Docker engine and no image registry, with
// no variable set (see Run): the Worktrack image is built from a checkout
// with `make image` (worktrack:dev), and PostgreSQL's is postgres:16-alpine
// or, when Docker does not hold that, the offline image `make test-image`
// builds. Everything it starts is labelled, so Clean removes what a killed
// test left behind. ServeWebhooks gives the container an endpoint in the
// test's own process to deliver webhooks to.
package worktracktest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/worktrack/worktrack/client"
)

// DefaultImage is the Worktrack image Run starts: what `make image` builds.
// The environment variable WORKTRACK_IMAGE overrides it, WithImage both.
const DefaultImage = "worktrack:dev"

// DefaultPostgresImage is the PostgreSQL image Run starts when Docker holds
// it or can pull it. The environment variable WORKTRACK_POSTGRES_IMAGE
// overrides it, WithPostgresImage both.
const DefaultPostgresImage = "postgres:16-alpine"

// OfflinePostgresImage is the PostgreSQL image `make test-image` builds
// from Debian's packages, with no registry: Run starts it when Docker holds
// it and not DefaultPostgresImage.
const OfflinePostgresImage = "worktrack/postgres-test:15"

// Labels of everything Run starts: Label names the package, LabelPID the
// test process, so that Clean knows what a dead process left.
const (
	Label    = "org.worktrack.worktracktest"
	LabelPID = "org.worktrack.worktracktest.pid"
)

// Container is a running Worktrack and its PostgreSQL.
type Container struct {
	// Container is Worktrack's container.
	testcontainers.Container
	// Postgres is the database's container.
	Postgres *tcpostgres.PostgresContainer
	// URL is Worktrack's base URL on this machine, e.g.
	// http://127.0.0.1:32771 (without /v1).
	URL string
	// AdminKey is the API key of the admin Worktrack creates on its first
	// start (AdminEmail), in the workspace it creates then.
	AdminKey string
	// AdminEmail is that admin's email.
	AdminEmail string

	network   *testcontainers.DockerNetwork
	receivers []func()
}

type options struct {
	image, postgresImage, adminEmail string
	env                              map[string]string
	customizers                      []testcontainers.ContainerCustomizer
}

// Option configures Run.
type Option func(*options)

// WithImage starts this Worktrack image.
func WithImage(image string) Option { return func(o *options) { o.image = image } }

// WithPostgresImage starts this PostgreSQL image (any the
// testcontainers-go postgres module runs).
func WithPostgresImage(image string) Option { return func(o *options) { o.postgresImage = image } }

// WithAdminEmail is the email of the first admin (admin@example.com).
func WithAdminEmail(email string) Option { return func(o *options) { o.adminEmail = email } }

// WithEnv sets Worktrack's environment variables (docs/deploy.md lists
// them), e.g. WORKTRACK_SECRETS_KEY or WORKTRACK_RATE_LIMIT.
func WithEnv(env map[string]string) Option {
	return func(o *options) {
		for k, v := range env {
			o.env[k] = v
		}
	}
}

// WithCustomizers applies testcontainers customizers to Worktrack's
// container (labels, log consumers, …).
func WithCustomizers(c ...testcontainers.ContainerCustomizer) Option {
	return func(o *options) { o.customizers = append(o.customizers, c...) }
}

// Run starts PostgreSQL and Worktrack on a new network, waits until
// Worktrack answers /readyz, and returns it with its first admin's key. On
// an error it stops what it started.
//
// With nothing configured it works offline (docs/client.md#worktracktest):
// PostgreSQL is DefaultPostgresImage when Docker holds it, else
// OfflinePostgresImage when Docker holds that. Unless the environment says
// otherwise, and before testcontainers reads its configuration (Run must
// then be the first testcontainers call of the process):
// TESTCONTAINERS_RYUK_DISABLED is set to true when Docker does not hold
// Ryuk's image (no registry to pull it from; Clean removes what a killed
// test left instead), and TESTCONTAINERS_HOST_OVERRIDE to 127.0.0.1 when
// the Docker engine is on this machine's socket, where the ports are
// published (on 127.0.0.1 only). Worktrack runs with
// WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true, so it can deliver to
// ServeWebhooks's endpoints; WithEnv can say otherwise.
func Run(ctx context.Context, opts ...Option) (_ *Container, err error) {
	o := options{image: DefaultImage, adminEmail: "admin@example.com", env: map[string]string{}}
	if image := os.Getenv("WORKTRACK_IMAGE"); image != "" {
		o.image = image
	}
	o.postgresImage = os.Getenv("WORKTRACK_POSTGRES_IMAGE")
	for _, opt := range opts {
		opt(&o)
	}
	offline(ctx)
	if o.postgresImage == "" {
		o.postgresImage = DefaultPostgresImage
		if !imagePresent(ctx, DefaultPostgresImage) && imagePresent(ctx, OfflinePostgresImage) {
			o.postgresImage = OfflinePostgresImage
		}
	}
	c := &Container{AdminEmail: o.adminEmail}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("worktracktest: %w", err), c.Terminate(context.WithoutCancel(ctx)))
		}
	}()

	if c.network, err = tcnetwork.New(ctx, tcnetwork.WithLabels(labels())); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	c.Postgres, err = tcpostgres.Run(ctx, o.postgresImage,
		tcpostgres.WithDatabase("worktrack"), tcpostgres.WithUsername("worktrack"), tcpostgres.WithPassword("worktrack"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithLabels(labels()),
		loopbackPorts("5432/tcp"),
		tcnetwork.WithNetwork([]string{"postgres"}, c.network))
	if err != nil {
		return nil, fmt.Errorf("postgres (%s): %w", o.postgresImage, err)
	}

	env := map[string]string{ //nolint:gosec // the throwaway test database's, on the containers' own network
		"DATABASE_URL":                    "postgres://worktrack:worktrack@postgres:5432/worktrack?sslmode=disable",
		"WORKTRACK_BOOTSTRAP_EMAIL":       o.adminEmail,
		"WORKTRACK_LOG_FORMAT":            "json", // the first admin's key is one record's api_key
		"WORKTRACK_WEBHOOK_ALLOW_PRIVATE": "true", // ServeWebhooks' endpoints are on a private address
	}
	for k, v := range o.env {
		env[k] = v
	}
	customizers := append([]testcontainers.ContainerCustomizer{
		testcontainers.WithExposedPorts("8080/tcp"),
		testcontainers.WithEnv(env),
		testcontainers.WithLabels(labels()),
		loopbackPorts("8080/tcp"),
		tcnetwork.WithNetwork([]string{"worktrack"}, c.network),
		testcontainers.WithWaitStrategy(wait.ForHTTP("/readyz").WithPort("8080/tcp").WithStartupTimeout(2 * time.Minute)),
	}, o.customizers...)
	wt, err := testcontainers.Run(ctx, o.image, customizers...)
	if wt != nil {
		c.Container = wt
	}
	if err != nil {
		return nil, fmt.Errorf("worktrack (%s; `make image` builds %s): %w", o.image, DefaultImage, err)
	}
	endpoint, err := wt.PortEndpoint(ctx, "8080/tcp", "http")
	if err != nil {
		return nil, err
	}
	c.URL = endpoint
	if c.AdminKey, err = adminKey(ctx, wt); err != nil {
		return nil, err
	}
	return c, nil
}

// labels are the labels of everything this process starts.
func labels() map[string]string {
	return map[string]string{Label: "true", LabelPID: strconv.Itoa(os.Getpid())}
}

// loopbackPorts publishes ports on 127.0.0.1 only, on ports Docker picks:
// nothing a test starts is reachable from another machine.
func loopbackPorts(ports ...string) testcontainers.CustomizeRequestOption {
	return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		if hc.PortBindings == nil {
			hc.PortBindings = network.PortMap{}
		}
		for _, p := range ports {
			hc.PortBindings[network.MustParsePort(p)] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1")}}
		}
	})
}

// adminKey reads the first admin's key from Worktrack's log: the one
// record of its first start.
func adminKey(ctx context.Context, wt testcontainers.Container) (string, error) {
	logs, err := wt.Logs(ctx)
	if err != nil {
		return "", err
	}
	defer logs.Close()
	lines := bufio.NewScanner(logs)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if !strings.Contains(line, `"api_key"`) {
			continue
		}
		var rec struct {
			APIKey string `json:"api_key"`
		}
		if json.Unmarshal([]byte(line[strings.IndexByte(line, '{'):]), &rec) == nil && rec.APIKey != "" {
			return rec.APIKey, nil
		}
	}
	return "", errors.New("worktrack's log shows no first-start admin key (was the database not empty?)")
}

// Client is a client of this Worktrack with the admin key.
func (c *Container) Client(opts ...client.Option) *client.Client {
	return client.New(c.URL, c.AdminKey, opts...)
}

// Terminate stops the endpoints of ServeWebhooks, stops and removes both
// containers and the network.
func (c *Container) Terminate(ctx context.Context) error {
	for _, stop := range c.receivers {
		stop()
	}
	c.receivers = nil
	var errs []error
	if c.Container != nil {
		errs = append(errs, testcontainers.TerminateContainer(c.Container))
	}
	if c.Postgres != nil {
		errs = append(errs, testcontainers.TerminateContainer(c.Postgres))
	}
	if c.network != nil {
		errs = append(errs, c.network.Remove(ctx))
	}
	return errors.Join(errs...)
}
