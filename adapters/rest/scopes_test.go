package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

// scopeFixtures are the objects the scope table's requests name: each
// route's request, made with a key holding only the route's scope,
// succeeds.
type scopeFixtures struct {
	project, task, doomedTask, webhook, delivery, event, key, doomedKey string
}

func newScopeFixtures(t *testing.T, e *apitest.Env) scopeFixtures {
	t.Helper()
	var f scopeFixtures
	f.webhook = newWebhook(t, e, "http://127.0.0.1:1/down", "task.created").Str("id")
	f.project = newProject(t, e, "SCP")
	f.task = newTask(t, e, f.project, map[string]any{"title": "kept"}).Str("id")
	f.doomedTask = newTask(t, e, f.project, map[string]any{"title": "deleted"}).Str("id")
	deliveries := e.Get("/v1/webhooks/"+f.webhook+"/deliveries", e.Admin.Key)
	deliveries.ExpectStatus(t, http.StatusOK)
	events := e.Get("/v1/events", e.Admin.Key)
	events.ExpectStatus(t, http.StatusOK)
	f.delivery = firstID(t, deliveries)
	f.event = firstID(t, events)
	for _, k := range []*string{&f.key, &f.doomedKey} {
		// Scoped within what the single-scope keys below hold: a key
		// manages only the keys it covers.
		res := e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": "fixture", "scopes": []string{"api_keys:read"}})
		res.ExpectStatus(t, http.StatusCreated)
		*k = res.Str("id")
	}
	return f
}

func firstID(t *testing.T, list *apitest.Response) string {
	t.Helper()
	data, _ := list.JSON["data"].([]any)
	if len(data) == 0 {
		t.Fatalf("empty list: %s", list.Body)
	}
	return data[0].(map[string]any)["id"].(string)
}

// scopeRoute is one route of the router: the scope it needs, and a request
// that a key holding that scope alone makes with the status given.
type scopeRoute struct {
	scope  domain.Scope
	path   string
	body   any
	status int
}

func scopeTable(f scopeFixtures) map[string]scopeRoute {
	return map[string]scopeRoute{
		"GET /v1/users/me":                   {domain.ScopeUsersRead, "/v1/users/me", nil, 200},
		"GET /v1/users":                      {domain.ScopeUsersRead, "/v1/users", nil, 200},
		"POST /v1/projects":                  {domain.ScopeProjectsWrite, "/v1/projects", map[string]any{"name": "New", "key": "NEW"}, 201},
		"GET /v1/projects":                   {domain.ScopeProjectsRead, "/v1/projects", nil, 200},
		"GET /v1/projects/:projectId":        {domain.ScopeProjectsRead, "/v1/projects/" + f.project, nil, 200},
		"PATCH /v1/projects/:projectId":      {domain.ScopeProjectsWrite, "/v1/projects/" + f.project, map[string]any{"name": "Renamed"}, 200},
		"GET /v1/projects/:projectId/tasks":  {domain.ScopeTasksRead, "/v1/projects/" + f.project + "/tasks", nil, 200},
		"POST /v1/projects/:projectId/tasks": {domain.ScopeTasksWrite, "/v1/projects/" + f.project + "/tasks", map[string]any{"title": "t"}, 201},
		"POST /v1/projects/:projectId/tasks/batch": {
			domain.ScopeTasksWrite, "/v1/projects/" + f.project + "/tasks/batch", map[string]any{"tasks": []any{map[string]any{"title": "t"}}}, 201,
		},
		"GET /v1/tasks":                              {domain.ScopeTasksRead, "/v1/tasks?assignee_id=me,none&sort=-due_at", nil, 200},
		"GET /v1/tasks/counts":                       {domain.ScopeTasksRead, "/v1/tasks/counts?group_by=assignee_id", nil, 200},
		"GET /v1/tasks/:taskId":                      {domain.ScopeTasksRead, "/v1/tasks/" + f.task, nil, 200},
		"PATCH /v1/tasks/:taskId":                    {domain.ScopeTasksWrite, "/v1/tasks/" + f.task, map[string]any{"title": "u"}, 200},
		"DELETE /v1/tasks/:taskId":                   {domain.ScopeTasksWrite, "/v1/tasks/" + f.doomedTask, nil, 204},
		"POST /v1/webhooks":                          {domain.ScopeWebhooksWrite, "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:1/x", "events": []string{"task.deleted"}}, 201},
		"GET /v1/webhooks":                           {domain.ScopeWebhooksRead, "/v1/webhooks", nil, 200},
		"GET /v1/webhooks/:webhookId":                {domain.ScopeWebhooksRead, "/v1/webhooks/" + f.webhook, nil, 200},
		"PATCH /v1/webhooks/:webhookId":              {domain.ScopeWebhooksWrite, "/v1/webhooks/" + f.webhook, map[string]any{"active": true}, 200},
		"DELETE /v1/webhooks/:webhookId":             {domain.ScopeWebhooksWrite, "", nil, 204}, // its own webhook: see below
		"POST /v1/webhooks/:webhookId/rotate_secret": {domain.ScopeWebhooksWrite, "/v1/webhooks/" + f.webhook + "/rotate_secret", nil, 200},
		"POST /v1/webhooks/:webhookId/ping":          {domain.ScopeWebhooksWrite, "/v1/webhooks/" + f.webhook + "/ping", nil, 202},
		"GET /v1/webhooks/:webhookId/deliveries":     {domain.ScopeWebhooksRead, "/v1/webhooks/" + f.webhook + "/deliveries", nil, 200},
		"GET /v1/events":                             {domain.ScopeEventsRead, "/v1/events", nil, 200},
		"GET /v1/events/:eventId":                    {domain.ScopeEventsRead, "/v1/events/" + f.event, nil, 200},
		"GET /v1/audit_events":                       {domain.ScopeAuditRead, "/v1/audit_events", nil, 200},
		"POST /v1/api_keys":                          {domain.ScopeAPIKeysWrite, "/v1/api_keys", map[string]any{"name": "n", "scopes": []string{"api_keys:read"}}, 201},
		"GET /v1/api_keys":                           {domain.ScopeAPIKeysRead, "/v1/api_keys", nil, 200},
		"GET /v1/api_keys/:keyId":                    {domain.ScopeAPIKeysRead, "/v1/api_keys/" + f.key, nil, 200},
		"PATCH /v1/api_keys/:keyId":                  {domain.ScopeAPIKeysWrite, "/v1/api_keys/" + f.key, map[string]any{"name": "renamed"}, 200},
		"DELETE /v1/api_keys/:keyId":                 {domain.ScopeAPIKeysWrite, "/v1/api_keys/" + f.doomedKey, nil, 204},
		"POST /v1/webhooks/:webhookId/deliveries/:deliveryId/redeliver": {
			domain.ScopeWebhooksWrite, "/v1/webhooks/" + f.webhook + "/deliveries/" + f.delivery + "/redeliver", nil, 200,
		},
	}
}

