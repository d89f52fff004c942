package graph_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
	"github.com/worktrack/worktrack/graph/server"
)

// rootField is one root field of the schema: the scope it needs and an
// operation that a key holding that scope alone runs without an error.
type rootField struct {
	scope domain.Scope
	op    string
	vars  map[string]any
}

type graphFixtures struct {
	project, task, doomedTask, webhook, doomedWebhook, key, doomedKey string
}

func newGraphFixtures(t *testing.T, e *apitest.Env) graphFixtures {
	t.Helper()
	var f graphFixtures
	f.project = createProject(t, e, "SCP")
	f.task = createTask(t, e, f.project, map[string]any{"title": "kept"})
	f.doomedTask = createTask(t, e, f.project, map[string]any{"title": "deleted"})
	for _, w := range []*string{&f.webhook, &f.doomedWebhook} {
		data := gql(t, e, e.Admin.Key, `mutation { createWebhook(input: {url: "http://127.0.0.1:1/x", events: [TASK_CREATED]}) { webhook { id } } }`, nil).ok(t)
		*w = mustStr(t, data, "createWebhook", "webhook", "id")
	}
	for _, k := range []*string{&f.key, &f.doomedKey} {
		// Scoped within what the single-scope keys hold: a key manages
		// only the keys it covers.
		data := gql(t, e, e.Admin.Key, `mutation { createApiKey(input: {name: "fixture", scopes: ["api_keys:read"]}) { apiKey { id } } }`, nil).ok(t)
		*k = mustStr(t, data, "createApiKey", "apiKey", "id")
	}
	return f
}

func rootFields(f graphFixtures) map[string]rootField {
	id := func(v string) map[string]any { return map[string]any{"id": v} }
	return map[string]rootField{
		"Query.me":          {domain.ScopeUsersRead, `{ me { id } }`, nil},
		"Query.users":       {domain.ScopeUsersRead, `{ users { nodes { id } } }`, nil},
		"Query.projects":    {domain.ScopeProjectsRead, `{ projects { nodes { id } } }`, nil},
		"Query.project":     {domain.ScopeProjectsRead, `query($id: ID!) { project(id: $id) { id } }`, id(f.project)},
		"Query.task":        {domain.ScopeTasksRead, `query($id: ID!) { task(id: $id) { id } }`, id(f.task)},
		"Query.tasks":       {domain.ScopeTasksRead, `{ tasks(filter: {assignedToMe: true, unassigned: true}) { nodes { id } } }`, nil},
		"Query.taskCounts":  {domain.ScopeTasksRead, `{ taskCounts(groupBy: ASSIGNEE) { total } }`, nil},
		"Query.webhooks":    {domain.ScopeWebhooksRead, `{ webhooks { nodes { id } } }`, nil},
		"Query.webhook":     {domain.ScopeWebhooksRead, `query($id: ID!) { webhook(id: $id) { id } }`, id(f.webhook)},
		"Query.events":      {domain.ScopeEventsRead, `{ events { nodes { id } } }`, nil},
		"Query.apiKeys":     {domain.ScopeAPIKeysRead, `{ apiKeys { nodes { id prefix scopes projectIds } } }`, nil},
		"Query.auditEvents": {domain.ScopeAuditRead, `{ auditEvents { nodes { id action actor { type } } } }`, nil},
		"Query.node":        {domain.ScopeTasksRead, `query($id: ID!) { node(id: $id) { id } }`, id(f.task)},
		"Mutation.createProject": {domain.ScopeProjectsWrite,
			`mutation { createProject(input: {name: "New", key: "NEW"}) { id } }`, nil},
		"Mutation.updateProject": {domain.ScopeProjectsWrite,
			`mutation($id: ID!) { updateProject(id: $id, input: {name: "Renamed"}) { id } }`, id(f.project)},
		"Mutation.createTask": {domain.ScopeTasksWrite,
			`mutation($id: ID) { createTask(projectId: $id, input: {title: "t"}) { id } }`, id(f.project)},
		"Mutation.createTasks": {domain.ScopeTasksWrite,
			`mutation($id: ID!) { createTasks(projectId: $id, inputs: [{title: "t"}]) { id } }`, id(f.project)},
		"Mutation.updateTask": {domain.ScopeTasksWrite,
			`mutation($id: ID!) { updateTask(id: $id, input: {title: "u"}) { id } }`, id(f.task)},
		"Mutation.deleteTask": {domain.ScopeTasksWrite, `mutation($id: ID!) { deleteTask(id: $id) }`, id(f.doomedTask)},
		"Mutation.createWebhook": {domain.ScopeWebhooksWrite,
			`mutation { createWebhook(input: {url: "http://127.0.0.1:1/y", events: [TASK_DELETED]}) { secret } }`, nil},
		"Mutation.updateWebhook": {domain.ScopeWebhooksWrite,
			`mutation($id: ID!) { updateWebhook(id: $id, input: {active: true}) { id } }`, id(f.webhook)},
		"Mutation.deleteWebhook": {domain.ScopeWebhooksWrite, `mutation($id: ID!) { deleteWebhook(id: $id) }`, id(f.doomedWebhook)},
		"Mutation.rotateWebhookSecret": {domain.ScopeWebhooksWrite,
			`mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }`, id(f.webhook)},
		"Mutation.pingWebhook": {domain.ScopeWebhooksWrite, `mutation($id: ID!) { pingWebhook(id: $id) }`, id(f.webhook)},
		"Mutation.createApiKey": {domain.ScopeAPIKeysWrite,
			`mutation { createApiKey(input: {name: "n", scopes: ["api_keys:read"]}) { secret apiKey { id } } }`, nil},
		"Mutation.updateApiKey": {domain.ScopeAPIKeysWrite,
			`mutation($id: ID!) { updateApiKey(id: $id, input: {name: "renamed"}) { name } }`, id(f.key)},
		"Mutation.revokeApiKey": {domain.ScopeAPIKeysWrite, `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`, id(f.doomedKey)},
		"Subscription.events":   {domain.ScopeEventsRead, `subscription { events { id } }`, nil},
	}
}

