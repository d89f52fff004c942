package graph_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

const createTasksMutation = `mutation($p: ID!, $inputs: [CreateTaskInput!]!) {
  createTasks(projectId: $p, inputs: $inputs) { id title status assignee { id } project { id taskCount } }
}`

// createTasks is the bulk creation of REST's POST .../tasks/batch: the
// tasks in the order given, all or nothing, a bad item named by its path
// from the argument, the same scopes and tenancy.
func TestCreateTasksMutation(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "BULK")
		inputs := make([]any, 120)
		for i := range inputs {
			inputs[i] = map[string]any{"title": fmt.Sprintf("Item %d", i)}
		}
		inputs[7] = map[string]any{"title": "Assigned", "assigneeId": e.Guest.User.ID, "status": "DONE"}
		got := list(gql(t, e, e.Member.Key, createTasksMutation, map[string]any{"p": prj, "inputs": inputs}).ok(t), "createTasks")
		if len(got) != len(inputs) {
			t.Fatalf("%d tasks answered, want %d", len(got), len(inputs))
		}
		for i, task := range got {
			want := fmt.Sprintf("Item %d", i)
			if i == 7 {
				want = "Assigned"
			}
			if str(task, "title") != want {
				t.Fatalf("item %d answered as %q: not in the order given", i, str(task, "title"))
			}
		}
		if str(got[7], "assignee", "id") != e.Guest.User.ID || str(got[7], "status") != "DONE" || get(got[0], "project", "taskCount") != 120.0 {
			t.Fatalf("item 7: %v; item 0: %v", got[7], got[0])
		}
		rest := e.Get("/v1/projects/"+prj, e.Guest.Key)
		if int(rest.JSON["task_count"].(float64)) != 120 {
			t.Fatalf("task_count %v", rest.JSON["task_count"])
		}

		ok := map[string]any{"title": "ok"}
		for _, c := range []struct {
			name   string
			inputs any
			param  string
		}{
			{"no item", []any{}, "inputs"},
			{"501 items", make([]any, domain.MaxBatchItems+1), "inputs"},
			{"a blank title", []any{ok, ok, map[string]any{"title": " "}}, "inputs[2].title"},
			{"a bad assignee", []any{ok, map[string]any{"title": "a", "assigneeId": e.Other.User.ID}}, "inputs[1].assigneeId"},
			{"archived on creation", []any{ok, ok, ok, map[string]any{"title": "a", "status": "ARCHIVED"}}, "inputs[3].status"},
			// GraphQL's own checks of the variable name the item too.
			{"a title of another type", []any{ok, ok, ok, map[string]any{"title": []any{"a"}}}, "inputs[3].title"},
			{"an unknown field", []any{ok, map[string]any{"title": "a", "colour": "red"}}, "inputs[1].colour"},
			{"a missing title", []any{map[string]any{"status": "OPEN"}}, "inputs[0].title"},
			// A DateTime that does not parse is refused by its scalar, which
			// cannot know its place: the path names it.
			{"a bad dueAt", []any{ok, map[string]any{"title": "a", "dueAt": "tomorrow"}}, "inputs[1].dueAt"},
		} {
			t.Run(c.name, func(t *testing.T) {
				if in, ok := c.inputs.([]any); ok && len(in) > domain.MaxBatchItems {
					for i := range in {
						in[i] = map[string]any{"title": "x"}
					}
				}
				gql(t, e, e.Member.Key, createTasksMutation, map[string]any{"p": prj, "inputs": c.inputs}).expectError(t, "validation_failed", c.param)
			})
		}
		if n := e.Get("/v1/projects/"+prj, e.Guest.Key).JSON["task_count"].(float64); n != 120 {
			t.Fatalf("a refused batch wrote tasks: task_count %v", n)
		}

		one := []any{ok}
		gql(t, e, e.Guest.Key, createTasksMutation, map[string]any{"p": prj, "inputs": one}).expectError(t, "permission_denied", "")
		gql(t, e, e.Other.Key, createTasksMutation, map[string]any{"p": prj, "inputs": one}).expectError(t, "resource_not_found", "")
		restricted := e.KeyFor(e.Member.User, nil, []string{createProject(t, e, "ELSE")})
		gql(t, e, restricted, createTasksMutation, map[string]any{"p": prj, "inputs": one}).expectError(t, "resource_not_found", "")
		if n := e.Get("/v1/projects/"+prj, e.Guest.Key).JSON["task_count"].(float64); n != 120 {
			t.Fatalf("a refused batch wrote tasks: task_count %v", n)
		}
	})
}

