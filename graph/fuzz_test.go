package graph_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// FuzzGraphQL posts arbitrary documents and variables, and arbitrary
// bodies, through the real GraphQL handler on SQLite in memory: no request
// gets a 500, panics or takes the answer out of the GraphQL shape.
func FuzzGraphQL(f *testing.F) {
	for _, s := range []struct{ q, v string }{
		{`{ me { id } }`, `{}`},
		{`query($p: ID!) { project(id: $p) { id tasks(first: 5) { nodes { id dueAt assignee { id } } } } }`, `{"p":"prj_\u0000"}`},
		{`mutation($p: ID, $in: CreateTaskInput!) { createTask(projectId: $p, input: $in) { id } }`, `{"p":"prj_a","in":{"title":"x","dueAt":"0000-01-01T00:00:00Z"}}`},
		{`mutation($id: ID!, $in: UpdateTaskInput!) { updateTask(id: $id, input: $in) { id } }`, `{"id":"tsk_\u0000","in":{"assigneeId":"usr_\u0000"}}`},
		{`{ node(id: "tsk_\u0000") { id } }`, `null`},
		{`{ projects(after: [[[[1]]]]) { nodes { id } } }`, `{}`},
		{`query($c: String) { projects(first: 1, after: $c) { pageInfo { endCursor } } }`, `{"c":"AAAA"}`},
		{`{ __schema { types { name } } }`, `{}`},
		{`"""`, `[`},
		{`{ me { id } } # [[[`, `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`},
	} {
		f.Add(s.q, s.v)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, "sqlite::memory:")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		f.Fatal(err)
	}
	e := apitest.New(f, db, func(o *httpedge.Options) { o.RateLimit, o.AuthFailureLimit = 1<<30, 1<<30 })
	e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Fuzz", "key": "FUZ"}).ExpectStatus(f, http.StatusCreated)

	f.Fuzz(func(t *testing.T, query, variables string) {
		body := map[string]any{"query": query}
		if json.Valid([]byte(variables)) {
			body["variables"] = json.RawMessage(variables)
		}
		raw, _ := json.Marshal(body)
		send(t, e, string(raw))
		send(t, e, variables) // the second input as a whole body
	})
}

func send(t *testing.T, e *apitest.Env, body string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.Member.Key)
	rec := httptest.NewRecorder()
	e.Engine.ServeHTTP(rec, req)
	var out struct {
		Errors []struct {
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if rec.Code >= 500 || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
		t.Fatalf("%.500q: %d %.1000s", body, rec.Code, rec.Body)
	}
	for _, e := range out.Errors {
		if code := e.Extensions["code"]; code == "internal_error" || code == "service_unavailable" {
			t.Fatalf("%.500q: %s", body, rec.Body)
		}
	}
}