// Every root field of the schema needs a scope: outside it the field is
// null beside an insufficient_scope error at its path, naming the scope;
// with that scope alone it resolves. The table is checked against the
// schema: a root field added without a row fails here.
func TestEveryRootFieldNeedsItsScope(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		table := rootFields(newGraphFixtures(t, e.Env))
		schema := graph.NewSchema(nil).Schema()
		inSchema := map[string]bool{}
		for _, root := range []*ast.Definition{schema.Query, schema.Mutation, schema.Subscription} {
			for _, f := range root.Fields {
				if strings.HasPrefix(f.Name, "__") {
					continue
				}
				name := root.Name + "." + f.Name
				inSchema[name] = true
				if _, ok := table[name]; !ok {
					t.Errorf("%s has no row in the scope table: which scope does it need?", name)
				}
			}
		}
		for name, row := range table {
			if !inSchema[name] {
				t.Errorf("%s is in the scope table but not in the schema", name)
				continue
			}
			field := strings.SplitN(name, ".", 2)[1]
			t.Run(name, func(t *testing.T) {
				without := e.KeyFor(e.Admin.User, scopesWithout(row.scope), nil)
				only := e.KeyFor(e.Admin.User, []string{string(row.scope)}, nil)
				if strings.HasPrefix(name, "Subscription.") {
					checkSubscriptionScope(t, e, row, without, only)
					return
				}
				res := gql(t, e.Env, without, row.op, row.vars)
				err := res.expectError(t, string(domain.CodeInsufficientScope), "")
				if len(err.Path) != 1 || err.Path[0] != field || !strings.Contains(err.Message, string(row.scope)) {
					t.Fatalf("the refusal must be at [%s] and name %s: %+v", field, row.scope, err)
				}
				if res.Data != nil && res.Data[field] != nil {
					t.Fatalf("a refused field has a value: %s", res.Body)
				}
				gql(t, e.Env, only, row.op, row.vars).ok(t)
			})
		}
	})
}

