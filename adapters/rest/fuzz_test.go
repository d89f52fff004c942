package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// fuzzEnv is the REST API on a migrated SQLite database in memory, with
// limits high enough that the rate limiter does not answer for the code
// under fuzzing.
func fuzzEnv(f *testing.F) (*apitest.Env, string, string) {
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	e := apitest.New(f, db, func(o *httpedge.Options) {
		o.RateLimit, o.AuthFailureLimit = 1<<30, 1<<30
	})
	res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Fuzz", "key": "FUZ"})
	prj := res.Str("id")
	task := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key, map[string]any{"title": "T"}).Str("id")
	if prj == "" || task == "" {
		f.Fatalf("fixtures: %s", res.Body)
	}
	return e, prj, task
}

// serve sends req through the real router and fails on a 5xx or an answer
// that is not the documented JSON.
func serve(t *testing.T, e *apitest.Env, req *http.Request) int {
	t.Helper()
	rec := httptest.NewRecorder()
	e.Engine.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %s: %d %s", req.Method, req.URL, rec.Code, rec.Body)
	}
	if rec.Code != http.StatusNoContent && !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("%s %s: %d with Content-Type %q", req.Method, req.URL, rec.Code, rec.Header().Get("Content-Type"))
	}
	return rec.Code
}

func request(method, path, rawQuery, key, body string) *http.Request {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	req.URL.Path, req.URL.RawPath, req.URL.RawQuery = path, "", rawQuery
	req.RequestURI = req.URL.RequestURI()
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req
}

// FuzzTaskBodies posts arbitrary bodies to the task create and update
// routes: no body gets a 500.
func FuzzTaskBodies(f *testing.F) {
	for _, s := range []string{
		`{"title":"x"}`, `{"title":"x","status":"done","assignee_id":null,"due_at":"2026-01-02T15:04:05Z"}`,
		`{"title":"x","due_at":"0000-01-01T00:00:00Z"}`, `{"title":"x","due_at":"9999-12-31T23:00:00-01:00"}`,
		`{"title":"x","assignee_id":"usr_\u0000"}`, "{\"title\":\"\xff\"}", `{"title":"a\u0000b"}`,
		`{"status":"archived"}`, `{"status":"open","title":"y"}`, `{"title":1}`, `null`, `{}`, `{"x":1}`,
	} {
		f.Add(s)
	}
	e, prj, task := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, body string) {
		serve(t, e, request(http.MethodPost, "/v1/projects/"+prj+"/tasks", "", e.Member.Key, body))
		serve(t, e, request(http.MethodPatch, "/v1/tasks/"+task, "", e.Member.Key, body))
	})
}

// FuzzPathsAndQueries sends arbitrary path ids and query strings (filters,
// limit, cursor) to the read routes: no request gets a 500.
func FuzzPathsAndQueries(f *testing.F) {
	f.Add("tsk_\x00", "limit=5&cursor=AAAA")
	f.Add("prj_abc", "status=done&assignee_id=usr_%00")
	f.Add("\xff", "cursor=%FF&limit=-1")
	f.Add("whk_a", "limit=99999999999999999999&cursor=")
	f.Add("x/../y", "assignee_id=usr_a&assignee_id=usr_b&status=%00")
	e, prj, task := fuzzEnv(f)
	f.Fuzz(func(t *testing.T, id, rawQuery string) {
		p := url.PathEscape(id)
		for _, path := range []string{"/v1/tasks/" + p, "/v1/projects/" + p, "/v1/projects/" + p + "/tasks", "/v1/webhooks/" + p + "/deliveries"} {
			serve(t, e, request(http.MethodGet, path, rawQuery, e.Admin.Key, ""))
		}
		for _, path := range []string{"/v1/projects/" + prj + "/tasks", "/v1/projects", "/v1/users", "/v1/webhooks", "/v1/tasks/" + task} {
			serve(t, e, request(http.MethodGet, path, rawQuery, e.Admin.Key, ""))
		}
		serve(t, e, request(http.MethodDelete, "/v1/tasks/"+p, rawQuery, e.Member.Key, ""))
	})
}

// FuzzAuthorizationHeader sends arbitrary Authorization headers: the answer
// is the caller's (200) or 401/429, never a 500.
func FuzzAuthorizationHeader(f *testing.F) {
	for _, s := range []string{"Bearer wk_abc", "bearer", "Bearer ", "Basic eA==", "Bearer \x00", "Bearer wk_" + strings.Repeat("a", 40), "Bearer \xff\xfe"} {
		f.Add(s)
	}
	e, _, _ := fuzzEnv(f)
	f.Add("Bearer " + e.Member.Key)
	f.Fuzz(func(t *testing.T, h string) {
		req := request(http.MethodGet, "/v1/users/me", "", "", "")
		req.Header["Authorization"] = []string{h}
		switch code := serve(t, e, req); code {
		case http.StatusOK, http.StatusUnauthorized, http.StatusTooManyRequests:
		default:
			t.Fatalf("Authorization %q: %d", h, code)
		}
	})
}
