package graph_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

// badIDs cannot be ids: NUL bytes and invalid UTF-8 (refused by
// PostgreSQL outright), other characters, too long.
func badIDs(prefix string) []string {
	return []string{prefix + "_\x00", prefix + "_a\x00b", "\x00", prefix + "_a-b", prefix + "_é", prefix + "_" + strings.Repeat("a", 65)}
}

// TestIllFormedIDsInGraphQL: an id that cannot be one is answered like an
// absent id: resource_not_found for ids of arguments, validation_failed for
// references in inputs and filters.
func TestIllFormedIDsInGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "BAD")
		task := str(get(gql(t, e, e.Member.Key, `mutation($p: ID) { createTask(projectId: $p, input: {title: "T"}) { id } }`,
			map[string]any{"p": prj}).ok(t), "createTask"), "id")
		notFound := []struct{ query, prefix string }{
			{`query($id: ID!) { project(id: $id) { id } }`, "prj"},
			{`query($id: ID!) { task(id: $id) { id } }`, "tsk"},
			{`query($id: ID!) { webhook(id: $id) { id } }`, "whk"},
			{`query($id: ID!) { node(id: $id) { id } }`, "tsk"},
			{`mutation($id: ID!) { updateProject(id: $id, input: {name: "N"}) { id } }`, "prj"},
			{`mutation($id: ID!) { updateTask(id: $id, input: {title: "N"}) { id } }`, "tsk"},
			{`mutation($id: ID!) { deleteTask(id: $id) }`, "tsk"},
			{`mutation($id: ID) { createTask(projectId: $id, input: {title: "T"}) { id } }`, "prj"},
			{`mutation($id: ID!) { deleteWebhook(id: $id) }`, "whk"},
			{`mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }`, "whk"},
		}
		for _, c := range notFound {
			for _, id := range badIDs(c.prefix) {
				gql(t, e, e.Admin.Key, c.query, map[string]any{"id": id}).expectError(t, "resource_not_found", "")
			}
		}
		for _, id := range badIDs("usr") {
			gql(t, e, e.Member.Key, `mutation($p: ID, $a: ID) { createTask(projectId: $p, input: {title: "T", assigneeId: $a}) { id } }`,
				map[string]any{"p": prj, "a": id}).expectError(t, "validation_failed", "assigneeId")
			gql(t, e, e.Member.Key, `mutation($id: ID!, $a: ID) { updateTask(id: $id, input: {assigneeId: $a}) { id } }`,
				map[string]any{"id": task, "a": id}).expectError(t, "validation_failed", "assigneeId")
			gql(t, e, e.Member.Key, `query($p: ID!, $a: ID) { project(id: $p) { tasks(assigneeId: $a) { nodes { id } } } }`,
				map[string]any{"p": prj, "a": id}).expectError(t, "validation_failed", "assigneeId")
			gql(t, e, e.Member.Key, `query($a: ID) { projects { nodes { tasks(assigneeId: $a) { nodes { id } } } } }`,
				map[string]any{"a": id}).expectError(t, "validation_failed", "assigneeId")
		}
		forged := domain.EncodeCursor("projects:"+e.Workspace.ID, domain.Position{At: time.Now(), ID: "prj_\x00"})
		for _, c := range []string{forged, "\x00", "AAAA\x00"} {
			gql(t, e, e.Member.Key, `query($c: String) { projects(after: $c) { nodes { id } } }`, map[string]any{"c": c}).
				expectError(t, "validation_failed", "after")
		}
	})
}

// TestDueAtOutsideStorableYearsInGraphQL: the REST rule, through GraphQL.
func TestDueAtOutsideStorableYearsInGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "DUE")
		create := `mutation($p: ID, $d: DateTime) { createTask(projectId: $p, input: {title: "T", dueAt: $d}) { id dueAt } }`
		update := `mutation($id: ID!, $d: DateTime) { updateTask(id: $id, input: {dueAt: $d}) { id dueAt } }`
		task := str(get(gql(t, e, e.Member.Key, create, map[string]any{"p": prj, "d": "9999-12-31T22:59:59.999999-01:00"}).ok(t), "createTask"), "id")
		for _, d := range []string{"0000-01-01T00:00:00Z", "0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-01:00"} {
			gql(t, e, e.Member.Key, create, map[string]any{"p": prj, "d": d}).expectError(t, "validation_failed", "dueAt")
			gql(t, e, e.Member.Key, update, map[string]any{"id": task, "d": d}).expectError(t, "validation_failed", "dueAt")
			r := gql(t, e, e.Member.Key, `mutation($id: ID!) { updateTask(id: $id, input: {dueAt: "`+d+`"}) { id } }`, map[string]any{"id": task})
			r.expectError(t, "validation_failed", "dueAt")
		}
		got := gql(t, e, e.Guest.Key, `query($id: ID!) { task(id: $id) { dueAt } }`, map[string]any{"id": task}).ok(t)
		if str(got, "task", "dueAt") != "9999-12-31T23:59:59.999999Z" {
			t.Fatalf("read back: %v", got)
		}
	})
}

