package graph_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// Query.events is GET /v1/events in GraphQL form: the same events in the
// same order, each payload the REST document exactly, task and project as
// the event shows them, and node() answering evt_ ids.
func TestEventsMatchTheRESTLog(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "EVT")
		tsk := createTask(t, e, prj, map[string]any{"title": "First", "assigneeId": e.Guest.User.ID})
		gql(t, e, e.Member.Key, `mutation($id: ID!) { updateTask(id: $id, input: {status: DONE}) { id } }`, map[string]any{"id": tsk}).ok(t)
		other := createProject(t, e, "OTH")

		data := gql(t, e, e.Guest.Key, `{ events(first: 10) {
			nodes { id type createdAt projectId payload previousAttributes
				task { id title status assignee { email } project { key } }
				project { id key tasks { nodes { id } } } }
			pageInfo { hasNextPage } } }`, nil).ok(t)
		nodes := list(data, "events", "nodes")
		rest := e.Get("/v1/events", e.Guest.Key)
		rest.ExpectStatus(t, http.StatusOK)
		restEvents := rest.JSON["data"].([]any)
		if len(nodes) != 4 || len(restEvents) != 4 {
			t.Fatalf("GraphQL %d events, REST %d", len(nodes), len(restEvents))
		}
		for i, n := range nodes {
			want, _ := json.Marshal(restEvents[i])
			got, _ := json.Marshal(get(n, "payload"))
			if string(got) != string(want) {
				t.Fatalf("event %d: payload %s, REST %s", i, got, want)
			}
		}
		wantTypes := []string{"PROJECT_CREATED", "TASK_CREATED", "TASK_UPDATED", "PROJECT_CREATED"}
		for i, n := range nodes {
			if str(n, "type") != wantTypes[i] {
				t.Fatalf("event %d: type %s, want %s", i, str(n, "type"), wantTypes[i])
			}
		}
		if str(nodes[0], "project", "key") != "EVT" || get(nodes[0], "task") != nil || str(nodes[0], "projectId") != prj {
			t.Fatalf("project.created: %v", nodes[0])
		}
		created := nodes[1]
		if str(created, "task", "id") != tsk || str(created, "task", "status") != "OPEN" ||
			str(created, "task", "assignee", "email") != e.Guest.User.Email || str(created, "task", "project", "key") != "EVT" {
			t.Fatalf("task.created: %v", created)
		}
		if get(created, "previousAttributes") != nil {
			t.Fatalf("task.created has previousAttributes: %v", created)
		}
		// The task as the event shows it: DONE came later.
		if str(nodes[2], "task", "status") != "DONE" || str(nodes[2], "previousAttributes", "status") != "open" {
			t.Fatalf("task.updated: %v", nodes[2])
		}
		if str(nodes[3], "projectId") != other {
			t.Fatalf("last event: %v", nodes[3])
		}

		// Filters, and node().
		f := gql(t, e, e.Guest.Key, `query($p: ID) { events(types: [TASK_CREATED, TASK_UPDATED], projectId: $p) { nodes { type } } }`,
			map[string]any{"p": prj}).ok(t)
		if n := list(f, "events", "nodes"); len(n) != 2 || str(n[0], "type") != "TASK_CREATED" {
			t.Fatalf("filtered: %v", n)
		}
		id := str(nodes[1], "id")
		node := gql(t, e, e.Guest.Key, `query($id: ID!) { node(id: $id) { id ... on Event { type task { id } } } }`, map[string]any{"id": id}).ok(t)
		if str(node, "node", "id") != id || str(node, "node", "type") != "TASK_CREATED" || str(node, "node", "task", "id") != tsk {
			t.Fatalf("node(%s): %v", id, node)
		}
		// Another workspace sees none of them.
		theirs := gql(t, e, e.Other.Key, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id})
		theirs.expectError(t, "resource_not_found", "")
		if n := list(gql(t, e, e.Other.Key, `{ events { nodes { id } } }`, nil).ok(t), "events", "nodes"); len(n) != 0 {
			t.Fatalf("another workspace's log: %v", n)
		}
		// The REST rules, with GraphQL's names.
		gql(t, e, e.Guest.Key, `{ events(projectId: "prj_nope") { nodes { id } } }`, nil).expectError(t, "validation_failed", "projectId")
		gql(t, e, e.Guest.Key, `{ events(first: 0) { nodes { id } } }`, nil).expectError(t, "validation_failed", "first")
		gql(t, e, e.Guest.Key, `{ events(after: "junk") { nodes { id } } }`, nil).expectError(t, "validation_failed", "after")
	})
}

// Event.project is the project as the event recorded it; what is nested
// under it resolves to the current state: the tasks' project is the
// project as it is now, not the recorded one seeding the loaders' cache.
func TestEventNestedFieldsShowTheCurrentState(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "NOW")
		createTask(t, e, prj, map[string]any{"title": "Only"})
		gql(t, e, e.Member.Key, `mutation($id: ID!) { updateProject(id: $id, input: {name: "Renamed"}) { id } }`,
			map[string]any{"id": prj}).ok(t)
		data := gql(t, e, e.Guest.Key, `{ events(types: [PROJECT_CREATED]) { nodes {
			project { name tasks { nodes { title project { name } } } } } } }`, nil).ok(t)
		nodes := list(data, "events", "nodes")
		if len(nodes) != 1 {
			t.Fatalf("events: %v", nodes)
		}
		if got := str(nodes[0], "project", "name"); got != "Project NOW" {
			t.Fatalf("Event.project is %q, want the name the event recorded", got)
		}
		tasks := list(nodes[0], "project", "tasks", "nodes")
		if len(tasks) != 1 || str(tasks[0], "project", "name") != "Renamed" {
			t.Fatalf("the tasks' project under an event shows %v, want the current name", tasks)
		}
	})
}