// unscopedRoutes need no key at all.
var unscopedRoutes = map[string]bool{"GET /v1/openapi.json": true}

// Every route of the router needs a scope, and a key refuses what its
// scopes do not hold with 403 insufficient_scope naming the scope, while a
// key holding that scope alone is let through. The table is checked
// against the router itself: a route added without a row fails here.
func TestEveryRouteNeedsItsScope(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		f := newScopeFixtures(t, e)
		table := scopeTable(f)
		routed := map[string]bool{}
		for _, r := range e.Engine.Routes() {
			name := r.Method + " " + r.Path
			if !strings.HasPrefix(r.Path, "/v1/") || unscopedRoutes[name] {
				continue
			}
			routed[name] = true
			if _, ok := table[name]; !ok {
				t.Errorf("%s has no row in the scope table: which scope does it need?", name)
			}
		}
		for name := range table {
			if !routed[name] {
				t.Errorf("%s is in the scope table but not routed", name)
			}
		}
		for name, row := range table {
			method := strings.Fields(name)[0]
			if row.path == "" {
				doomed := newWebhook(t, e, "http://127.0.0.1:1/gone", "task.created").Str("id")
				row.path = "/v1/webhooks/" + doomed
			}
			t.Run(name, func(t *testing.T) {
				without := e.KeyFor(e.Admin.User, scopesWithout(row.scope), nil)
				res := e.Send(method, row.path, without, row.body)
				res.ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
				if msg := res.ErrorField("message"); !strings.Contains(msg, string(row.scope)) {
					t.Fatalf("the refusal must name the scope %s: %q", row.scope, msg)
				}
				only := e.KeyFor(e.Admin.User, []string{string(row.scope)}, nil)
				e.Send(method, row.path, only, row.body).ExpectStatus(t, row.status)
			})
		}
	})
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

// A key's scopes meet its user's role: the role's refusal comes first
// (permission_denied), and a write scope includes its read scope.
func TestScopesMeetTheRole(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p := newProject(t, e, "ROLE")
		guestWrites := e.KeyFor(e.Guest.User, []string{"tasks:write"}, nil)
		e.Send(http.MethodPost, "/v1/projects/"+p+"/tasks", guestWrites, map[string]any{"title": "t"}).
			ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Get("/v1/projects/"+p+"/tasks", guestWrites).ExpectStatus(t, http.StatusOK) // tasks:write includes tasks:read
		e.Get("/v1/projects/"+p, guestWrites).ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		memberHooks := e.KeyFor(e.Member.User, []string{"webhooks:read"}, nil)
		e.Get("/v1/webhooks", memberHooks).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
	})
}

