package client_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The examples of this package run against a real Worktrack: TestMain
// builds the server of this repository (the module one directory up) and
// starts it on a fresh SQLite file, as `make run` does. serverURL and
// adminKey are its address and the admin key of its first start.
var serverURL, adminKey string

func TestMain(m *testing.M) {
	stop, err := startServer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "client examples: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startServer builds ../cmd/worktrack and serves it on 127.0.0.1, returning
// how to stop it.
func startServer() (func(), error) {
	dir, err := os.MkdirTemp("", "worktrack-client-examples-")
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "worktrack")
	build := exec.Command("go", "build", "-o", bin, "./cmd/worktrack")
	build.Dir = ".." // the server's module, in the checkout that holds this client
	if out, err := build.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("building the server from the checkout: %w\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"DATABASE_URL=sqlite:"+filepath.Join(dir, "examples.db"), "REDIS_URL=",
		"WORKTRACK_ADDR=127.0.0.1:0", "WORKTRACK_LOG_FORMAT=json",
		"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true", // the webhook example's receiver listens on 127.0.0.1
		"WORKTRACK_WEBHOOK_BACKOFF_BASE=1s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	}
	ready := make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			var rec struct {
				Msg    string `json:"msg"`
				APIKey string `json:"api_key"`
				URL    string `json:"url"`
			}
			if json.Unmarshal(lines.Bytes(), &rec) != nil {
				continue
			}
			if rec.APIKey != "" {
				adminKey = rec.APIKey
			}
			if rec.Msg == "listening" {
				serverURL = rec.URL
				break
			}
		}
		if serverURL == "" {
			ready <- fmt.Errorf("the server exited before it listened")
			return
		}
		ready <- nil
		_, _ = io.Copy(io.Discard, stderr)
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop()
			return nil, err
		}
	case <-time.After(time.Minute):
		stop()
		return nil, fmt.Errorf("the server did not listen within a minute")
	}
	if !strings.HasPrefix(adminKey, "wtk_") {
		stop()
		return nil, fmt.Errorf("the server printed no first-start key")
	}
	return stop, nil
}
