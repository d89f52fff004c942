package graph_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// The GraphQL shape of each resource carries the REST values: the same ids,
// the same instants formatted identically, enums in UPPER_CASE.
func TestQueriesMatchREST(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "QRY")
		tsk := createTask(t, e, prj, map[string]any{
			"title": " Write spec ", "status": "IN_PROGRESS", "assigneeId": e.Guest.User.ID,
			"dueAt": "2026-04-01T10:00:00.1234567+02:00",
		})

		data := gql(t, e, e.Guest.Key, `query($p: ID!, $t: ID!) {
			me { id email name role createdAt }
			project(id: $p) { id name key taskCount createdAt updatedAt }
			task(id: $t) { id projectId title status assigneeId dueAt createdAt updatedAt
				project { id key } assignee { id email role } }
		}`, map[string]any{"p": prj, "t": tsk}).ok(t)

		me := e.Get("/v1/users/me", e.Guest.Key)
		if str(data, "me", "id") != me.Str("id") || str(data, "me", "email") != me.Str("email") ||
			str(data, "me", "name") != me.Str("name") || str(data, "me", "role") != "GUEST" ||
			str(data, "me", "createdAt") != me.Str("created_at") {
			t.Fatalf("me %v vs REST %s", data["me"], me.Body)
		}
		p := e.Get("/v1/projects/"+prj, e.Guest.Key)
		if str(data, "project", "name") != p.Str("name") || str(data, "project", "key") != "QRY" ||
			get(data, "project", "taskCount") != p.JSON["task_count"] || get(data, "project", "taskCount") != 1.0 ||
			str(data, "project", "createdAt") != p.Str("created_at") || str(data, "project", "updatedAt") != p.Str("updated_at") {
			t.Fatalf("project %v vs REST %s", data["project"], p.Body)
		}
		task := e.Get("/v1/tasks/"+tsk, e.Guest.Key)
		if str(data, "task", "projectId") != prj || str(data, "task", "title") != "Write spec" ||
			str(data, "task", "status") != "IN_PROGRESS" || str(data, "task", "assigneeId") != e.Guest.User.ID ||
			str(data, "task", "dueAt") != "2026-04-01T08:00:00.123456Z" || str(data, "task", "dueAt") != task.Str("due_at") ||
			str(data, "task", "createdAt") != task.Str("created_at") || str(data, "task", "updatedAt") != task.Str("updated_at") {
			t.Fatalf("task %v vs REST %s", data["task"], task.Body)
		}
		if str(data, "task", "project", "key") != "QRY" || str(data, "task", "assignee", "email") != "gus@acme.test" ||
			str(data, "task", "assignee", "role") != "GUEST" {
			t.Fatalf("task relations: %v", data["task"])
		}

		// Nullable fields are present as null.
		plain := createTask(t, e, prj, map[string]any{"title": "Plain"})
		r := gql(t, e, e.Guest.Key, `query($t: ID!) { task(id: $t) { status assigneeId assignee { id } dueAt } }`, map[string]any{"t": plain})
		r.ok(t)
		if !strings.Contains(string(r.Body), `"task":{"status":"OPEN","assigneeId":null,"assignee":null,"dueAt":null}`) {
			t.Fatalf("nulls: %s", r.Body)
		}
	})
}