// Lowering a user's role lowers every key of theirs at once; raising it
// raises them, within their scopes.
func TestLoweringARoleLowersItsKeys(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		ctx := context.Background()
		p := newProject(t, e, "DEMO")
		everything := e.Member.Key
		tasksOnly := e.KeyFor(e.Member.User, []string{"tasks:write"}, nil)
		create := func(key string) *apitest.Response {
			return e.Send(http.MethodPost, "/v1/projects/"+p+"/tasks", key, map[string]any{"title": "t"})
		}
		create(everything).ExpectStatus(t, http.StatusCreated)
		create(tasksOnly).ExpectStatus(t, http.StatusCreated)
		if _, err := e.App.Admin.SetRole(ctx, e.Member.User.ID, domain.RoleGuest); err != nil {
			t.Fatal(err)
		}
		create(everything).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		create(tasksOnly).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Get("/v1/projects/"+p+"/tasks", tasksOnly).ExpectStatus(t, http.StatusOK)
		if _, err := e.App.Admin.SetRole(ctx, e.Member.User.ID, domain.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		e.Get("/v1/webhooks", everything).ExpectStatus(t, http.StatusOK)
		e.Get("/v1/webhooks", tasksOnly).ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		if _, err := e.App.Admin.SetRole(ctx, e.Member.User.ID, "owner"); !domain.IsCode(err, domain.CodeValidationFailed) {
			t.Fatalf("an unknown role: %v", err)
		}
	})
}

// A key restricted to projects sees nothing of any other: not in lists,
// not by id, not in the event log; and it creates neither projects nor
// webhooks.
func TestProjectRestrictedKeySeesOnlyItsProjects(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		mine, other := newProject(t, e, "MINE"), newProject(t, e, "OTHER")
		myTask := newTask(t, e, mine, map[string]any{"title": "mine"}).Str("id")
		otherTask := newTask(t, e, other, map[string]any{"title": "other"}).Str("id")
		key := e.KeyFor(e.Admin.User, nil, []string{mine})

		expectIDs(t, e.Get("/v1/projects", key), mine)
		e.Get("/v1/projects/"+mine, key).ExpectStatus(t, http.StatusOK)
		expectIDs(t, e.Get("/v1/projects/"+mine+"/tasks", key), myTask)
		e.Get("/v1/tasks/"+myTask, key).ExpectStatus(t, http.StatusOK)
		for _, r := range []struct {
			method, path string
			body         any
		}{
			{http.MethodGet, "/v1/projects/" + other, nil},
			{http.MethodPatch, "/v1/projects/" + other, map[string]any{"name": "x"}},
			{http.MethodGet, "/v1/projects/" + other + "/tasks", nil},
			{http.MethodPost, "/v1/projects/" + other + "/tasks", map[string]any{"title": "x"}},
			{http.MethodGet, "/v1/tasks/" + otherTask, nil},
			{http.MethodPatch, "/v1/tasks/" + otherTask, map[string]any{"title": "x"}},
			{http.MethodDelete, "/v1/tasks/" + otherTask, nil},
		} {
			e.Send(r.method, r.path, key, r.body).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
		}
		// As a filter, another project is what an unknown one is.
		e.Get("/v1/events?project_id="+other, key).ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "project_id")
		e.Get("/v1/events?project_id=prj_unknown", key).ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "project_id")
		// Its events are the only ones it lists or reads.
		events := e.Get("/v1/events?limit=100", key)
		events.ExpectStatus(t, http.StatusOK)
		for _, ev := range events.JSON["data"].([]any) {
			if m := ev.(map[string]any); projectOfEvent(m) != mine {
				t.Fatalf("a restricted key listed an event of another project: %v", m)
			}
		}
		all := e.Get("/v1/events?limit=100", e.Admin.Key)
		seen := map[string]int{}
		for _, ev := range all.JSON["data"].([]any) {
			m := ev.(map[string]any)
			res := e.Get("/v1/events/"+m["id"].(string), key)
			seen[projectOfEvent(m)]++
			if projectOfEvent(m) == mine {
				res.ExpectStatus(t, http.StatusOK)
			} else {
				res.ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
			}
		}
		if seen[mine] != 2 || seen[other] != 2 || len(events.JSON["data"].([]any)) != 2 {
			t.Fatalf("events by project %v; the restricted key listed %s", seen, events.Body)
		}
		e.Send(http.MethodPost, "/v1/projects", key, map[string]any{"name": "N", "key": "NEW"}).
			ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		e.Get("/v1/webhooks", key).ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		e.Send(http.MethodPost, "/v1/webhooks", key, map[string]any{"url": "http://127.0.0.1:1/x", "events": []string{"task.created"}}).
			ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
	})
}

// projectOfEvent is the project an event is of: the project itself, or
// the task's.
func projectOfEvent(ev map[string]any) string {
	data := ev["data"].(map[string]any)
	if strings.HasPrefix(fmt.Sprint(ev["type"]), "project.") {
		return data["id"].(string)
	}
	return data["project_id"].(string)
}

func expectIDs(t *testing.T, res *apitest.Response, want ...string) {
	t.Helper()
	res.ExpectStatus(t, http.StatusOK)
	var got []string
	for _, item := range res.JSON["data"].([]any) {
		got = append(got, item.(map[string]any)["id"].(string))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
}