// A bulk creation weighs what it answers: 1 + the items × what each
// selects, so a large selection over many items is refused before it runs
// and writes nothing.
func TestCreateTasksWeighsItsItems(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, func(o *server.Options) { o.MaxComplexity = 1000 })
		prj := createProject(t, e, "COST")
		inputs := make([]any, 200)
		for i := range inputs {
			inputs[i] = map[string]any{"title": "x"}
		}
		// 1 + 200 × (title + project { id taskCount } = 1 + 1 + 2) = 801: under.
		under := `mutation($p: ID!, $inputs: [CreateTaskInput!]!) { createTasks(projectId: $p, inputs: $inputs) { title project { id taskCount } } }`
		if got := list(gql(t, e, e.Member.Key, under, map[string]any{"p": prj, "inputs": inputs}).ok(t), "createTasks"); len(got) != 200 {
			t.Fatalf("%d tasks", len(got))
		}
		// 1 + 200 × (id + title + status + project { id taskCount }) = 1,201: over.
		over := `mutation($p: ID!, $inputs: [CreateTaskInput!]!) { createTasks(projectId: $p, inputs: $inputs) { id title status project { id taskCount } } }`
		r := gql(t, e, e.Member.Key, over, map[string]any{"p": prj, "inputs": inputs})
		if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
			t.Fatalf("want 422 without data, got %d: %.300s", r.Status, r.Body)
		}
		r.expectError(t, "validation_failed", "query")
		if n := e.Get("/v1/projects/"+prj, e.Guest.Key).JSON["task_count"].(float64); n != 200 {
			t.Fatalf("task_count %v after a refused batch, want 200", n)
		}
	})
}

// The createTasks fields of one document add up: an operation creates at
// most domain.MaxBatchItems tasks in all, however many aliases share them.
// One asking for more is refused before it runs, so no alias has written
// anything; the count is of the fields the operation runs, with inputs
// given as variables, fragments followed and @skip applied.
func TestCreateTasksAddUpPerDocument(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "SUM")
		items := func(n int) []any {
			in := make([]any, n)
			for i := range in {
				in[i] = map[string]any{"title": fmt.Sprintf("t%d", i)}
			}
			return in
		}
		// written is the project's tasks as REST lists them and counts them.
		written := func() (listed int, count float64) {
			t.Helper()
			page := e.Get("/v1/projects/"+prj+"/tasks?limit=1", e.Guest.Key)
			page.ExpectStatus(t, http.StatusOK)
			return len(page.JSON["data"].([]any)), e.Get("/v1/projects/"+prj, e.Guest.Key).JSON["task_count"].(float64)
		}
		refused := func(t *testing.T, query string, vars map[string]any, asked int) {
			t.Helper()
			r := gql(t, e, e.Member.Key, query, vars)
			if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
				t.Fatalf("want 422 without data, got %d: %.300s", r.Status, r.Body)
			}
			msg := r.expectError(t, "validation_failed", "inputs").Message
			if !strings.Contains(msg, fmt.Sprintf("asks for %d tasks in its createTasks fields", asked)) || !strings.Contains(msg, "500 is the most one document may create") {
				t.Fatalf("message %q", msg)
			}
		}
		two := `mutation($p: ID!, $a: [CreateTaskInput!]!, $b: [CreateTaskInput!]!) {
  a: createTasks(projectId: $p, inputs: $a) { id }
  b: createTasks(projectId: $p, inputs: $b) { id }
}`

		t.Run("two aliases of 300", func(t *testing.T) {
			refused(t, two, map[string]any{"p": prj, "a": items(300), "b": items(300)}, 600)
		})
		t.Run("a literal and a variable", func(t *testing.T) {
			q := `mutation($p: ID!, $b: [CreateTaskInput!]!) {
  a: createTasks(projectId: $p, inputs: [{title: "one"}, {title: "two"}]) { id }
  b: createTasks(projectId: $p, inputs: $b) { id }
}`
			refused(t, q, map[string]any{"p": prj, "b": items(499)}, 501)
		})
		t.Run("an alias in a fragment", func(t *testing.T) {
			q := `mutation($p: ID!, $a: [CreateTaskInput!]!, $b: [CreateTaskInput!]!) {
  ...More
  b: createTasks(projectId: $p, inputs: $b) { id }
}
fragment More on Mutation { a: createTasks(projectId: $p, inputs: $a) { id } }`
			refused(t, q, map[string]any{"p": prj, "a": items(400), "b": items(101)}, 501)
		})
		if listed, count := written(); listed != 0 || count != 0 {
			t.Fatalf("a refused document wrote tasks: %d listed, task_count %v", listed, count)
		}

		t.Run("two aliases of 250", func(t *testing.T) {
			data := gql(t, e, e.Member.Key, two, map[string]any{"p": prj, "a": items(250), "b": items(250)}).ok(t)
			if len(list(data, "a")) != 250 || len(list(data, "b")) != 250 {
				t.Fatalf("a: %d, b: %d tasks", len(list(data, "a")), len(list(data, "b")))
			}
		})
		// A skipped alias creates nothing, so it asks for nothing.
		t.Run("a skipped alias", func(t *testing.T) {
			q := `mutation($p: ID!, $a: [CreateTaskInput!]!, $b: [CreateTaskInput!]!, $skip: Boolean!) {
  a: createTasks(projectId: $p, inputs: $a) @skip(if: $skip) { id }
  b: createTasks(projectId: $p, inputs: $b) { id }
}`
			data := gql(t, e, e.Member.Key, q, map[string]any{"p": prj, "a": items(300), "b": items(300), "skip": true}).ok(t)
			if _, ran := data["a"]; ran || len(list(data, "b")) != 300 {
				t.Fatalf("data: %.200v", data)
			}
		})
		if _, count := written(); count != 800 {
			t.Fatalf("task_count %v, want 800", count)
		}
	})
}
