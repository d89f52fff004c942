package rest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
)

// slowSQL keeps a connection busy while it counts to n, on either database.
// It stands in for a slow page, so that a client's short deadline falls
// while the request's statement runs. PostgreSQL gives way about 100 ms
// after the query's context ends (pgx then sends a cancel request, and the
// connection stays in the pool); the SQLite driver
// (glebarez/go-sqlite) interrupts only a statement still being prepared, so
// there the statement runs to its end and database/sql then reports the
// cancellation: its count is kept small.
func slowSQL(db *store.DB) string {
	n := "5000000"
	switch {
	case db.Dialect() == store.DialectSQLite && raceEnabled:
		n = "5000"
	case db.Dialect() == store.DialectSQLite:
		n = "100000"
	}
	return `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ` + n + `) SELECT count(*) FROM c`
}

// slowQueries makes every query of db run slowSQL first, on the same pool and
// under the same context, while on is set: the request's own statements are
// then interrupted mid-flight exactly as a slow one of theirs would be.
// interrupted counts the slow statements that started while their context
// was live and ended in an error: those cancelled mid-query.
func slowQueries(t *testing.T, db *store.DB, on *atomic.Bool, interrupted *atomic.Int64) {
	t.Helper()
	query := slowSQL(db)
	err := db.Gorm().Callback().Query().Before("gorm:query").Register("test:slow", func(tx *gorm.DB) {
		if !on.Load() || tx.Error != nil {
			return
		}
		ctx := tx.Statement.Context
		live := ctx.Err() == nil
		rows, err := tx.Statement.ConnPool.QueryContext(ctx, query)
		if err == nil {
			for rows.Next() { //nolint:revive // draining: the count is not needed
			}
			err = errors.Join(rows.Err(), rows.Close())
		}
		if err != nil {
			if live {
				interrupted.Add(1)
			}
			_ = tx.AddError(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// logLine is the part of a JSON log line the test checks.
type logLine struct {
	Level  string `json:"level"`
	Msg    string `json:"msg"`
	Status int    `json:"status"`
	Path   string `json:"path"`
}

func logLines(t *testing.T, raw []byte) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// docs/api.md#under-load-and-faults: clients that disconnect while their query runs are
// logged as 499 at info, never as a server error, and leave no broken
// connection in the pool: the requests that follow, and the webhook
// dispatcher, meet no error. On both databases, through a real HTTP server
// and client.
func TestClientDisconnectMidQuery(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		prj := newProject(t, e, "CNC")
		var tasks []string
		for i := range 5 {
			tasks = append(tasks, newTask(t, e, prj, map[string]any{"title": "Task " + string(rune('A'+i))}).Str("id"))
		}
		rc := newReceiver(t, nil)
		hook := newWebhook(t, e, rc.URL(), "project.created")
		// Authenticate the keys once, so that the slow phase meets them
		// cached and reaches the handlers' own queries.
		e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, http.StatusOK)

		var slow atomic.Bool
		var interrupted atomic.Int64
		slowQueries(t, db, &slow, &interrupted)
		slow.Store(true)
		// GraphQL stands on the same edge, and its answers to a client gone
		// mid-query are held to the same rule.
		gqlBody, _ := json.Marshal(map[string]string{"query": fmt.Sprintf(`{ project(id: %q) { key tasks(first: 100) { nodes { id title } } } }`, prj)})
		requests := []func(ctx context.Context, base string) *http.Request{
			getRequest("/v1/tasks/" + tasks[0]),
			getRequest("/v1/projects/" + prj + "/tasks?limit=100"),
			getRequest("/v1/projects/" + prj),
			func(ctx context.Context, base string) *http.Request {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", bytes.NewReader(gqlBody))
				req.Header.Set("Content-Type", "application/json")
				return req
			},
		}
		srv := httptest.NewServer(e.Edge)
		// Rounds of concurrent requests whose deadlines double from 5ms,
		// until some statement was cancelled mid-query: on a slow machine
		// the first deadlines may all fall before the statements start.
		const clients, maxRounds = 16, 12
		var wg sync.WaitGroup
		var answered, sent atomic.Int64
		for round := 0; round < 2 || interrupted.Load() == 0; round++ {
			if round == maxRounds {
				t.Fatalf("no statement was cancelled mid-query in %d rounds (%d of %d requests answered)", maxRounds, answered.Load(), sent.Load())
			}
			deadline := 5 * time.Millisecond << min(round, 8)
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithTimeout(context.Background(), deadline+time.Duration(c)*time.Millisecond)
					defer cancel()
					req := requests[(c+round)%len(requests)](ctx, srv.URL)
					req.Header.Set("Authorization", "Bearer "+e.Member.Key)
					sent.Add(1)
					if res, err := srv.Client().Do(req); err == nil {
						_, _ = io.Copy(io.Discard, res.Body)
						_ = res.Body.Close()
						answered.Add(1)
					}
				}()
			}
			wg.Wait()
		}
		// Close waits for every handler to return, so every access log line
		// of the slow phase is written by now.
		srv.Close()
		slow.Store(false)

		var cancelled int
		for _, l := range logLines(t, e.Logs.Bytes()) {
			if l.Level == "ERROR" || l.Status >= 500 {
				t.Errorf("a client's disconnect was logged as a server error: %+v\n%s", l, e.Logs.Bytes())
			}
			if l.Msg == "request" && l.Status == 499 {
				if l.Level != "INFO" {
					t.Errorf("499 logged at %s, want INFO", l.Level)
				}
				cancelled++
			}
		}
		if cancelled == 0 {
			t.Fatalf("no request was logged as 499:\n%s", e.Logs.Bytes())
		}

		// Every connection the pool holds answers, and the requests that
		// follow meet no error, as many at once as the pool has connections.
		sqlDB, err := db.Gorm().DB()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for range 3 {
			var conns []interface{ Close() error }
			for range sqlDB.Stats().Idle {
				conn, err := sqlDB.Conn(ctx)
				if err != nil {
					t.Fatalf("conn after the cancellations: %v", err)
				}
				if err := conn.PingContext(ctx); err != nil {
					t.Fatalf("a pooled connection is broken after the cancellations: %v", err)
				}
				var one int
				if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
					t.Fatalf("a pooled connection is broken after the cancellations: %v", err)
				}
				conns = append(conns, conn)
			}
			for _, c := range conns {
				_ = c.Close()
			}
		}
		srv2 := httptest.NewServer(e.Edge)
		const rounds = 4
		errs := make(chan string, clients*rounds)
		for c := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := range rounds {
					req := requests[(c+r)%len(requests)](ctx, srv2.URL)
					req.Header.Set("Authorization", "Bearer "+e.Member.Key)
					res, err := srv2.Client().Do(req)
					if err != nil {
						errs <- err.Error()
						continue
					}
					body, _ := io.ReadAll(res.Body)
					_ = res.Body.Close()
					if res.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"errors"`)) {
						errs <- res.Status + " " + string(body)
					}
				}
			}()
		}
		wg.Wait()
		srv2.Close()
		close(errs)
		for msg := range errs {
			t.Errorf("a request after the cancellations failed: %s", msg)
		}

		// The dispatcher, on the same pool, delivers without error.
		dlog := &lockedWriter{}
		e.RunDispatcher(t, app.DispatcherOptions{
			Policy: testPolicy(5 * time.Second),
			Logger: slog.New(slog.NewJSONHandler(dlog, nil)),
		})
		newProject(t, e, "AFT")
		for len(rc.Requests()) < 1 {
			<-rc.changed
		}
		for {
			ds := deliveries(t, e, hook.Str("id"), "")
			if len(ds) == 1 && ds[0]["status"] == "succeeded" {
				if ds[0]["attempts"] != 1.0 {
					t.Fatalf("delivered after %v attempts, want 1", ds[0]["attempts"])
				}
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := dlog.String(); strings.Contains(got, `"level":"ERROR"`) {
			t.Fatalf("the dispatcher logged errors:\n%s", got)
		}
		for _, l := range logLines(t, e.Logs.Bytes()) {
			if l.Level == "ERROR" || l.Status >= 500 {
				t.Errorf("server error after the cancellations: %+v", l)
			}
		}
	})
}

// getRequest makes GET requests of path.
func getRequest(path string) func(ctx context.Context, base string) *http.Request {
	return func(ctx context.Context, base string) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		return req
	}
}

// lockedWriter is a buffer that goroutines write and the test reads.
type lockedWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
