package graph_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

// gqlFind: two projects; the member's task, the admin's, an unassigned
// undated one and "Write the announcement", unassigned and due first.
type gqlFind struct{ p, q, mine, theirs, nobody, announce string }

func newGQLFind(t *testing.T, e *apitest.Env) gqlFind {
	t.Helper()
	f := gqlFind{p: createProject(t, e, "FIND"), q: createProject(t, e, "SEEK")}
	task := func(prj string, in map[string]any) string {
		e.Clock.Advance(1000)
		return createTask(t, e, prj, in)
	}
	f.mine = task(f.p, map[string]any{"title": "Fix the login", "assigneeId": e.Member.User.ID, "status": "IN_PROGRESS", "dueAt": "2026-04-01T10:00:00Z"})
	f.theirs = task(f.q, map[string]any{"title": "Review budget", "assigneeId": e.Admin.User.ID, "dueAt": "2026-04-02T10:00:00Z"})
	f.nobody = task(f.q, map[string]any{"title": "Ship release", "status": "DONE"})
	f.announce = task(f.p, map[string]any{"title": "Write the announcement", "dueAt": "2026-03-31T10:00:00Z"})
	return f
}

func nodeIDs(v any, path ...any) []string {
	var out []string
	for _, n := range list(v, path...) {
		out = append(out, str(n, "id"))
	}
	return out
}

// Query.tasks and Project.tasks filter and order as GET /v1/tasks does:
// the same rules, answered by the same core service.
func TestGraphQLFindsTasks(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		f := newGQLFind(t, e)
		for _, tc := range []struct {
			args string
			want []string
		}{
			{``, []string{f.mine, f.theirs, f.nobody, f.announce}},
			{`(filter: {projectIds: ["` + f.q + `"]})`, []string{f.theirs, f.nobody}},
			{`(filter: {statuses: [OPEN, IN_PROGRESS]})`, []string{f.mine, f.theirs, f.announce}},
			{`(filter: {assignedToMe: true, unassigned: true})`, []string{f.mine, f.nobody, f.announce}},
			{`(filter: {assigneeIds: ["` + e.Admin.User.ID + `"], unassigned: false})`, []string{f.theirs}},
			{`(filter: {dueAfter: "2026-04-01T10:00:00Z", dueBefore: "2026-04-02T10:00:00Z"})`, []string{f.mine}},
			{`(filter: {query: "wri ANN"})`, []string{f.announce}},
			{`(orderBy: {field: DUE_AT, direction: DESC})`, []string{f.theirs, f.mine, f.announce, f.nobody}},
			{`(filter: {assignedToMe: true, unassigned: true, statuses: [OPEN, IN_PROGRESS]}, orderBy: {field: DUE_AT, direction: ASC})`, []string{f.announce, f.mine}},
		} {
			data := gql(t, e, e.Member.Key, `{ tasks`+tc.args+` { nodes { id } } }`, nil).ok(t)
			if got := nodeIDs(data, "tasks", "nodes"); !slices.Equal(got, tc.want) {
				t.Errorf("tasks%s = %v, want %v", tc.args, got, tc.want)
			}
		}
		data := gql(t, e, e.Member.Key, `query($p: ID!) { project(id: $p) {
			taskCounts { open inProgress done archived }
			tasks(filter: {query: "fix"}, orderBy: {field: UPDATED_AT, direction: DESC}) { nodes { id } } } }`,
			map[string]any{"p": f.p}).ok(t)
		if got := jsonString(get(data, "project", "taskCounts")); got != `{"archived":0,"done":0,"inProgress":1,"open":1}` {
			t.Errorf("taskCounts: %s", got)
		}
		if got := nodeIDs(data, "project", "tasks", "nodes"); !slices.Equal(got, []string{f.mine}) {
			t.Errorf("Project.tasks with a filter: %v", got)
		}
		// Pages by endCursor, in the order asked for.
		var got []string
		after := ""
		for range 10 {
			data := gql(t, e, e.Member.Key, `query($a: String) { tasks(first: 1, after: $a, orderBy: {field: DUE_AT, direction: ASC}) {
				nodes { id } pageInfo { hasNextPage endCursor } } }`, map[string]any{"a": after}).ok(t)
			got = append(got, nodeIDs(data, "tasks", "nodes")...)
			if get(data, "tasks", "pageInfo", "hasNextPage") != true {
				break
			}
			after = str(data, "tasks", "pageInfo", "endCursor")
		}
		if want := []string{f.announce, f.mine, f.theirs, f.nobody}; !slices.Equal(got, want) {
			t.Errorf("paged by due date: %v, want %v", got, want)
		}
		// Globex sees none of it.
		if got := nodeIDs(gql(t, e, e.Other.Key, `{ tasks(filter: {query: "wri"}) { nodes { id } } }`, nil).ok(t), "tasks", "nodes"); len(got) != 0 {
			t.Errorf("Globex sees Acme's tasks: %v", got)
		}
	})
}

