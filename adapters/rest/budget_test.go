package rest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/metrics"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// The database budget over HTTP: a request whose statement runs past the
// deadline is answered 503 service_unavailable (never a 500) and counted as
// statement_timeout; a workspace past its share and its queue is answered
// 429 with Retry-After, counted as database_share, while another
// workspace's requests are served.
func TestDatabaseBudgetOverHTTP(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		m := metrics.New()
		e := apitest.New(t, db, func(o *httpedge.Options) { o.Observer = m })
		prj := newProject(t, e, "BDG")
		e.Get("/v1/projects", e.Other.Key).ExpectStatus(t, http.StatusOK) // warms Globex's key
		var on atomic.Bool
		var stalled atomic.Int64
		release := make(chan struct{})
		apitest.StallWorkspace(t, db, e.Workspace.ID, &on, release, &stalled)
		on.Store(true)

		db.SetBudget(store.Budget{StatementTimeout: 200 * time.Millisecond})
		res := e.Get("/v1/projects", e.Member.Key)
		res.ExpectError(t, http.StatusServiceUnavailable, "service_unavailable", "")
		if msg := res.ErrorField("message"); !strings.Contains(msg, "deadline") {
			t.Errorf("message %q does not say the deadline stopped it", msg)
		}
		if n := refusals(t, m, "statement_timeout"); n != 1 {
			t.Errorf("statement_timeout refusals: %v, want 1", n)
		}

		// Acme's share is one statement and no queue: with one request
		// stalled, the next is refused at once.
		db.SetBudget(store.Budget{StatementTimeout: time.Minute, WorkspaceShare: 1, WorkspaceQueue: 0})
		srv := httptest.NewServer(e.Edge)
		defer srv.Close()
		held := make(chan int, 1)
		stalled.Store(0)
		go func() {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/projects", nil)
			req.Header.Set("Authorization", "Bearer "+e.Member.Key)
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				held <- 0
				return
			}
			_ = res.Body.Close()
			held <- res.StatusCode
		}()
		for i := 0; stalled.Load() == 0; i++ {
			if i == 1000 {
				t.Fatal("the first request never reached its statement")
			}
			time.Sleep(5 * time.Millisecond)
		}
		refused := e.Get("/v1/projects", e.Admin.Key)
		refused.ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		if refused.Header.Get("Retry-After") != "1" {
			t.Errorf("429 for the database share: Retry-After %q, want 1", refused.Header.Get("Retry-After"))
		}
		if n := refusals(t, m, "database_share"); n != 1 {
			t.Errorf("database_share refusals: %v, want 1", n)
		}
		// A task's creation takes a slot too (PostgreSQL's one statement,
		// SQLite's transaction), and writes nothing when refused one.
		e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Admin.Key, map[string]any{"title": "Held"}).
			ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		if n := refusals(t, m, "database_share"); n != 2 {
			t.Errorf("database_share refusals after a create: %v, want 2", n)
		}
		// Globex is served meanwhile, and Acme's held request once it ends.
		e.Get("/v1/projects", e.Other.Key).ExpectStatus(t, http.StatusOK)
		close(release)
		if code := <-held; code != http.StatusOK {
			t.Errorf("the held request: %d", code)
		}
	})
}

// refusals is the worktrack_refusals_total of reason that m serves.
func refusals(t *testing.T, m *metrics.Metrics, reason string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	prefix := `worktrack_refusals_total{reason="` + reason + `"} `
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no refusals sample for %s", reason)
	return 0
}

// A POST refused for its workspace's share of the database still releases
// its Idempotency-Key, though the share is full when it does: the same
// request sent again runs (201), rather than finding the key "still
// running" (409) until the key's lease lapses.
func TestARefusedPostReleasesItsIdempotencyKeyWithTheShareFull(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := newProject(t, e, "IDM")
		var on atomic.Bool
		var stalled atomic.Int64
		release := make(chan struct{})
		apitest.StallWorkspace(t, db, e.Workspace.ID, &on, release, &stalled)
		db.SetBudget(store.Budget{StatementTimeout: 300 * time.Millisecond, WorkspaceShare: 1, WorkspaceQueue: 1})
		// The task's insert fails (as a refusal would); before it ends, a
		// read of the workspace queues for the slot, takes it when the
		// insert's transaction ends, and holds it while the POST records
		// its outcome.
		held := make(chan int, 1)
		var failOnce atomic.Bool
		refuse := func(sql string) error {
			if !strings.Contains(sql, "INSERT INTO tasks ") || !failOnce.CompareAndSwap(false, true) {
				return nil
			}
			on.Store(true)
			go func() { held <- e.Get("/v1/projects", e.Member.Key).Status }()
			// Refuse only once the read waits for the slot this statement
			// holds: ending, the statement hands the slot straight to it.
			for waited := time.Duration(0); db.QueuedStatements(e.Workspace.ID) == 0; waited += time.Millisecond {
				if waited > 10*time.Second {
					t.Error("the read never queued for the workspace's slot")
					break
				}
				time.Sleep(time.Millisecond)
			}
			return errors.New("refused for the test")
		}
		// SQLite inserts the task through GORM in a transaction;
		// PostgreSQL in one statement of its own (store.TaskStore.CreateTaskLogged).
		err := db.Gorm().Callback().Raw().Before("gorm:raw").Register("test:refuse-first-task", func(tx *gorm.DB) {
			if err := refuse(tx.Statement.SQL.String()); err != nil {
				_ = tx.AddError(err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		db.InterceptRawStatements(func(_ context.Context, sql string) error { return refuse(sql) })
		send := func() *apitest.Response {
			return e.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects/" + prj + "/tasks", Key: e.Member.Key,
				Body: map[string]any{"title": "Once"}, Header: map[string]string{"Idempotency-Key": "refused-then-retried"}})
		}
		if res := send(); res.Status < 400 {
			t.Fatalf("the first attempt: %d, want a failure", res.Status)
		}
		on.Store(false)
		close(release)
		<-held
		res := send()
		res.ExpectStatus(t, http.StatusCreated)
	})
}
