package graph_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/graph/server"
)

// A query over the complexity or depth limit is refused before it runs: 422,
// validation_failed, and not one SQL statement.
func TestLimitsRefuseBeforeAnySQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		counter := storetest.CountStatements(db)
		e := newEnv(t, db, func(o *server.Options) { o.MaxComplexity = 2000; o.MaxDepth = 6 })
		createProject(t, e, "LIM")
		gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t) // warms the key cache

		for _, c := range []struct{ name, query string }{
			// 1 + 100 × (1 + (1 + 20 × 2)) = 4301 > 2000
			{"complexity", `{ projects(first: 100) { nodes { tasks { nodes { id } } } } }`},
			// Query.events weighs as any connection, its nested ones too:
			// 1 + 100 × (1 + (1 + (1 + (1 + 10 × 2)))) = 2401
			{"events", `{ events(first: 100) { nodes { task { project { tasks(first: 10) { nodes { id } } } } } } }`},
			// aliases add up: 5 × (1 + 10 × (1 + (1 + 20 × 2))) = 5 × 431 = 2155
			{"aliases", `{ a: projects(first: 10) { nodes { tasks { nodes { id } } } } b: projects(first: 10) { nodes { tasks { nodes { id } } } }
				c: projects(first: 10) { nodes { tasks { nodes { id } } } } d: projects(first: 10) { nodes { tasks { nodes { id } } } }
				e: projects(first: 10) { nodes { tasks { nodes { id } } } } }`},
			// depth 7 > 6
			{"depth", `{ projects { edges { node { tasks { edges { node { assignee { id } } } } } } } }`},
			// fragments count where they are spread
			{"depth through fragments", `{ projects { ...P } } fragment P on ProjectConnection { edges { node { tasks { ...T } } } }
				fragment T on TaskConnection { edges { node { assignee { id } } } }`},
		} {
			counter.Reset()
			r := gql(t, e, e.Guest.Key, c.query, nil)
			if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
				t.Fatalf("%s: want 422 without data, got %d: %s", c.name, r.Status, r.Body)
			}
			r.expectError(t, "validation_failed", "query")
			if !strings.Contains(r.Errors[0].Message, "exceeds the limit") {
				t.Fatalf("%s: message %q", c.name, r.Errors[0].Message)
			}
			if n := counter.N(); n != 0 {
				t.Fatalf("%s: %d statements ran before the refusal: %v", c.name, n, counter.Statements())
			}
		}
		// Under both limits: depth 6, complexity 1 + 20 × (1 + (1 + 20 × (1 + 2))) = 1241.
		gql(t, e, e.Guest.Key, `{ projects { nodes { tasks { nodes { assignee { id } } } } } }`, nil).ok(t)
		// An out-of-range first is the core's validation error, not a complexity one.
		gql(t, e, e.Guest.Key, `{ projects(first: 100000) { nodes { tasks(first: 100000) { nodes { id } } } } }`, nil).
			expectError(t, "validation_failed", "first")
	})
}

// The defaults let the acceptance query and a typical dashboard query through.
func TestDefaultLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	gql(t, e, e.Guest.Key, nestedQuery, nil).ok(t)
	gql(t, e, e.Guest.Key, `{ projects(first: 20) { edges { cursor node { id name key taskCount updatedAt
		tasks(first: 50) { edges { cursor node { id title status dueAt updatedAt assignee { id name email } project { id key } } } pageInfo { hasNextPage endCursor } } } }
		pageInfo { hasNextPage endCursor } } }`, nil).ok(t)
	deep := `{ projects(first: 1) { nodes { tasks(first: 1) { nodes { project { tasks(first: 1) { nodes { project {
		tasks(first: 1) { edges { node { assignee { id } } } } } } } } } } } } }`
	r := gql(t, e, e.Guest.Key, deep, nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), fmt.Sprintf("limit of %d", server.DefaultMaxDepth)) {
		t.Fatalf("depth 13 must be refused by default: %d %s", r.Status, r.Body)
	}
	wide := `{ projects(first: 100) { nodes { tasks(first: 100) { nodes { id title status } } } } }`
	r = gql(t, e, e.Guest.Key, wide, nil)
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), fmt.Sprintf("limit of %d", server.DefaultMaxComplexity)) {
		t.Fatalf("100 × 100 tasks must be refused by default: %d %s", r.Status, r.Body)
	}
}

