package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// process is a server the harness started; it is stopped by its pid.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	url  string
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done is closed
}

func startProcess(_ context.Context, name, logPath string, env []string, bin string, args ...string) (*process, error) {
	f, err := os.Create(logPath) //nolint:gosec // our own temporary directory
	if err != nil {
		return nil, err
	}
	// Not CommandContext: the harness stops its servers itself, with SIGTERM
	// first, in cleanup.
	cmd := exec.Command(bin, args...) //nolint:gosec // the built binary and the reference
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	logf("started %s (pid %d, log %s)", name, cmd.Process.Pid, logPath)
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM to the process's pid, and SIGKILL when it has not
// exited 10 s later.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		logf("%s (pid %d) ignored SIGTERM; killing it", p.name, p.pid())
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// exited reports an error when the process is no longer running.
func (p *process) exited() error {
	select {
	case <-p.done:
		status := p.err
		if status == nil {
			status = errors.New("exit status 0")
		}
		return fmt.Errorf("%s exited (%w); last log lines:\n%s", p.name, status, tail(p.log, 20))
	default:
		return nil
	}
}

// waitReady polls u until the server answers anything but a 5xx.
func waitReady(ctx context.Context, p *process, u string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if err := p.exited(); err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode < 500 {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready at %s after 60s; last log lines:\n%s", p.name, u, tail(p.log, 20))
}

func freeAddr() (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path) //nolint:gosec // our own log file
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// rssSampler records the peak VmRSS of a pid, read from /proc every 100 ms.
type rssSampler struct {
	stop chan struct{}
	done chan int64 // the peak in kB
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if kb, err := vmRSS(pid); err == nil && kb > peak {
				peak = kb
			}
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// peak stops sampling and returns the peak RSS in kB.
func (s *rssSampler) peak() int64 {
	close(s.stop)
	return <-s.done
}

func vmRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// dropFromPageCache writes path's pages to disk and drops them from the
// page cache, so that the processes started from it read the binary from
// disk, as after a deploy. Run straight from the linker's output, the same
// bytes measured up to 5 MiB more resident at idle (27.6 against 22.4 MiB
// of file-backed RSS): the kernel maps a fault's neighbours in whole
// page-cache folios, and how large those folios are depends on how the file
// was written, not on the program. Both servers are measured from disk.
func dropFromPageCache(path string) error {
	f, err := os.Open(path) //nolint:gosec // a binary the harness built or was given
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages cannot be dropped
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("drop %s from the page cache: %w", path, err)
	}
	return nil
}