func TestGraphQLCountsTasks(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		f := newGQLFind(t, e)
		data := gql(t, e, e.Guest.Key, `{ taskCounts(groupBy: STATUS) { groupBy total groups { key count } } }`, nil).ok(t)
		if got := jsonString(data["taskCounts"]); got != `{"groupBy":"STATUS","groups":[{"count":1,"key":"done"},{"count":1,"key":"in_progress"},{"count":2,"key":"open"}],"total":4}` {
			t.Errorf("by status: %s", got)
		}
		data = gql(t, e, e.Guest.Key, `{ taskCounts(groupBy: ASSIGNEE, filter: {statuses: [OPEN]}) { total groups { key count } } }`, nil).ok(t)
		groups := list(data, "taskCounts", "groups")
		if len(groups) != 2 || get(groups[0], "key") != nil || get(groups[0], "count") != float64(1) ||
			get(groups[1], "key") != e.Admin.User.ID || get(data, "taskCounts", "total") != float64(2) {
			t.Errorf("by assignee: %s", jsonString(data))
		}
		data = gql(t, e, e.Guest.Key, `{ taskCounts(groupBy: PROJECT, filter: {query: "re"}) { total groups { key count } } }`, nil).ok(t)
		if got := jsonString(get(data, "taskCounts", "groups")); got != fmt.Sprintf(`[{"count":2,"key":"%s"}]`, f.q) {
			t.Errorf("by project: %s", got)
		}
	})
}

// Errors name the argument path: filter.dueAfter, not due_after.
func TestGraphQLTaskFilterErrorsNameTheArgument(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		f := newGQLFind(t, e)
		cursor := str(gql(t, e, e.Member.Key, `{ tasks(first: 1, filter: {statuses: [OPEN]}) { pageInfo { endCursor } } }`, nil).ok(t),
			"tasks", "pageInfo", "endCursor")
		for _, tc := range []struct{ query, param string }{
			{`{ tasks(filter: {assigneeIds: ["someone"]}) { nodes { id } } }`, "filter.assigneeIds"},
			{`{ tasks(filter: {projectIds: []}) { nodes { id } } }`, "filter.projectIds"},
			{`{ tasks(filter: {assigneeIds: [], unassigned: true}) { nodes { id } } }`, "filter.assigneeIds"},
			{`{ taskCounts(groupBy: STATUS, filter: {assigneeIds: [], assignedToMe: true}) { total } }`, "filter.assigneeIds"},
			{`{ tasks(filter: {dueAfter: "yesterday"}) { nodes { id } } }`, "filter.dueAfter"},
			{`{ tasks(filter: {statuses: []}) { nodes { id } } }`, "filter.statuses"},
			{`{ tasks(filter: {query: ""}) { nodes { id } } }`, "filter.query"},
			{`{ tasks(filter: {query: "` + strings.Repeat("a", 201) + `"}) { nodes { id } } }`, "filter.query"},
			{`{ tasks(filter: {dueAfter: "0000-12-31T00:00:00Z"}) { nodes { id } } }`, "filter.dueAfter"},
			{`{ taskCounts(groupBy: STATUS, filter: {query: "a b c d e f g h i"}) { total } }`, "filter.query"},
			{`{ tasks(first: 0) { nodes { id } } }`, "first"},
			{`{ tasks(after: "` + cursor + `", filter: {statuses: [DONE]}) { nodes { id } } }`, "after"},
			{`{ tasks(after: "` + cursor + `", filter: {statuses: [OPEN]}, orderBy: {field: DUE_AT, direction: ASC}) { nodes { id } } }`, "after"},
			{`{ taskCounts(groupBy: STATUS, filter: {assigneeIds: ["x"]}) { total } }`, "filter.assigneeIds"},
			{`query($p: ID!) { project(id: $p) { tasks(filter: {projectIds: ["` + f.q + `"]}) { nodes { id } } } }`, "filter.projectIds"},
			{`query($p: ID!) { project(id: $p) { tasks(status: OPEN, filter: {statuses: [DONE]}) { nodes { id } } } }`, "status"},
			{`query($p: ID!) { project(id: $p) { tasks(assigneeId: "nobody") { nodes { id } } } }`, "assigneeId"},
			{`query($p: ID!) { project(id: $p) { tasks(filter: {assigneeIds: ["nobody"]}) { nodes { id } } } }`, "filter.assigneeIds"},
		} {
			t.Run(tc.param, func(t *testing.T) {
				gql(t, e, e.Member.Key, tc.query, map[string]any{"p": f.p}).expectError(t, "validation_failed", tc.param)
			})
		}
	})
}

// A page of projects with their counts and filtered tasks costs what one
// project costs: the counts are columns of the projects, the tasks one
// UNION ALL for every project's page.
func TestProjectTaskCountsAndFilteredTasksAreBatched(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		counter := storetest.CountStatements(db)
		e := newEnv(t, db)
		seed(t, e, 12, 5)
		gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t)
		counter.Reset()
		data := gql(t, e, e.Guest.Key, `{ projects(first: 50) { nodes { taskCount taskCounts { open done }
			tasks(first: 2, filter: {statuses: [OPEN], unassigned: false, assigneeIds: ["`+e.Member.User.ID+`"]}, orderBy: {field: DUE_AT, direction: DESC}) { nodes { id assignee { id } } } } } }`, nil).ok(t)
		if n := counter.N(); n != 3 {
			t.Fatalf("want 3 statements, got %d:\n  %s", n, strings.Join(counter.Statements(), "\n  "))
		}
		for _, p := range list(data, "projects", "nodes") {
			if get(p, "taskCounts", "open") != get(p, "taskCount") {
				t.Fatalf("taskCounts.open %v, taskCount %v", get(p, "taskCounts", "open"), get(p, "taskCount"))
			}
			for _, task := range list(p, "tasks", "nodes") {
				if str(task, "assignee", "id") != e.Member.User.ID {
					t.Fatalf("a task of another assignee: %v", task)
				}
			}
		}
	})
}
