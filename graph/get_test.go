package graph_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// getGQL sends GET /graphql with the query parameters params, as urql and
// Apollo Client send queries over GET.
func getGQL(t *testing.T, e *apitest.Env, key string, params map[string]string, header map[string]string) *result {
	t.Helper()
	q := url.Values{}
	for k, v := range params {
		q.Set(k, v)
	}
	return decode(t, e.Do(apitest.Request{Method: http.MethodGet, Path: "/graphql?" + q.Encode(), Key: key, Header: header}))
}

// Queries run over GET exactly as over POST (docs/graphql.md#get): urql's
// shape (query, operationName, variables), Apollo's persisted queries
// (extensions with a hash, then the hash alone), the GraphQL response media
// type; a mutation is 405 with Allow: POST and changes nothing; malformed
// variables are validation_failed.
func TestGraphQLOverGET(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		project := createProject(t, e, "GET")
		task := createTask(t, e, project, map[string]any{"title": "Seen over GET"})

		// urql: the document, its operation's name and the variables as JSON.
		const byID = `query TaskByID($id: ID!) { task(id: $id) { id title project { id } } }`
		r := getGQL(t, e, e.Guest.Key, map[string]string{
			"query": byID, "operationName": "TaskByID", "variables": `{"id":"` + task + `"}`,
		}, nil)
		data := r.ok(t)
		if str(data, "task", "id") != task || str(data, "task", "title") != "Seen over GET" || str(data, "task", "project", "id") != project {
			t.Fatalf("task over GET: %s", r.Body)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("Content-Type %q", ct)
		}
		// The rate limit counts it as any request.
		if r.Header.Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("no rate-limit headers: %v", r.Header)
		}
		// operationName picks one of several operations.
		r = getGQL(t, e, e.Guest.Key, map[string]string{
			"query": `query A { me { id } } query B { task(id: "` + task + `") { id } }`, "operationName": "B",
		}, nil)
		if data := r.ok(t); str(data, "task", "id") != task || data["me"] != nil {
			t.Fatalf("operationName B: %s", r.Body)
		}

		// GraphQL's own response type, when asked for.
		r = getGQL(t, e, e.Guest.Key, map[string]string{"query": `{ me { id } }`},
			map[string]string{"Accept": "application/graphql-response+json"})
		r.ok(t)
		if ct := r.Header.Get("Content-Type"); ct != "application/graphql-response+json" {
			t.Fatalf("Content-Type %q, want application/graphql-response+json", ct)
		}

		// Apollo's automatic persisted queries: the hash alone is unknown at
		// first, the query with its hash registers it, then the hash alone
		// runs it.
		const apq = `query Persisted { me { id } }`
		sum := sha256.Sum256([]byte(apq))
		ext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		r = getGQL(t, e, e.Guest.Key, map[string]string{"extensions": ext, "operationName": "Persisted"}, nil)
		if len(r.Errors) != 1 || r.Errors[0].Message != "PersistedQueryNotFound" {
			t.Fatalf("unknown hash: %d %s", r.Status, r.Body)
		}
		getGQL(t, e, e.Guest.Key, map[string]string{"query": apq, "extensions": ext}, nil).ok(t)
		r = getGQL(t, e, e.Guest.Key, map[string]string{"extensions": ext}, nil)
		if data := r.ok(t); str(data, "me", "id") != e.Guest.User.ID {
			t.Fatalf("persisted query by hash: %s", r.Body)
		}

		// A mutation over GET is refused before it runs, even by a key that
		// may run it over POST.
		const mutation = `mutation { createProject(input: {name: "Over GET", key: "OVERGET"}) { id } }`
		r = getGQL(t, e, e.Member.Key, map[string]string{"query": mutation}, nil)
		r.expectHTTPError(t, http.StatusMethodNotAllowed, "method_not_allowed")
		if allow := r.Header.Get("Allow"); allow != http.MethodPost {
			t.Fatalf("Allow %q, want POST", allow)
		}
		// Registered as a persisted query, then sent by hash: still refused.
		sum = sha256.Sum256([]byte(mutation))
		mext := `{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		getGQL(t, e, e.Member.Key, map[string]string{"query": mutation, "extensions": mext}, nil).
			expectHTTPError(t, http.StatusMethodNotAllowed, "method_not_allowed")
		getGQL(t, e, e.Member.Key, map[string]string{"extensions": mext}, nil).
			expectHTTPError(t, http.StatusMethodNotAllowed, "method_not_allowed")
		projects := gql(t, e, e.Member.Key, `{ projects(first: 100) { nodes { key } } }`, nil).ok(t)
		for _, p := range list(projects, "projects", "nodes") {
			if str(p, "key") == "OVERGET" {
				t.Fatal("a mutation sent over GET created its project")
			}
		}

		// Variables and extensions must be JSON objects.
		for _, bad := range []string{`{"id":`, `[1]`, `"x"`, `null`} {
			getGQL(t, e, e.Guest.Key, map[string]string{"query": byID, "variables": bad}, nil).
				expectError(t, "validation_failed", "variables")
			getGQL(t, e, e.Guest.Key, map[string]string{"query": byID, "extensions": bad}, nil).
				expectError(t, "validation_failed", "extensions")
		}
		// Without a query, a non-browser GET is a request error, not GraphiQL.
		r = getGQL(t, e, e.Guest.Key, nil, nil)
		if r.Status != http.StatusUnprocessableEntity || len(r.Errors) != 1 {
			t.Fatalf("GET without a query: %d %s", r.Status, r.Body)
		}
		// A browser's GET with a query runs it rather than serving GraphiQL.
		r = getGQL(t, e, e.Guest.Key, map[string]string{"query": `{ me { id } }`}, map[string]string{"Accept": "text/html,*/*"})
		r.ok(t)

		// Another workspace's key sees none of it over GET either.
		r = getGQL(t, e, e.Other.Key, map[string]string{"query": byID, "variables": `{"id":"` + task + `"}`}, nil)
		r.expectError(t, "resource_not_found", "")
	})
}
