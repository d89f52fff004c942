// Package redistest starts a Redis server of a test's own, so that tests can
// kill, restart, freeze and thaw it without disturbing the server other tests
// share (TEST_REDIS_URL).
//
// It runs Debian's redis-server from PATH. Without it the test is skipped,
// unless TEST_REDIS_URL is set (CI), where Redis tests are required and the
// missing binary fails the test.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process on 127.0.0.1.
type Server struct {
	t    testing.TB
	port int
	cmd  *exec.Cmd
}

// Start runs a redis-server on a free loopback port, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("TEST_REDIS_URL") != "" {
			t.Fatalf("redistest: redis-server is not on PATH (install Debian's redis-server): %v", err)
		}
		t.Skip("redistest: redis-server is not on PATH. To run these tests: apt-get install redis-server. Skipping.")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	s := &Server{t: t, port: port}
	s.start()
	t.Cleanup(func() { s.Kill() })
	return s
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

func (s *Server) start() {
	s.t.Helper()
	// The arguments are a port number and a directory of the test's own.
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", //nolint:gosec // see above
		"--save", "", "--appendonly", "no", "--dir", s.t.TempDir())
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	client := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
	defer client.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: redis-server on port %d did not answer within 10s: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill ends the server with SIGKILL, as a crash would.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT) // a frozen process must be able to die
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts a new, empty server on the same port.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Freeze stops the process (SIGSTOP): connections stay open and the kernel
// still accepts new ones, but nothing answers. That is a hung server.
func (s *Server) Freeze() {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("redistest: SIGSTOP: %v", err)
	}
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("redistest: SIGCONT: %v", err)
	}
}