// TestDocumentLimits: a document's parsing cost is bounded before it is
// parsed. Too large, too many tokens or nested too deep is 422
// validation_failed (param query) at once, with a short message that does
// not echo the document; deep variables likewise, naming the variable.
func TestDocumentLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t)
	deepList := `query { projects(after: ` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `) { nodes { id } } }`
	// Each is refused by the scan that runs before the parser (its message,
	// not a parse error, proves it), so no document reaches the parser's
	// super-linear path; no wall-clock bound is needed to show it.
	const nesting, tokens, size = "may nest at most", "tokens", "bytes"
	for _, c := range []struct{ name, query, want string }{
		{"nested list literal", deepList, size},
		{"nested list literal under the size limit", `query { projects(after: ` + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + `) { nodes { id } } }`, nesting},
		{"nested braces", strings.Repeat("{ me ", 70) + strings.Repeat("}", 70), nesting},
		{"nested object literal", `{ projects(after: ` + strings.Repeat("{a:", 65) + "1" + strings.Repeat("}", 65) + `) { nodes { id } } }`, nesting},
		{"too many tokens", `{ ` + strings.Repeat("me { id } ", server.MaxQueryTokens/4) + `}`, tokens},
		{"too large", `{ me { id } } #` + strings.Repeat("x", server.MaxQueryBytes), size},
		{"many aliases", `{ ` + strings.Repeat("a: __typename ", server.MaxQueryTokens/3+1) + `}`, tokens},
	} {
		r := gql(t, e, e.Guest.Key, c.query, nil)
		if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
			t.Fatalf("%s: want 422 without data, got %d: %.300s", c.name, r.Status, r.Body)
		}
		got := r.expectError(t, "validation_failed", "query")
		if !strings.Contains(got.Message, c.want) {
			t.Fatalf("%s: want the pre-parse refusal (%q), got %q", c.name, c.want, got.Message)
		}
		if len(r.Body) > 600 {
			t.Fatalf("%s: answer of %d bytes echoes the document: %.300s", c.name, len(r.Body), r.Body)
		}
	}

	// Brackets in strings, block strings and comments are not nesting.
	noise := strings.Repeat("[{(", 200)
	gql(t, e, e.Guest.Key, "# "+noise+"\n{ me { id } }", nil).ok(t)
	r := gql(t, e, e.Guest.Key, `query { projects(after: "`+noise+`") { nodes { id } } }`, nil)
	r.expectError(t, "validation_failed", "after")
	r = gql(t, e, e.Guest.Key, `query { projects(after: """`+noise+` \""" `+noise+`""") { nodes { id } } }`, nil)
	r.expectError(t, "validation_failed", "after")

	// Deep variables: the variable is named.
	var deep any = "x"
	for i := 0; i < server.MaxVariablesNesting+1; i++ {
		deep = []any{deep}
	}
	r = gql(t, e, e.Guest.Key, `query($v: String) { projects(after: $v) { nodes { id } } }`, map[string]any{"v": deep})
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("deep variables: want 422, got %d: %.300s", r.Status, r.Body)
	}
	r.expectError(t, "validation_failed", "v")
	// As deep as allowed is only the variable's type error.
	var ok any = "x"
	for i := 0; i < server.MaxVariablesNesting; i++ {
		ok = map[string]any{"a": ok}
	}
	gql(t, e, e.Guest.Key, `query($v: String) { projects(after: $v) { nodes { id } } }`, map[string]any{"v": ok}).expectError(t, "validation_failed", "v")
}

// TestEnvelopeTypes: members of the request body with the wrong JSON type
// are validation_failed naming the member, without the body echoed back.
func TestEnvelopeTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, storetest.SQLite(t))
	filler := strings.Repeat("x", 5000)
	for _, c := range []struct{ body, param string }{
		{`{"query": 5, "pad": "` + filler + `"}`, "query"},
		{`{"query": ["{ me { id } }"], "pad": "` + filler + `"}`, "query"},
		{`{"query": "{ me { id } }", "variables": [1], "pad": "` + filler + `"}`, "variables"},
		{`{"query": "{ me { id } }", "variables": "x", "pad": "` + filler + `"}`, "variables"},
		{`{"query": "{ me { id } }", "operationName": {}, "pad": "` + filler + `"}`, "operationName"},
		{`{"query": "{ me { id } }", "extensions": 1, "pad": "` + filler + `"}`, "extensions"},
	} {
		r := post(t, e, e.Guest.Key, c.body)
		if r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), filler) {
			t.Fatalf("%s: want 400 without the body echoed, got %d: %.300s", c.body[:40], r.Status, r.Body)
		}
		r.expectError(t, "validation_failed", c.param)
	}
	// Bodies that are not UTF-8 are not JSON.
	r := decode(t, e.Do(apitest.Request{Method: http.MethodPost, Path: "/graphql", Key: e.Guest.Key, Body: "{\"query\": \"{ me { id \xff } }\"}"}))
	r.expectError(t, "invalid_json", "")
}