func checkSubscriptionScope(t *testing.T, e *liveEnv, row rootField, without, only string) {
	t.Helper()
	c := dialWS(t, e.URL, nil, bearer(without))
	c.ack()
	c.subscribe("1", row.op, nil)
	if err := c.failure("1", 10*time.Second); err.Extensions["code"] != string(domain.CodeInsufficientScope) ||
		!strings.Contains(err.Message, string(row.scope)) {
		t.Fatalf("a subscription without %s: %+v", row.scope, err)
	}
	ok := dialWS(t, e.URL, nil, bearer(only))
	ok.ack()
	ok.subscribe("1", row.op, nil)
	waitForSubscriptions(t, e, 1)
	createTask(t, e.Env, createProject(t, e.Env, "SUB"), map[string]any{"title": "seen"})
	if ev := ok.event("1", 10*time.Second); ev["id"] == nil {
		t.Fatalf("an event without an id: %v", ev)
	}
}

// scopesWithout is every scope but those that grant s.
func scopesWithout(s domain.Scope) []string {
	var out []string
	for _, held := range domain.Scopes {
		if !domain.GrantsScope([]domain.Scope{held}, s) {
			out = append(out, string(held))
		}
	}
	return out
}

// The fields of an operation that the key may read resolve beside the
// errors of those it may not: a dashboard key without webhooks:read still
// gets its projects.
func TestPartialDataBesideInsufficientScope(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		p := createProject(t, e, "PART")
		key := e.KeyFor(e.Admin.User, []string{"projects:read", "tasks:read"}, nil)
		res := gql(t, e, key, `query($id: ID!) {
			projects { nodes { id tasks { nodes { id } } } }
			webhooks { nodes { id } }
			me { id }
			project(id: $id) { key }
		}`, map[string]any{"id": p})
		if res.Status != http.StatusOK || str(res.Data, "projects", "nodes", 0, "id") != p || str(res.Data, "project", "key") != "PART" {
			t.Fatalf("the readable fields must resolve: %s", res.Body)
		}
		if res.Data["webhooks"] != nil || res.Data["me"] != nil {
			t.Fatalf("refused fields must be null: %s", res.Body)
		}
		paths := map[string]string{}
		for _, err := range res.Errors {
			paths[err.Path[0].(string)] = err.Extensions["code"].(string)
		}
		if len(res.Errors) != 2 || paths["webhooks"] != "insufficient_scope" || paths["me"] != "insufficient_scope" {
			t.Fatalf("want insufficient_scope at [webhooks] and [me]: %s", res.Body)
		}
	})
}

// A key restricted to projects sees nothing of another project over
// GraphQL either: not in lists, not by id (node included), not in the
// event log, not in a subscription.
func TestRestrictedKeyOverGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		mine, other := createProject(t, e.Env, "MINE"), createProject(t, e.Env, "OTHER")
		myTask := createTask(t, e.Env, mine, map[string]any{"title": "mine"})
		otherTask := createTask(t, e.Env, other, map[string]any{"title": "other"})
		key := e.KeyFor(e.Admin.User, nil, []string{mine})

		data := gql(t, e.Env, key, `{ projects { nodes { id taskCount tasks { nodes { id } } } }
			events(first: 100) { nodes { projectId } } }`, nil).ok(t)
		if len(list(data, "projects", "nodes")) != 1 || str(data, "projects", "nodes", 0, "id") != mine ||
			str(data, "projects", "nodes", 0, "tasks", "nodes", 0, "id") != myTask {
			t.Fatalf("projects: %v", data)
		}
		events := list(data, "events", "nodes")
		for _, ev := range events {
			if str(ev, "projectId") != mine {
				t.Fatalf("an event of another project: %v", events)
			}
		}
		if len(events) != 2 {
			t.Fatalf("want its project's 2 events, got %v", events)
		}
		for _, id := range []string{other, otherTask} {
			gql(t, e.Env, key, `query($id: ID!) { node(id: $id) { id } }`, map[string]any{"id": id}).
				expectError(t, string(domain.CodeNotFound), "")
		}
		gql(t, e.Env, key, `query($id: ID!) { task(id: $id) { id } }`, map[string]any{"id": otherTask}).
			expectError(t, string(domain.CodeNotFound), "")
		gql(t, e.Env, key, `mutation { createProject(input: {name: "N", key: "NOPE"}) { id } }`, nil).
			expectError(t, string(domain.CodeInsufficientScope), "")

		c := dialWS(t, e.URL, nil, bearer(key))
		c.ack()
		c.subscribe("1", `subscription { events { projectId task { title } } }`, nil)
		waitForSubscriptions(t, e, 1)
		createTask(t, e.Env, other, map[string]any{"title": "unseen"})
		createTask(t, e.Env, mine, map[string]any{"title": "seen"})
		if ev := c.event("1", 10*time.Second); str(ev, "projectId") != mine || str(ev, "task", "title") != "seen" {
			t.Fatalf("the restricted subscription got %v", ev)
		}
		c.subscribe("2", `subscription($p: ID) { events(projectId: $p) { id } }`, map[string]any{"p": other})
		if err := c.failure("2", 10*time.Second); err.Extensions["code"] != string(domain.CodeValidationFailed) {
			t.Fatalf("subscribing to another project: %+v", err)
		}
	})
}

