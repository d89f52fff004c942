package worktracktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// offline makes testcontainers work where no image registry answers,
// unless the environment already decides (see Run).
func offline(ctx context.Context) {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set && !ryukPresent(ctx) {
		// Ryuk, testcontainers' reaper, is an image on Docker Hub: without
		// it every start fails. Terminate removes what Run starts, and
		// Clean what a killed test left.
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if _, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set && localEngine() {
		// testcontainers guesses the host that reaches the published ports;
		// in a container (/.dockerenv) it guesses the default gateway, which
		// is not where an engine on this machine's socket publishes them.
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
}

// localEngine reports whether the Docker engine is on this machine's Unix
// socket (DOCKER_HOST unset or unix://).
func localEngine() bool {
	h := os.Getenv("DOCKER_HOST")
	return runtime.GOOS == "linux" && (h == "" || strings.HasPrefix(h, "unix://"))
}

// docker is a client of the environment's Docker engine.
func docker() (*client.Client, error) { return client.New(client.FromEnv) }

// imagePresent reports whether the Docker engine holds image, without
// pulling it.
func imagePresent(ctx context.Context, image string) bool {
	cli, err := docker()
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = cli.ImageInspect(ctx, image)
	return err == nil
}

// ryukPresent reports whether the Docker engine holds an image of Ryuk,
// testcontainers' reaper (testcontainers/ryuk, whichever version).
func ryukPresent(ctx context.Context) bool {
	cli, err := docker()
	if err != nil {
		return false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	images, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("reference", "testcontainers/ryuk")})
	return err == nil && len(images.Items) > 0
}

// Clean removes the containers and networks Run started in processes that
// are no longer running on this machine: what a test binary killed before
// its Terminate left behind (with Ryuk off, nothing else removes them). It
// leaves alone those of processes still running, so it is safe to call at
// the start of a test run (TestMain), or from `make clean-containers`.
func Clean(ctx context.Context) error {
	cli, err := docker()
	if err != nil {
		return fmt.Errorf("worktracktest: %w", err)
	}
	defer cli.Close()
	dead := func(labels map[string]string) bool {
		pid, err := strconv.Atoi(labels[LabelPID])
		return err == nil && pid != os.Getpid() && !running(pid)
	}
	var errs []error
	filter := client.Filters{}.Add("label", Label)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return fmt.Errorf("worktracktest: list containers: %w", err)
	}
	for _, c := range cs.Items {
		if dead(c.Labels) {
			if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("worktracktest: list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if dead(n.Labels) {
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// running reports whether a process pid runs on this machine.
func running(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// ServeWebhooks serves h in this process at an address Worktrack's
// container can reach, and returns the URL to register as a webhook's
// (POST /v1/webhooks), e.g. http://172.18.0.1:41234/hook for path "/hook".
// On Linux it listens on the gateway of the containers' network (this
// machine's side of it, never a public address); elsewhere (Docker
// Desktop) on 127.0.0.1, which the container reaches as
// host.docker.internal. Worktrack runs with WORKTRACK_WEBHOOK_ALLOW_PRIVATE
// so that it delivers there. Terminate stops it.
func (c *Container) ServeWebhooks(ctx context.Context, path string, h http.Handler) (string, error) {
	host, listen := "host.docker.internal", "127.0.0.1"
	if runtime.GOOS == "linux" {
		gw, err := c.gateway(ctx)
		if err != nil {
			return "", fmt.Errorf("worktracktest: the containers' network gateway: %w", err)
		}
		host, listen = gw, gw
	}
	l, err := net.Listen("tcp", net.JoinHostPort(listen, "0"))
	if err != nil {
		return "", fmt.Errorf("worktracktest: listen for webhooks: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	c.receivers = append(c.receivers, func() { _ = srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + path, nil
}

// gateway is the IPv4 gateway of the containers' network: the host's
// address on it.
func (c *Container) gateway(ctx context.Context) (string, error) {
	cli, err := docker()
	if err != nil {
		return "", err
	}
	defer cli.Close()
	n, err := cli.NetworkInspect(ctx, c.network.ID, client.NetworkInspectOptions{})
	if err != nil {
		return "", err
	}
	for _, cfg := range n.Network.IPAM.Config {
		if cfg.Gateway.Is4() {
			return cfg.Gateway.String(), nil
		}
	}
	return "", errors.New("no IPv4 gateway")
}