// introspectionQuery is graphql-js's getIntrospectionQuery(), what GraphiQL
// sends.
const introspectionQuery = `
query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}`

// The acceptance query weighs 1 + 20 × (1 + (1 + 50 × (1 + 2 + 2))) = 5041
// (docs/graphql.md): a limit of 5041 lets it through, 5040 refuses it.
func TestComplexityOfTheNestedQuery(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t)
	at := newEnv(t, db, func(o *server.Options) { o.MaxComplexity = 5041 })
	gql(t, at, at.Guest.Key, nestedQuery, nil).ok(t)
	below := newEnv(t, db, func(o *server.Options) { o.MaxComplexity = 5040 })
	r := gql(t, below, below.Guest.Key, nestedQuery, nil)
	r.expectError(t, "validation_failed", "query")
	if !strings.Contains(r.Errors[0].Message, "complexity 5041") {
		t.Fatalf("message: %s", r.Body)
	}
}

// Counts and searches are weighed by what they read: at the default limit
// the documents of many counting or searching aliases that held a database
// for minutes are refused before any statement, while a dashboard's few
// counts, a count read from the projects' counters and a search pass.
func TestCountsAndSearchesAreWeighedByWhatTheyRead(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		counter := storetest.CountStatements(db)
		e := newEnv(t, db)
		createProject(t, e, "WGT")
		gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t) // warms the key cache
		aliases := func(n int, field string) string {
			var b strings.Builder
			b.WriteString("{ ")
			for i := range n {
				fmt.Fprintf(&b, "a%d: %s ", i, field)
			}
			return b.String() + "}"
		}
		search := `taskCounts(groupBy: PROJECT, filter: {query: "a"}) { total groups { key count } }`
		byAssignee := `taskCounts(groupBy: ASSIGNEE) { total groups { key count } }`
		for name, query := range map[string]string{
			"60 searching counts":      aliases(60, search),
			"120 counts by assignee":   aliases(120, byAssignee),
			"26 counts by assignee":    aliases(26, byAssignee),
			"30 searches of 100 tasks": aliases(30, `tasks(first: 100, filter: {query: "a"}) { nodes { id } }`),
			"100 projects' searches":   `{ projects(first: 100) { nodes { tasks(first: 1, filter: {query: "a"}) { nodes { id } } } } }`,
		} {
			counter.Reset()
			r := gql(t, e, e.Guest.Key, query, nil)
			if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
				t.Fatalf("%s: want 422 without data, got %d: %s", name, r.Status, r.Body)
			}
			r.expectError(t, "validation_failed", "query")
			if n := counter.N(); n != 0 {
				t.Fatalf("%s: %d statements ran before the refusal", name, n)
			}
		}
		for name, query := range map[string]string{
			"a dashboard's counts":  "{ mine: " + byAssignee + " open: " + search + " all: " + byAssignee + " }",
			"24 counts by assignee": aliases(24, byAssignee),
			"counts from counters":  aliases(200, `taskCounts(groupBy: STATUS, filter: {projectIds: ["prj_x"]}) { total }`),
			"a search":              `{ tasks(first: 100, filter: {query: "wri ann"}) { nodes { id title } } }`,
		} {
			if r := gql(t, e, e.Guest.Key, query, nil); r.Status != http.StatusOK || len(r.Errors) != 0 {
				t.Fatalf("%s: want 200 without errors, got %d: %s", name, r.Status, r.Body)
			}
		}
	})
}