// Revoking a key through the API closes its sockets within 10 seconds,
// with 4403; a socket of another key stays open.
func TestRevokingThroughTheAPIClosesSockets(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		data := gql(t, e.Env, e.Member.Key, `mutation { createApiKey(input: {name: "socket", scopes: ["events:read"]}) { secret apiKey { id } } }`, nil).ok(t)
		secret, id := mustStr(t, data, "createApiKey", "secret"), mustStr(t, data, "createApiKey", "apiKey", "id")
		victim := dialWS(t, e.URL, nil, bearer(secret))
		victim.ack()
		victim.subscribe("1", `subscription { events { id } }`, nil)
		bystander := dialWS(t, e.URL, nil, bearer(e.Member.Key))
		bystander.ack()
		waitForSubscriptions(t, e, 1)

		revoked := time.Now()
		data = gql(t, e.Env, e.Member.Key, `mutation($id: ID!) { revokeApiKey(id: $id) { revokedAt } }`, map[string]any{"id": id}).ok(t)
		if str(data, "revokeApiKey", "revokedAt") == "" {
			t.Fatalf("revoked: %v", data)
		}
		code, reason := victim.closed(15 * time.Second)
		t.Logf("closed %s after the revocation", time.Since(revoked).Round(time.Millisecond))
		if code != server.CloseForbidden {
			t.Fatalf("closed with %d %q, want 4403", code, reason)
		}
		if took := time.Since(revoked); took > 10*time.Second {
			t.Fatalf("closed %s after the revocation, want within 10s", took)
		}
		bystander.quiet(100 * time.Millisecond)
	})
}

// Lowering a user's role lowers their open sockets too: a socket's
// operations act with the role it authenticated with, so it is closed
// with 4403 within 10 s, and the user connects again with the new role.
func TestLoweringARoleClosesItsSockets(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		demoted := dialWS(t, e.URL, nil, bearer(e.Admin.Key))
		demoted.ack()
		demoted.subscribe("1", `subscription { events { id } }`, nil)
		bystander := dialWS(t, e.URL, nil, bearer(e.Member.Key))
		bystander.ack()
		waitForSubscriptions(t, e, 1)

		lowered := time.Now()
		if _, err := e.App.Admin.SetRole(context.Background(), e.Admin.User.ID, domain.RoleMember); err != nil {
			t.Fatal(err)
		}
		code, reason := demoted.closed(15 * time.Second)
		if code != server.CloseForbidden || time.Since(lowered) > 10*time.Second {
			t.Fatalf("closed with %d %q %s after the role changed, want 4403 within 10s", code, reason, time.Since(lowered))
		}
		bystander.quiet(100 * time.Millisecond)
		// The key still works, with the member's role.
		again := dialWS(t, e.URL, nil, bearer(e.Admin.Key))
		again.ack()
		gql(t, e.Env, e.Admin.Key, `{ webhooks { nodes { id } } }`, nil).expectError(t, "permission_denied", "")
	})
}
