package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/worktrack/worktrack/tools/loadkit"
)

// A's flood runs in a process of its own (this command, re-run with
// -flood): B's client then waits for no CPU behind A's many clients in one
// Go scheduler, as B's own machine would not, and what B's latency
// measures is the server (and the machine the two share).

// floodReport is what the flood process says of itself, a line of JSON a
// quarter of a second and once more when it stops.
type floodReport struct {
	Done     int64  `json:"done"` // A's searches, counts and bulk creations answered 2xx
	BadKeys  string `json:"bad_keys"`
	GraphQL  string `json:"graphql"`
	Searches string `json:"searches"`
	Sockets  string `json:"sockets"`
}

func (x *attacks) report() floodReport {
	return floodReport{Done: x.done.Load(), BadKeys: x.badKeys.String(), GraphQL: x.graphql.String(),
		Searches: x.searches.String(), Sockets: x.sockets.String()}
}

// Environment of the flood process.
const (
	envFloodKeys    = "NEIGHBOURLOAD_A_KEYS" // A's keys, comma-separated, its admin's first
	envFloodProject = "NEIGHBOURLOAD_A_BULK_PROJECT"
)

// runFlood is the flood process: A's attacks on base until its standard
// input closes.
func runFlood(base string) {
	httpc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxIdleConns: 256}}
	var keys []loadkit.Client
	for _, k := range strings.Split(os.Getenv(envFloodKeys), ",") {
		keys = append(keys, loadkit.Client{Base: base, Key: k, HTTP: httpc})
	}
	x := startAttacks(context.Background(), base, keys[0], keys, os.Getenv(envFloodProject))
	stopped := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	out := json.NewEncoder(os.Stdout)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			must(out.Encode(x.report()))
		case <-stopped:
			x.stop()
			must(out.Encode(x.report()))
			return
		}
	}
}

// flood is A's flood process, seen from the measuring one.
type flood struct {
	cmd   *exec.Cmd
	stdin io.Closer
	mu    sync.Mutex
	last  floodReport
	ended chan struct{}
}

// startFlood starts A's flood on base through keys (A's admin's first),
// bulk-creating into project.
func startFlood(base string, keys []loadkit.Client, project string) *flood {
	secrets := make([]string, len(keys))
	for i, k := range keys {
		secrets[i] = k.Key
	}
	self, err := os.Executable()
	must(err)
	cmd := exec.Command(self, "-flood", base, "-a-rate", fmt.Sprint(*flagALimit)) //nolint:gosec // this command itself
	cmd.Env = append(os.Environ(), envFloodKeys+"="+strings.Join(secrets, ","), envFloodProject+"="+project)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(err)
	stdout, err := cmd.StdoutPipe()
	must(err)
	must(cmd.Start())
	f := &flood{cmd: cmd, stdin: stdin, ended: make(chan struct{})}
	go func() {
		defer close(f.ended)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var r floodReport
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				f.mu.Lock()
				f.last = r
				f.mu.Unlock()
			}
		}
	}()
	return f
}

func (f *flood) now() floodReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

// throughput is how many of A's costly reads and bulk creations a second
// were answered 2xx over the next d.
func (f *flood) throughput(d time.Duration) float64 {
	before := f.now().Done
	time.Sleep(d)
	return float64(f.now().Done-before) / d.Seconds()
}

// stop ends the flood and returns its last report.
func (f *flood) stop() floodReport {
	_ = f.stdin.Close()
	<-f.ended
	_ = f.cmd.Wait()
	return f.now()
}
