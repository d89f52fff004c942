package rest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/httpedge"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// BenchmarkGetProject measures the authenticated GET /v1/projects/{id} path
// end to end through the router on PostgreSQL: key resolution (cached),
// rate limit (in process), one SQL statement for the project.
func BenchmarkGetProject(b *testing.B) {
	e := apitest.New(b, storetest.Postgres(b), apitestHighLimit)
	res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Bench", "key": "BENCH"})
	path := "/v1/projects/" + res.Str("id")
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+e.Member.Key)
	e.Engine.ServeHTTP(httptest.NewRecorder(), req) // warm the key cache
	counter := storetest.CountStatements(e.DB)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		e.Engine.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(counter.N())/float64(b.N), "sql/op")
}

func apitestHighLimit(o *httpedge.Options) { o.RateLimit = 1 << 30 }

// TestGetProjectIssuesOneStatement pins the hot path: once the key is cached
// an authenticated read of a project is exactly one SQL statement.
func TestGetProjectIssuesOneStatement(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		path := "/v1/projects/" + e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "One", "key": "ONE"}).Str("id")
		e.Get(path, e.Member.Key).ExpectStatus(t, 200)
		counter := storetest.CountStatements(db)
		for i := 0; i < 10; i++ {
			e.Get(path, e.Member.Key).ExpectStatus(t, 200)
		}
		if counter.N() != 10 {
			t.Fatalf("want 1 statement per request, got %d for 10: %v", counter.N(), counter.Statements())
		}
	})
}

// seedTasks inserts n tasks into a project in one statement, one
// millisecond apart, and returns the project id.
func seedTasks(tb testing.TB, e *apitest.Env, n int) string {
	tb.Helper()
	prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Big", "key": "BIG"}).Str("id")
	// The status counters' triggers are off for the insertion (n updates of
	// one project row in one transaction would take minutes); the counts
	// are set after it.
	err := e.DB.Gorm().Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SET LOCAL session_replication_role = replica").Error; err != nil {
			return err
		}
		return tx.Exec(`
		INSERT INTO tasks (id, workspace_id, project_id, title, status, assignee_id, due_at, created_at, updated_at)
		SELECT 'tsk_' || lpad(g::text, 22, '0'), ?, ?, 'Task ' || g,
		       CASE WHEN g % 4 = 0 THEN 'done' ELSE 'open' END, NULL, NULL,
		       TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 millisecond',
		       TIMESTAMPTZ '2026-01-01 00:00:00+00' + g * INTERVAL '1 millisecond'
		FROM generate_series(1, ?) AS g`, e.Workspace.ID, prj, n).Error
	})
	if err != nil {
		tb.Fatal(err)
	}
	if err := e.DB.Gorm().Exec(`UPDATE projects SET task_count = ?, open_count = ?, done_count = ? WHERE id = ?`, n, n-n/4, n/4, prj).Error; err != nil {
		tb.Fatal(err)
	}
	if err := e.DB.Gorm().Exec(`ANALYZE tasks`).Error; err != nil {
		tb.Fatal(err)
	}
	return prj
}

// deepCursor is the cursor a client holds after reading the first nth tasks
// of the unfiltered list. Only the core knows a list's scope, so the cursor
// is reached the way a client reaches it: page by page, 100 at a time.
func deepCursor(tb testing.TB, e *apitest.Env, prj string, nth int) string {
	tb.Helper()
	cursor := ""
	for read := 0; read < nth; {
		n := min(domain.MaxPageLimit, nth-read)
		res := e.Get(fmt.Sprintf("/v1/projects/%s/tasks?limit=%d&cursor=%s", prj, n, cursor), e.Member.Key)
		next, _ := res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			tb.Fatalf("the list ended before task %d: %.200s", nth, res.Body)
		}
		cursor, read = next, read+n
	}
	return cursor
}

// BenchmarkListTasks lists 20 tasks of a project holding 100,000, at the
// first page and 4,000 pages deep: keyset pagination makes both cost the same.
func BenchmarkListTasks(b *testing.B) {
	e := apitest.New(b, storetest.Postgres(b), apitestHighLimit)
	prj := seedTasks(b, e, 100_000)
	base := "/v1/projects/" + prj + "/tasks?limit=20"
	for _, tc := range []struct{ name, url string }{
		{"first_page", base},
		{"page_4000", base + "&cursor=" + deepCursor(b, e, prj, 4000*20)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, tc.url, nil)
			req.Header.Set("Authorization", "Bearer "+e.Member.Key)
			e.Engine.ServeHTTP(httptest.NewRecorder(), req)
			counter := storetest.CountStatements(e.DB)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				rec := httptest.NewRecorder()
				e.Engine.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"has_more":true`) {
					b.Fatalf("status %d: %.200s", rec.Code, rec.Body)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(counter.N())/float64(b.N), "sql/op")
		})
	}
}
