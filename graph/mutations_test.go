package graph_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
)

const projectFields = `id name key taskCount createdAt updatedAt`

func TestProjectMutations(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		const create = `mutation($in: CreateProjectInput!) { createProject(input: $in) { ` + projectFields + ` } }`
		data := gql(t, e, e.Member.Key, create, map[string]any{"in": map[string]any{"name": "  Ops  ", "key": "OPS"}}).ok(t)
		p := get(data, "createProject")
		id := mustStr(t, p, "id")
		if !strings.HasPrefix(id, "prj_") || str(p, "name") != "Ops" || str(p, "key") != "OPS" || get(p, "taskCount") != 0.0 ||
			str(p, "createdAt") != str(p, "updatedAt") {
			t.Fatalf("created: %v", p)
		}
		// What the mutation answered is what later reads show, over REST too.
		rest := e.Get("/v1/projects/"+id, e.Guest.Key)
		if rest.Str("created_at") != str(p, "createdAt") || rest.Str("name") != "Ops" {
			t.Fatalf("REST read %s vs %v", rest.Body, p)
		}

		gql(t, e, e.Member.Key, create, map[string]any{"in": map[string]any{"name": "Again", "key": "OPS"}}).
			expectError(t, "resource_already_exists", "")
		gql(t, e, e.Member.Key, create, map[string]any{"in": map[string]any{"name": "Bad", "key": "ops"}}).
			expectError(t, "validation_failed", "key")
		gql(t, e, e.Member.Key, create, map[string]any{"in": map[string]any{"name": "  ", "key": "BLANK"}}).
			expectError(t, "validation_failed", "name")

		const update = `mutation($id: ID!, $in: UpdateProjectInput!) { updateProject(id: $id, input: $in) { ` + projectFields + ` } }`
		// An empty patch and a same-name patch change nothing, updatedAt included.
		e.Clock.Advance(time.Second)
		for _, in := range []map[string]any{{}, {"name": "Ops"}} {
			same := get(gql(t, e, e.Member.Key, update, map[string]any{"id": id, "in": in}).ok(t), "updateProject")
			if jsonString(same) != jsonString(p) {
				t.Fatalf("no-op update changed the project: %v vs %v", same, p)
			}
		}
		renamed := get(gql(t, e, e.Member.Key, update, map[string]any{"id": id, "in": map[string]any{"name": "Operations"}}).ok(t), "updateProject")
		if str(renamed, "name") != "Operations" || str(renamed, "updatedAt") == str(p, "updatedAt") || str(renamed, "createdAt") != str(p, "createdAt") {
			t.Fatalf("renamed: %v", renamed)
		}
		// null for the required name is a validation error; the key cannot change.
		gql(t, e, e.Member.Key, update, map[string]any{"id": id, "in": map[string]any{"name": nil}}).
			expectError(t, "validation_failed", "name")
		gql(t, e, e.Member.Key, update, map[string]any{"id": id, "in": map[string]any{"key": "NEW"}}).
			expectError(t, "validation_failed", "key")
		gql(t, e, e.Member.Key, update, map[string]any{"id": "prj_absent", "in": map[string]any{"name": "x"}}).
			expectError(t, "resource_not_found", "")
	})
}

const taskFields = `id projectId title status assigneeId dueAt createdAt updatedAt`

func TestCreateTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "TSK")
		const q = `mutation($p: ID, $in: CreateTaskInput!) { createTask(projectId: $p, input: $in) { ` + taskFields + ` project { taskCount } } }`
		create := func(projectID any, in map[string]any) *result {
			return gql(t, e, e.Member.Key, q, map[string]any{"p": projectID, "in": in})
		}

		task := get(create(prj, map[string]any{"title": "Plain"}).ok(t), "createTask")
		if !strings.HasPrefix(str(task, "id"), "tsk_") || str(task, "status") != "OPEN" || get(task, "assigneeId") != nil ||
			get(task, "dueAt") != nil || str(task, "projectId") != prj || get(task, "project", "taskCount") != 1.0 {
			t.Fatalf("defaults: %v", task)
		}
		// null assigneeId and dueAt mean none, as over REST.
		create(prj, map[string]any{"title": "Nulls", "assigneeId": nil, "dueAt": nil}).ok(t)

		create(nil, map[string]any{"title": "x"}).expectError(t, "resource_not_found", "")
		create("prj_absent", map[string]any{"title": "x"}).expectError(t, "resource_not_found", "")
		r := gql(t, e, e.Member.Key, `mutation { createTask(input: {title: "x"}) { id } }`, nil) // projectId absent
		r.expectError(t, "resource_not_found", "")
		create(prj, map[string]any{"title": "x", "assigneeId": "usr_absent"}).expectError(t, "validation_failed", "assigneeId")
		create(prj, map[string]any{"title": "x", "assigneeId": prj}).expectError(t, "validation_failed", "assigneeId")
		create(prj, map[string]any{"title": "x", "dueAt": "tomorrow"}).expectError(t, "validation_failed", "dueAt")
		create(prj, map[string]any{"title": "x", "status": nil}).expectError(t, "validation_failed", "status")
		create(prj, map[string]any{"title": "x", "status": "ARCHIVED"}).expectError(t, "validation_failed", "status")
		create(prj, map[string]any{"title": strings.Repeat("x", 501)}).expectError(t, "validation_failed", "title")
		create(prj, map[string]any{"title": "a\nb"}).expectError(t, "validation_failed", "title")
		// GraphQL itself refuses a missing title or an unknown status: the
		// variable's field is the param.
		create(prj, map[string]any{}).expectError(t, "validation_failed", "title")
		create(prj, map[string]any{"title": "x", "status": "LATER"}).expectError(t, "validation_failed", "status")

		if n := get(gql(t, e, e.Guest.Key, `query($p: ID!) { project(id: $p) { taskCount } }`, map[string]any{"p": prj}).ok(t), "project", "taskCount"); n != 2.0 {
			t.Fatalf("failed creations must not count: taskCount %v", n)
		}
	})
}