func TestNode(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "NOD")
		tsk := createTask(t, e, prj, map[string]any{"title": "T"})
		const q = `query($id: ID!) { node(id: $id) { __typename id
			... on User { email } ... on Project { key } ... on Task { title } } }`
		for id, want := range map[string]string{e.Guest.User.ID: "User", prj: "Project", tsk: "Task"} {
			data := gql(t, e, e.Guest.Key, q, map[string]any{"id": id}).ok(t)
			if str(data, "node", "__typename") != want || str(data, "node", "id") != id {
				t.Fatalf("node(%s): %v", id, data)
			}
		}
		if data := gql(t, e, e.Guest.Key, q, map[string]any{"id": prj}).ok(t); str(data, "node", "key") != "NOD" {
			t.Fatalf("node fields: %v", data)
		}

		// Unknown kinds, absent ids and other workspaces' ids: null and not found.
		foreign := gql(t, e, e.Other.Key, `mutation { createProject(input: {name: "F", key: "FOR"}) { id } }`, nil).ok(t)
		for _, id := range []string{"xyz_123", "prj_absent", str(foreign, "createProject", "id"), e.Other.User.ID} {
			r := gql(t, e, e.Guest.Key, q, map[string]any{"id": id})
			r.expectError(t, "resource_not_found", "")
			if r.Data["node"] != nil || r.Status != http.StatusOK {
				t.Fatalf("node(%s) must be null: %s", id, r.Body)
			}
		}
	})
}

// Another workspace's id is answered exactly like an absent one: null, and
// resource_not_found on the field's path.
func TestTenancy(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		mine := createProject(t, e, "MIN")
		foreignPrj := str(gql(t, e, e.Other.Key, `mutation { createProject(input: {name: "F", key: "FOR"}) { id } }`, nil).ok(t), "createProject", "id")
		foreignTask := str(gql(t, e, e.Other.Key, `mutation($p: ID) { createTask(projectId: $p, input: {title: "F"}) { id } }`,
			map[string]any{"p": foreignPrj}).ok(t), "createTask", "id")

		for _, c := range []struct{ query, field, id string }{
			{`query($id: ID!) { project(id: $id) { id name } }`, "project", foreignPrj},
			{`query($id: ID!) { task(id: $id) { id title } }`, "task", foreignTask},
			{`query($id: ID!) { project(id: $id) { id } }`, "project", "prj_absent"},
			{`query($id: ID!) { task(id: $id) { id } }`, "task", mine}, // an id of the wrong kind
		} {
			r := gql(t, e, e.Admin.Key, c.query, map[string]any{"id": c.id})
			err := r.expectError(t, "resource_not_found", "")
			if r.Data[c.field] != nil || len(err.Path) != 1 || err.Path[0] != c.field {
				t.Fatalf("%s(%s): %s", c.field, c.id, r.Body)
			}
		}

		// Mutations on foreign ids: not found; a foreign assignee: invalid.
		gql(t, e, e.Admin.Key, `mutation($p: ID) { createTask(projectId: $p, input: {title: "x"}) { id } }`,
			map[string]any{"p": foreignPrj}).expectError(t, "resource_not_found", "")
		gql(t, e, e.Admin.Key, `mutation($id: ID!) { updateTask(id: $id, input: {title: "x"}) { id } }`,
			map[string]any{"id": foreignTask}).expectError(t, "resource_not_found", "")
		gql(t, e, e.Admin.Key, `mutation($id: ID!) { updateProject(id: $id, input: {name: "x"}) { id } }`,
			map[string]any{"id": foreignPrj}).expectError(t, "resource_not_found", "")
		gql(t, e, e.Admin.Key, `mutation($id: ID!) { deleteTask(id: $id) }`,
			map[string]any{"id": foreignTask}).expectError(t, "resource_not_found", "")
		gql(t, e, e.Admin.Key, `mutation($p: ID, $u: ID) { createTask(projectId: $p, input: {title: "x", assigneeId: $u}) { id } }`,
			map[string]any{"p": mine, "u": e.Other.User.ID}).expectError(t, "validation_failed", "assigneeId")

		// Lists never show another workspace.
		data := gql(t, e, e.Admin.Key, `{ users(first: 100) { nodes { id } } projects(first: 100) { nodes { id } } }`, nil).ok(t)
		if got := jsonString(data); strings.Contains(got, foreignPrj) || strings.Contains(got, e.Other.User.ID) {
			t.Fatalf("lists leaked another workspace: %s", got)
		}
		if len(list(data, "users", "nodes")) != 3 || len(list(data, "projects", "nodes")) != 1 {
			t.Fatalf("lists: %s", jsonString(data))
		}
	})
}
