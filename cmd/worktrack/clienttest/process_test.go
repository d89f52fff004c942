package clienttest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// binary is the worktrack binary these tests run as a real process, built
// once per test binary.
var binary struct {
	once      sync.Once
	dir, path string
	err       error
}

func buildBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "worktrack-clienttest-"); binary.err == nil {
			binary.path, binary.err = proctest.Build(binary.dir)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// freeAddr is a loopback address nothing listens on now, so that a
// restarted server can take the address its clients know.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// Follow runs through a server that is killed and started again: it
// retries with backoff until the server answers, then goes on from the
// last event it yielded, so it yields every event of the log exactly once
// and in log order, those committed before, during and after the outage.
// On both databases.
func TestFollowAcrossARestart(t *testing.T) {
	bin := buildBinary(t)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			url := "sqlite:" + filepath.Join(t.TempDir(), "follow.db")
			if kind == "postgres" {
				url = storetest.PostgresURL(t)
			}
			env := []string{"DATABASE_URL=" + url, "WORKTRACK_ADDR=" + freeAddr(t), "WORKTRACK_RATE_LIMIT=1000000"}
			p := proctest.Serve(t, bin, t.TempDir(), env...)
			key := proctest.SecretRe.FindString(p.Stderr.String())
			c := client.New(p.Base, key)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			prj, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Follow", Key: "FOLLOW"})
			if err != nil {
				t.Fatal(err)
			}

			followed := make(chan client.Event, 1000)
			fctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				defer close(followed)
				for e, err := range c.Events.Follow(fctx, client.EventListParams{ListParams: client.ListParams{PageSize: 7}}, 20*time.Millisecond) {
					if err != nil {
						done <- err
						return
					}
					followed <- e
				}
				done <- nil
			}()
			create := func(from, to int) {
				for i := from; i < to; i++ {
					if _, err := c.Tasks.Create(ctx, prj.ID, client.TaskCreate{Title: fmt.Sprint("task ", i)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			var got []client.Event
			await := func(n int) {
				for len(got) < n {
					select {
					case e, ok := <-followed:
						if !ok {
							t.Fatalf("Follow ended after %d events: %v", len(got), <-done)
						}
						got = append(got, e)
					case <-ctx.Done():
						t.Fatalf("Follow yielded %d of %d events", len(got), n)
					}
				}
			}

			create(0, 20)
			await(21) // the project's event and 20 tasks'
			p.Kill(t)
			// The server stays down longer than the client's own retries
			// of one request last (3 of them, up to 4 s apart): Follow
			// keeps trying all the same.
			time.Sleep(5 * time.Second)
			p = proctest.Serve(t, bin, t.TempDir(), env...)
			create(20, 45)
			await(46)
			stop()
			if err := <-done; err != nil {
				t.Fatalf("Follow ended with %v", err)
			}
			for range followed {
				t.Fatal("Follow yielded more events than the log holds")
			}

			var log []string
			for e, err := range c.Events.List(ctx, client.EventListParams{}) {
				if err != nil {
					t.Fatal(err)
				}
				log = append(log, e.ID)
			}
			if len(log) != len(got) {
				t.Fatalf("followed %d events, the log holds %d", len(got), len(log))
			}
			for i := range log {
				if got[i].ID != log[i] {
					t.Fatalf("event %d: followed %s, the log has %s", i, got[i].ID, log[i])
				}
			}
			if code := p.Stop(t); code != 0 {
				t.Fatalf("exit code after SIGTERM: %d", code)
			}
		})
	}
}

// Twenty callers sharing one key limited to 5 requests per 2 seconds all
// get through, each within its deadline: each retries its 429s after the
// server's Retry-After, spread apart by the client's jitter, for as long as
// its deadline allows.
func TestCallersAtASmallLimitAllGetThrough(t *testing.T) {
	bin := buildBinary(t)
	p := proctest.Serve(t, bin, t.TempDir(), "DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "limit.db"),
		"WORKTRACK_RATE_LIMIT=5", "WORKTRACK_RATE_WINDOW=2s")
	key := proctest.SecretRe.FindString(p.Stderr.String())
	c := client.New(p.Base, key, client.WithRetryUntilDeadline())
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_, err := c.Users.Me(ctx)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a caller failed: %v", err)
		}
	}
	t.Logf("20 callers at 5 requests per 2 s: all answered in %v", time.Since(start).Round(100*time.Millisecond))
	if code := p.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d", code)
	}
}