// Merge patch over GraphQL is REST's: an absent field stays, null clears a
// nullable one and is refused for a required one.
func TestUpdateTaskMergePatch(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "MRG")
		id := createTask(t, e, prj, map[string]any{"title": "T", "assigneeId": e.Guest.User.ID, "dueAt": "2026-05-01T00:00:00Z"})
		const q = `mutation($id: ID!, $in: UpdateTaskInput!) { updateTask(id: $id, input: $in) { ` + taskFields + ` } }`
		update := func(in map[string]any) *result {
			e.Clock.Advance(time.Second)
			return gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": in})
		}

		// Absent fields are left alone.
		t1 := get(update(map[string]any{"title": "T2"}).ok(t), "updateTask")
		if str(t1, "title") != "T2" || str(t1, "assigneeId") != e.Guest.User.ID || str(t1, "dueAt") != "2026-05-01T00:00:00.000000Z" {
			t.Fatalf("absent fields changed: %v", t1)
		}
		// null clears assigneeId and dueAt, one at a time.
		t2 := get(update(map[string]any{"assigneeId": nil}).ok(t), "updateTask")
		if get(t2, "assigneeId") != nil || str(t2, "dueAt") == "" {
			t.Fatalf("assigneeId: null: %v", t2)
		}
		t3 := get(update(map[string]any{"dueAt": nil}).ok(t), "updateTask")
		if get(t3, "dueAt") != nil || get(t3, "assigneeId") != nil || str(t3, "title") != "T2" {
			t.Fatalf("dueAt: null: %v", t3)
		}
		// Set again; the same instant in another offset is a no-op.
		t4 := get(update(map[string]any{"assigneeId": e.Member.User.ID, "dueAt": "2026-06-01T12:00:00+02:00"}).ok(t), "updateTask")
		if str(t4, "assigneeId") != e.Member.User.ID || str(t4, "dueAt") != "2026-06-01T10:00:00.000000Z" {
			t.Fatalf("set: %v", t4)
		}
		t5 := get(update(map[string]any{"dueAt": "2026-06-01T10:00:00Z"}).ok(t), "updateTask")
		if str(t5, "updatedAt") != str(t4, "updatedAt") {
			t.Fatalf("same instant must be a no-op: %v vs %v", t5, t4)
		}
		// null for required fields is a validation error and changes nothing.
		update(map[string]any{"title": nil}).expectError(t, "validation_failed", "title")
		update(map[string]any{"status": nil}).expectError(t, "validation_failed", "status")
		update(map[string]any{"assigneeId": "usr_absent"}).expectError(t, "validation_failed", "assigneeId")
		update(map[string]any{"assigneeId": e.Other.User.ID}).expectError(t, "validation_failed", "assigneeId")
		update(map[string]any{"dueAt": "not a time"}).expectError(t, "validation_failed", "dueAt")
		now := get(gql(t, e, e.Guest.Key, `query($id: ID!) { task(id: $id) { `+taskFields+` } }`, map[string]any{"id": id}).ok(t), "task")
		if jsonString(now) != jsonString(t5) {
			t.Fatalf("failed updates changed the task: %v vs %v", now, t5)
		}
	})
}

