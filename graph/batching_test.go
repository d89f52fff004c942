package graph_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

// nestedQuery is the acceptance query of the batching requirement.
const nestedQuery = `{ projects(first: 20) { nodes { tasks(first: 50) { nodes { assignee { email } project { key } } } } } }`

// seed creates projects × tasks through the core services, the tasks
// assigned in turn to the admin, the member and the guest. It all commits
// as one transaction: a thousand tasks cost a thousand creates' statements,
// not a thousand commits.
func seed(t *testing.T, e *apitest.Env, projects, tasks int) {
	t.Helper()
	member := domain.Actor{UserID: e.Member.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleMember}
	assignees := []string{e.Admin.User.ID, e.Member.User.ID, e.Guest.User.ID}
	err := e.DB.InTx(context.Background(), func(ctx context.Context) error {
		for i := range projects {
			p, err := e.App.Projects.Create(ctx, member, domain.ProjectFields{Name: domain.Set(fmt.Sprintf("P%d", i)), Key: domain.Set(fmt.Sprintf("P%d", i))})
			if err != nil {
				return err
			}
			for j := range tasks {
				a := assignees[(i+j)%len(assignees)]
				if _, err := e.App.Tasks.Create(ctx, member, p.ID, domain.TaskFields{Title: domain.Set(fmt.Sprintf("T%d", j)), AssigneeID: domain.Set(a)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countNested runs the nested query and returns the SQL statements it cost,
// after a first request has warmed the key cache (authentication costs no
// statement afterwards; see decisions.md, key cache).
func countNested(t *testing.T, db *store.DB, projects, tasks int) []string {
	t.Helper()
	counter := storetest.CountStatements(db)
	e := newEnv(t, db)
	seed(t, e, projects, tasks)
	gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t)

	counter.Reset()
	data := gql(t, e, e.Guest.Key, nestedQuery, nil).ok(t)
	stmts := counter.Statements()

	nodes := list(data, "projects", "nodes")
	if len(nodes) != projects {
		t.Fatalf("want %d projects, got %d", projects, len(nodes))
	}
	for _, n := range nodes {
		ts := list(n, "tasks", "nodes")
		if len(ts) != tasks {
			t.Fatalf("want %d tasks per project, got %d", tasks, len(ts))
		}
		for _, task := range ts {
			if !strings.HasSuffix(str(task, "assignee", "email"), "@acme.test") || str(task, "project", "key") == "" {
				t.Fatalf("task without assignee or project: %v", task)
			}
		}
	}
	return stmts
}

// TestNestedQueryCostsConstantStatements is the batching of docs/api.md#graphql:
// 20 projects × 50 tasks with their assignees and projects cost what 2 × 3
// cost. The statements are: the page of projects, one UNION ALL for every
// project's page of tasks, one lookup of the assignees (Task.project is
// served from the projects already loaded).
func TestNestedQueryCostsConstantStatements(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		small := countNested(t, db, 2, 3)
		t.Logf("2 projects × 3 tasks: %d statements:\n  %s", len(small), strings.Join(small, "\n  "))
		if len(small) != 3 {
			t.Fatalf("want 3 statements, got %d:\n  %s", len(small), strings.Join(small, "\n  "))
		}
	})
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		large := countNested(t, db, 20, 50)
		if len(large) != 3 {
			t.Fatalf("20 projects × 50 tasks: want 3 statements, got %d:\n  %s", len(large), strings.Join(large, "\n  "))
		}
	})
}

// A project without tasks on the page costs one more statement, for all such
// projects together: an empty page must tell an empty project from an absent
// one (as REST's task list does).
func TestNestedQueryWithEmptyProjects(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		counter := storetest.CountStatements(db)
		e := newEnv(t, db)
		seed(t, e, 3, 2)
		createProject(t, e, "EMA")
		createProject(t, e, "EMB")
		gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t)
		counter.Reset()
		data := gql(t, e, e.Guest.Key, nestedQuery, nil).ok(t)
		if n := counter.N(); n != 4 {
			t.Fatalf("want 4 statements, got %d:\n  %s", n, strings.Join(counter.Statements(), "\n  "))
		}
		sizes := map[int]int{}
		for _, p := range list(data, "projects", "nodes") {
			sizes[len(list(p, "tasks", "nodes"))]++
		}
		if fmt.Sprint(sizes) != "map[0:2 2:3]" {
			t.Fatalf("task pages: %v", sizes)
		}
	})
}

// The Projects resolver loads every task page its projects' tasks fields ask
// for, and their assignees, before those fields resolve: the nested query
// never waits for a dataloader's timer, so its batches do not depend on
// timing. With a wait of an hour, a field that missed the prefetched pages
// would hold the query for that hour (the test binary's timeout fails it).
// Through nodes and edges, with the page size in a variable.
func TestNestedQueryNeedsNoLoaderTimer(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		counter := storetest.CountStatements(db)
		e := newEnv(t, db, func(o *server.Options) { o.LoaderWait = time.Hour })
		seed(t, e, 3, 4)
		createProject(t, e, "EMA")
		gql(t, e, e.Guest.Key, `{ me { id } }`, nil).ok(t)
		for _, q := range []struct {
			query string
			vars  map[string]any
		}{
			{nestedQuery, nil},
			{`query($n: Int) { projects(first: 20) { edges { node { tasks(first: $n) { edges { node { assignee { email } project { key } } } } } } } }`, map[string]any{"n": 3}},
		} {
			counter.Reset()
			data := gql(t, e, e.Guest.Key, q.query, q.vars).ok(t)
			if n := counter.N(); n != 4 {
				t.Fatalf("want 4 statements, got %d:\n  %s", n, strings.Join(counter.Statements(), "\n  "))
			}
			if !strings.Contains(fmt.Sprint(data), "@") {
				t.Fatalf("no assignee email in %v", data)
			}
		}
	})
}
