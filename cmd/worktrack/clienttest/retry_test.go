package clienttest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/ports"
)

// A request refused with 429 is sent again after the Retry-After the
// server named, not after the client's own (here near-zero) backoff: three
// calls through a limit of two a second take four requests, none of them
// a second refusal. Without retries the 429 comes back as a *client.Error
// with its RetryAfter.
func TestTooManyRequestsIsRetriedAfterRetryAfter(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{}, func(o *httpedge.Options) { o.RateLimit, o.RateWindow = 2, time.Second })
		s.Clock.Run() // the limiter's window moves with the wall clock
		ctx := context.Background()
		counted := &countingTransport{}
		c := client.New(s.URL, s.Env.Member.Key, client.WithHTTPClient(&http.Client{Transport: counted}),
			client.WithBackoff(time.Millisecond, time.Millisecond))
		for range 3 {
			if _, err := c.Users.Me(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n := counted.n.Load(); n != 4 {
			t.Fatalf("%d requests for three calls through a limit of two, want 4 (one 429, retried once after Retry-After)", n)
		}

		once := client.New(s.URL, s.Env.Admin.Key, client.WithMaxRetries(0))
		var err error
		for range 3 {
			if _, err = once.Users.Me(ctx); err != nil {
				break
			}
		}
		e := apiError(t, err, http.StatusTooManyRequests, "too_many_requests")
		if e.RetryAfter < time.Second {
			t.Fatalf("RetryAfter %s, want the server's Retry-After (at least 1s)", e.RetryAfter)
		}
	})
}

// dropFirst serves h, except that the first request matching drop is
// served and its answer lost: the connection closes before a byte of it
// is written, as when a network fails after the server did the work. It
// records the Idempotency-Key of every matching request.
type dropFirst struct {
	h       http.Handler
	drop    func(*http.Request) bool
	dropped atomic.Bool
	mu      sync.Mutex
	keys    []string
}

func (d *dropFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !d.drop(r) {
		d.h.ServeHTTP(w, r)
		return
	}
	d.mu.Lock()
	d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
	d.mu.Unlock()
	if d.dropped.Swap(true) {
		d.h.ServeHTTP(w, r)
		return
	}
	d.h.ServeHTTP(httptest.NewRecorder(), r)
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	_ = conn.Close()
}

// A POST whose connection drops after the server created the task is sent
// again with the same Idempotency-Key, and the task exists once; a DELETE
// whose first attempt deleted the task succeeds on the retry's 404.
// Without retries the network error comes back as it is.
func TestAPostRetriedAfterADroppedConnectionCreatesOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		d := &dropFirst{h: e.Edge, drop: func(r *http.Request) bool {
			return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/tasks")
		}}
		srv := httptest.NewServer(d)
		t.Cleanup(srv.Close)
		ctx := context.Background()
		c := client.New(srv.URL, e.Member.Key, client.WithBackoff(time.Millisecond, time.Millisecond))
		p := must[*client.Project](t)(c.Projects.Create(ctx, client.ProjectCreate{Name: "Drop", Key: "DRP"}))

		task := must[*client.Task](t)(c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Once"}))
		if len(d.keys) != 2 || d.keys[0] == "" || d.keys[0] != d.keys[1] {
			t.Fatalf("Idempotency-Keys of the two attempts: %q, want one key twice", d.keys)
		}
		all := collect(t, c.Tasks.List(ctx, client.TaskListParams{ProjectIDs: []string{p.ID}}))
		if len(all) != 1 || all[0].ID != task.ID {
			t.Fatalf("tasks after a retried create: %+v, want the one answered", all)
		}

		del := &dropFirst{h: e.Edge, drop: func(r *http.Request) bool { return r.Method == http.MethodDelete }}
		dsrv := httptest.NewServer(del)
		t.Cleanup(dsrv.Close)
		dc := client.New(dsrv.URL, e.Member.Key, client.WithBackoff(time.Millisecond, time.Millisecond))
		if err := dc.Tasks.Delete(ctx, task.ID); err != nil {
			t.Fatalf("a delete retried after its first attempt deleted: %v", err)
		}
		_, err := c.Tasks.Get(ctx, task.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")
		// A delete of a task that was never there is still not found.
		expectError(t, dc.Tasks.Delete(ctx, task.ID), http.StatusNotFound, "resource_not_found")

		never := &dropFirst{h: e.Edge, drop: func(r *http.Request) bool { return r.Method == http.MethodPost }}
		nsrv := httptest.NewServer(never)
		t.Cleanup(nsrv.Close)
		_, err = client.New(nsrv.URL, e.Member.Key, client.WithMaxRetries(0)).Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Lost"})
		var apiErr *client.Error
		if err == nil || errors.As(err, &apiErr) {
			t.Fatalf("a dropped connection without retries: %v, want the network error", err)
		}
	})
}