func TestStatusTransitions(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "STS")
		const q = `mutation($id: ID!, $in: UpdateTaskInput!) { updateTask(id: $id, input: $in) { status title } }`
		allowed := map[string]map[string]bool{
			"OPEN":        {"IN_PROGRESS": true, "DONE": true, "ARCHIVED": true},
			"IN_PROGRESS": {"OPEN": true, "DONE": true, "ARCHIVED": true},
			"DONE":        {"OPEN": true, "IN_PROGRESS": true, "ARCHIVED": true},
			"ARCHIVED":    {"OPEN": true},
		}
		for from, tos := range allowed {
			for _, to := range []string{"OPEN", "IN_PROGRESS", "DONE", "ARCHIVED"} {
				if to == from {
					continue
				}
				id := createTask(t, e, prj, map[string]any{"title": "T"})
				if from != "OPEN" {
					gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"status": from}}).ok(t)
				}
				r := gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"status": to}})
				if tos[to] {
					if str(r.ok(t), "updateTask", "status") != to {
						t.Fatalf("%s -> %s: %s", from, to, r.Body)
					}
				} else {
					r.expectError(t, "invalid_status_transition", "")
				}
			}
		}
		// An archived task accepts no other change, unless reopened in the same patch.
		id := createTask(t, e, prj, map[string]any{"title": "A", "status": "DONE"})
		gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"status": "ARCHIVED"}}).ok(t)
		gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"title": "B"}}).expectError(t, "invalid_status_transition", "")
		gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"title": "A"}}).ok(t) // no-op
		// A bad field is reported before any status rule.
		gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"title": ""}}).expectError(t, "validation_failed", "title")
		data := gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": map[string]any{"title": "B", "status": "OPEN"}}).ok(t)
		if str(data, "updateTask", "status") != "OPEN" || str(data, "updateTask", "title") != "B" {
			t.Fatalf("reopen: %v", data)
		}
	})
}

func TestDeleteTask(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "DEL")
		id := createTask(t, e, prj, map[string]any{"title": "T"})
		createTask(t, e, prj, map[string]any{"title": "Kept"})
		const del = `mutation($id: ID!) { deleteTask(id: $id) }`
		if data := gql(t, e, e.Member.Key, del, map[string]any{"id": id}).ok(t); data["deleteTask"] != id {
			t.Fatalf("deleteTask: %v", data)
		}
		r := gql(t, e, e.Member.Key, del, map[string]any{"id": id})
		r.expectError(t, "resource_not_found", "")
		if v, ok := r.Data["deleteTask"]; !ok || v != nil {
			t.Fatalf("a failed delete answers null: %s", r.Body)
		}
		gql(t, e, e.Guest.Key, `query($id: ID!) { task(id: $id) { id } }`, map[string]any{"id": id}).expectError(t, "resource_not_found", "")
		// In one operation, what a mutation changed is read fresh by the next
		// field: the cache of the dataloaders is dropped after each mutation.
		other := createTask(t, e, prj, map[string]any{"title": "Other"})
		data := gql(t, e, e.Member.Key, `mutation($p: ID, $o: ID!) {
			a: createTask(projectId: $p, input: {title: "A"}) { project { taskCount } }
			b: createTask(projectId: $p, input: {title: "B"}) { project { taskCount } }
			c: deleteTask(id: $o)
			d: updateTask(id: $o, input: {title: "gone"}) { id }
			e: createTask(projectId: $p, input: {title: "E"}) { project { taskCount } } }`,
			map[string]any{"p": prj, "o": other}).Data
		if get(data, "a", "project", "taskCount") != 3.0 || get(data, "b", "project", "taskCount") != 4.0 ||
			data["c"] != other || data["d"] != nil || get(data, "e", "project", "taskCount") != 4.0 {
			t.Fatalf("stale counts across mutations: %v", data)
		}
	})
}

// Guests only read: every mutation is permission_denied, before any other
// check (even for an absent id).
func TestRoles(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		prj := createProject(t, e, "ROL")
		tsk := createTask(t, e, prj, map[string]any{"title": "T"})
		for _, m := range []string{
			`mutation { createProject(input: {name: "G", key: "GST"}) { id } }`,
			fmt.Sprintf(`mutation { updateProject(id: %q, input: {name: "G"}) { id } }`, prj),
			fmt.Sprintf(`mutation { createTask(projectId: %q, input: {title: "G"}) { id } }`, prj),
			fmt.Sprintf(`mutation { updateTask(id: %q, input: {title: "G"}) { id } }`, tsk),
			fmt.Sprintf(`mutation { deleteTask(id: %q) }`, tsk),
			`mutation { deleteTask(id: "tsk_absent") }`,
		} {
			r := gql(t, e, e.Guest.Key, m, nil)
			r.expectError(t, "permission_denied", "")
			for k, v := range r.Data {
				if v != nil {
					t.Fatalf("%s: %s must be null: %s", m, k, r.Body)
				}
			}
		}
		// Nothing changed.
		data := gql(t, e, e.Guest.Key, fmt.Sprintf(`{ project(id: %q) { name taskCount } task(id: %q) { title } projects { nodes { id } } }`, prj, tsk), nil).ok(t)
		if str(data, "project", "name") != "Project ROL" || get(data, "project", "taskCount") != 1.0 ||
			str(data, "task", "title") != "T" || len(list(data, "projects", "nodes")) != 1 {
			t.Fatalf("guest mutations changed something: %v", data)
		}
		// Members and admins may.
		gql(t, e, e.Admin.Key, fmt.Sprintf(`mutation { updateTask(id: %q, input: {title: "Admin"}) { id } }`, tsk), nil).ok(t)
	})
}
