// Package proctest runs the worktrack binary as a child process for tests:
// build it, start `serve`, wait until it listens, and stop or kill it by its
// pid. Only processes a test started are ever signalled.
package proctest

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build compiles cmd/worktrack into dir and returns the binary's path.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "worktrack")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/worktrack/worktrack/cmd/worktrack").CombinedOutput()
	if err != nil {
		return "", &buildError{err: err, out: out}
	}
	return bin, nil
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + string(e.out) }

// Buffer is a bytes.Buffer safe for a writer and readers at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Server is a `worktrack serve` child process started by a test.
type Server struct {
	Cmd    *exec.Cmd
	Stderr *Buffer
	// Base is the server's root URL, e.g. http://127.0.0.1:40123.
	Base   string
	exited chan struct{}
}

var (
	// listenRe finds the base URL serve listens on: in its text banner, or
	// in the JSON record of its listening line.
	listenRe = regexp.MustCompile(`(?:Worktrack is listening on |"msg":"listening".*"url":")(https?://[0-9.:]+)`)
	// SecretRe matches an API key secret, e.g. in the bootstrap banner.
	SecretRe = regexp.MustCompile(`wtk_[0-9A-Za-z]{32,}`)
)

// Serve starts `worktrack serve` in dir with env (on top of the test's own
// environment, with an ephemeral port and no Redis unless env says
// otherwise) and waits until it listens. The process is killed when the test
// ends if it is still running.
func Serve(t testing.TB, bin, dir string, env ...string) *Server {
	t.Helper()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"WORKTRACK_ADDR=127.0.0.1:0", "DATABASE_URL=", "REDIS_URL="}, env...)...)
	s := &Server{Cmd: cmd, Stderr: &Buffer{}, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.Stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		_ = pw.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listenRe.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case s.Base = <-found:
	case <-s.exited:
		t.Fatalf("serve exited:\n%s", s.Stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start:\n%s", s.Stderr.String())
	}
	return s
}

// Signal sends sig to the process.
func (s *Server) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := s.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Wait waits for the process to exit (40s at most) and returns its exit code.
func (s *Server) Wait(t testing.TB) int {
	t.Helper()
	select {
	case <-s.exited:
	case <-time.After(40 * time.Second):
		t.Fatalf("serve did not exit:\n%s", s.Stderr.String())
	}
	return s.Cmd.ProcessState.ExitCode()
}

// Stop sends SIGTERM and returns the exit code.
func (s *Server) Stop(t testing.TB) int {
	t.Helper()
	s.Signal(t, syscall.SIGTERM)
	return s.Wait(t)
}

// Kill sends SIGKILL: no shutdown, whatever was in flight is left behind.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.Signal(t, syscall.SIGKILL)
	<-s.exited
}

// Exited is closed when the process has exited.
func (s *Server) Exited() <-chan struct{} { return s.exited }