// Errors are *client.Error with the API's code, param and request id.
func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Errors", Key: "ERR"}))

		_, err := s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: ""})
		if e := apiError(t, err, http.StatusBadRequest, "validation_failed"); e.Param != "title" {
			t.Fatalf("param %q, want title", e.Param)
		}
		_, err = s.member.Tasks.CreateMany(ctx, p.ID, []client.TaskCreate{{Title: "fine"}, {Title: ""}})
		if e := apiError(t, err, http.StatusBadRequest, "validation_failed"); e.Param != "tasks[1].title" {
			t.Fatalf("param %q, want tasks[1].title", e.Param)
		}
		if all := collect(t, s.member.Tasks.List(ctx, client.TaskListParams{})); len(all) != 0 {
			t.Fatalf("a refused batch wrote %d tasks", len(all))
		}
		_, err = s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Again", Key: "ERR"})
		if e := apiError(t, err, http.StatusConflict, "resource_already_exists"); e.Param != "key" {
			t.Fatalf("param %q, want key", e.Param)
		}
		_, err = client.New(s.URL, "wt_nosuchkey").Users.Me(ctx)
		expectError(t, err, http.StatusUnauthorized, "invalid_api_key")
		_, err = client.New(s.URL, s.Env.Guest.Key).Projects.Create(ctx, client.ProjectCreate{Name: "Guest", Key: "GST"})
		expectError(t, err, http.StatusForbidden, "permission_denied")
	})
}

// A 503 (here the server's statement deadline stopping a stalled
// statement) is retried after the backoff, and the retry's answer is the
// call's.
func TestServiceUnavailableIsRetried(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Slow", Key: "SLW"}))
		var stalls atomic.Int64
		err := db.Gorm().Callback().Query().Before("gorm:query").Register("test:stall-once", func(tx *gorm.DB) {
			scope, ok := ports.DBScopeOf(tx.Statement.Context)
			if !ok || scope.WorkspaceID != s.Env.Workspace.ID || tx.Error != nil || stalls.Add(1) != 1 {
				return
			}
			<-tx.Statement.Context.Done() // the statement deadline ends it
			_ = tx.AddError(tx.Statement.Context.Err())
		})
		if err != nil {
			t.Fatal(err)
		}
		db.SetBudget(store.Budget{StatementTimeout: 100 * time.Millisecond})
		counted := &countingTransport{}
		c := client.New(s.URL, s.Env.Member.Key, client.WithHTTPClient(&http.Client{Transport: counted}),
			client.WithBackoff(time.Millisecond, time.Millisecond))
		got := must[*client.Project](t)(c.Projects.Get(ctx, p.ID))
		if got.ID != p.ID || counted.n.Load() != 2 {
			t.Fatalf("got %s in %d requests, want it in 2 (a 503, then the retry)", got.ID, counted.n.Load())
		}

		stalls.Store(0)
		_, err = client.New(s.URL, s.Env.Member.Key, client.WithMaxRetries(0)).Projects.Get(ctx, p.ID)
		expectError(t, err, http.StatusServiceUnavailable, "service_unavailable")
	})
}

// A create sent again while its first attempt still runs on the server
// (409 idempotency_key_in_use) is retried, and gets the first attempt's
// task once it has finished: one task.
func TestACreateWhoseFirstAttemptStillRunsIsRetried(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Twice", Key: "TWC"}))
		var stalls atomic.Int64
		stalled, release := make(chan struct{}), make(chan struct{})
		// A keyed create writes its task in the transaction that holds its
		// key, with a written statement (GORM's Exec): hold it there.
		if err := db.Gorm().Callback().Raw().Before("gorm:raw").Register("test:stall-first-task", func(tx *gorm.DB) {
			if !strings.HasPrefix(tx.Statement.SQL.String(), "INSERT INTO tasks ") || stalls.Add(1) != 1 {
				return
			}
			close(stalled)
			<-release
		}); err != nil {
			t.Fatal(err)
		}
		key := client.WithIdempotencyKey(ctx, "twice-"+p.ID)
		first := make(chan *client.Task, 1)
		go func() {
			task, err := s.member.Tasks.Create(key, p.ID, client.TaskCreate{Title: "Once"})
			if err != nil {
				t.Error(err)
			}
			first <- task
		}()
		select {
		case <-stalled:
		case task := <-first:
			t.Fatalf("the first create (%+v) finished without passing the stall: its task is no longer inserted by GORM's Exec", task)
		}
		counted := &statusTransport{}
		// Retries enough to outlast the first attempt on a busy machine.
		c := client.New(s.URL, s.Env.Member.Key, client.WithHTTPClient(&http.Client{Transport: counted}),
			client.WithBackoff(20*time.Millisecond, 20*time.Millisecond), client.WithMaxRetries(500))
		second := make(chan *client.Task, 1)
		go func() {
			task, err := c.Tasks.Create(key, p.ID, client.TaskCreate{Title: "Once"})
			if err != nil {
				t.Error(err)
			}
			second <- task
		}()
		for i := 0; counted.conflicts.Load() == 0; i++ {
			if i == 2000 {
				t.Fatal("the second attempt was never answered 409 idempotency_key_in_use")
			}
			time.Sleep(5 * time.Millisecond)
		}
		close(release)
		a, b := <-first, <-second
		if a == nil || b == nil || a.ID != b.ID {
			t.Fatalf("first %+v, second %+v: want one task", a, b)
		}
		if all := collect(t, s.member.Tasks.List(ctx, client.TaskListParams{ProjectIDs: []string{p.ID}})); len(all) != 1 {
			t.Fatalf("%d tasks, want 1", len(all))
		}
	})
}

// statusTransport counts the 409 answers it passes on.
type statusTransport struct{ conflicts atomic.Int64 }

func (s *statusTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && res.StatusCode == http.StatusConflict {
		s.conflicts.Add(1)
	}
	return res, err
}
