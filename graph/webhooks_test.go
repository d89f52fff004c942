package graph_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
)

const webhookFields = `id url events active createdAt updatedAt`

func createWebhook(t *testing.T, e *apitest.Env, url string, events ...string) (id, secret string) {
	t.Helper()
	data := gql(t, e, e.Admin.Key, `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { secret webhook { `+webhookFields+` } } }`,
		map[string]any{"in": map[string]any{"url": url, "events": events}}).ok(t)
	return mustStr(t, data, "createWebhook", "webhook", "id"), mustStr(t, data, "createWebhook", "secret")
}

func TestWebhookQueriesAndMutations(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		data := gql(t, e, e.Admin.Key, `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { secret webhook { `+webhookFields+` } } }`,
			map[string]any{"in": map[string]any{"url": "https://example.com/hook", "events": []string{"TASK_CREATED", "PROJECT_UPDATED", "TASK_CREATED"}}}).ok(t)
		w := get(data, "createWebhook", "webhook")
		id, secret := mustStr(t, w, "id"), mustStr(t, data, "createWebhook", "secret")
		if !strings.HasPrefix(id, "whk_") || !strings.HasPrefix(secret, "whsec_") || len(secret) < len("whsec_")+32 ||
			jsonString(get(w, "events")) != `["TASK_CREATED","PROJECT_UPDATED"]` || get(w, "active") != true ||
			str(w, "url") != "https://example.com/hook" || str(w, "createdAt") != str(w, "updatedAt") {
			t.Fatalf("created: %s", jsonString(data))
		}
		// REST shows the same webhook.
		rest := e.Get("/v1/webhooks/"+id, e.Admin.Key)
		if rest.Str("created_at") != str(w, "createdAt") || rest.Str("url") != str(w, "url") || jsonString(rest.JSON["events"]) != `["task.created","project.updated"]` {
			t.Fatalf("REST %s vs %v", rest.Body, w)
		}

		// Reads: the list, one webhook, a node; none can show the secret.
		read := gql(t, e, e.Admin.Key, `query($id: ID!) { webhooks { `+connFields+` } webhook(id: $id) { `+webhookFields+` }
			node(id: $id) { ... on Webhook { url } } }`, map[string]any{"id": id})
		data = read.ok(t)
		if p := readPage(t, get(data, "webhooks")); fmt.Sprint(p.ids) != fmt.Sprint([]string{id}) || p.hasNext {
			t.Fatalf("webhooks: %v", p)
		}
		if jsonString(get(data, "webhook")) != jsonString(w) || str(data, "node", "url") != "https://example.com/hook" {
			t.Fatalf("webhook: %s", read.Body)
		}
		if strings.Contains(string(read.Body), secret) {
			t.Fatal("a read showed the secret")
		}
		gql(t, e, e.Admin.Key, `{ webhook(id: "whk_x") { secret } }`, nil).expectError(t, "validation_failed", "query")

		// Update is a merge patch; null is refused for every field.
		const update = `mutation($id: ID!, $in: UpdateWebhookInput!) { updateWebhook(id: $id, input: $in) { ` + webhookFields + ` } }`
		e.Clock.Advance(time.Second)
		up := get(gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"active": false}}).ok(t), "updateWebhook")
		if up.(map[string]any)["active"] != false || str(up, "url") != str(w, "url") || str(up, "updatedAt") == str(w, "updatedAt") {
			t.Fatalf("update: %v", up)
		}
		up = get(gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"events": []string{"TASK_DELETED"}, "url": "https://example.com/v2"}}).ok(t), "updateWebhook")
		if jsonString(get(up, "events")) != `["TASK_DELETED"]` || str(up, "url") != "https://example.com/v2" {
			t.Fatalf("update: %v", up)
		}
		for _, f := range []string{"url", "events", "active"} {
			gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{f: nil}}).expectError(t, "validation_failed", f)
		}
		gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"url": "ftp://example.com"}}).expectError(t, "validation_failed", "url")
		gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"events": []string{}}}).expectError(t, "validation_failed", "events")
		gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"events": []string{"TASK_EXPLODED"}}}).expectError(t, "validation_failed", "events")

		// Rotation shows a new secret, once.
		rot := gql(t, e, e.Admin.Key, `mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret webhook { id } } }`, map[string]any{"id": id}).ok(t)
		if s := str(rot, "rotateWebhookSecret", "secret"); !strings.HasPrefix(s, "whsec_") || s == secret || str(rot, "rotateWebhookSecret", "webhook", "id") != id {
			t.Fatalf("rotate: %v", rot)
		}

		if del := gql(t, e, e.Admin.Key, `mutation($id: ID!) { deleteWebhook(id: $id) }`, map[string]any{"id": id}).ok(t); del["deleteWebhook"] != id {
			t.Fatalf("delete: %v", del)
		}
		gql(t, e, e.Admin.Key, `query($id: ID!) { webhook(id: $id) { id } }`, map[string]any{"id": id}).expectError(t, "resource_not_found", "")
		gql(t, e, e.Admin.Key, `mutation($id: ID!) { deleteWebhook(id: $id) }`, map[string]any{"id": id}).expectError(t, "resource_not_found", "")
	})
}

func TestWebhookCreateErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		const q = `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { secret } }`
		// Loopback receivers are refused unless WORKTRACK_WEBHOOK_ALLOW_PRIVATE.
		strict := newEnv(t, db)
		gql(t, strict, strict.Admin.Key, q, map[string]any{"in": map[string]any{"url": "http://127.0.0.1/hook", "events": []string{"TASK_CREATED"}}}).
			expectError(t, "validation_failed", "url")

		e := newWebhookEnv(t, db)
		for _, c := range []struct {
			in    map[string]any
			param string
		}{
			{map[string]any{"url": "not a url", "events": []string{"TASK_CREATED"}}, "url"},
			{map[string]any{"url": "https://user:pw@example.com/", "events": []string{"TASK_CREATED"}}, "url"},
			{map[string]any{"url": "https://example.com/", "events": []string{}}, "events"},
			{map[string]any{"url": "https://example.com/", "events": []string{"task.created"}}, "events"},
			{map[string]any{"url": "https://example.com/"}, "events"},
		} {
			gql(t, e, e.Admin.Key, q, map[string]any{"in": c.in}).expectError(t, "validation_failed", c.param)
		}
	})
}

// Every webhook call, reads included, is admin-only; another workspace's
// webhook is not found.
func TestWebhookRolesAndTenancy(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		id, _ := createWebhook(t, e, "https://example.com/hook", "TASK_CREATED")
		for _, key := range []string{e.Member.Key, e.Guest.Key} {
			for _, q := range []string{
				`{ webhooks { nodes { id } } }`,
				fmt.Sprintf(`{ webhook(id: %q) { id } }`, id),
				fmt.Sprintf(`{ node(id: %q) { id } }`, id),
				`mutation { createWebhook(input: {url: "https://example.com/x", events: [TASK_CREATED]}) { secret } }`,
				fmt.Sprintf(`mutation { updateWebhook(id: %q, input: {active: false}) { id } }`, id),
				fmt.Sprintf(`mutation { rotateWebhookSecret(id: %q) { secret } }`, id),
				fmt.Sprintf(`mutation { deleteWebhook(id: %q) }`, id),
			} {
				gql(t, e, key, q, nil).expectError(t, "permission_denied", "")
			}
		}
		for _, q := range []string{
			fmt.Sprintf(`{ webhook(id: %q) { id } }`, id),
			fmt.Sprintf(`{ node(id: %q) { id } }`, id),
			fmt.Sprintf(`mutation { updateWebhook(id: %q, input: {active: false}) { id } }`, id),
			fmt.Sprintf(`mutation { rotateWebhookSecret(id: %q) { secret } }`, id),
			fmt.Sprintf(`mutation { deleteWebhook(id: %q) }`, id),
		} {
			gql(t, e, e.Other.Key, q, nil).expectError(t, "resource_not_found", "")
		}
		if n := list(gql(t, e, e.Other.Key, `{ webhooks { nodes { id } } }`, nil).ok(t), "webhooks", "nodes"); len(n) != 0 {
			t.Fatalf("another workspace's list: %v", n)
		}
		// Still there, unchanged.
		if get(gql(t, e, e.Admin.Key, fmt.Sprintf(`{ webhook(id: %q) { active } }`, id), nil).ok(t), "webhook", "active") != true {
			t.Fatal("refused calls changed the webhook")
		}
	})
}

// The webhook list pages like the others, with REST's cursors.
func TestWebhooksPagination(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		var want []string
		for i := range 5 {
			e.Clock.Advance(time.Millisecond)
			id, _ := createWebhook(t, e, fmt.Sprintf("https://example.com/%d", i), "TASK_CREATED")
			want = append(want, id)
		}
		const q = `query($a: String) { webhooks(first: 2, after: $a) { ` + connFields + ` } }`
		var got []string
		var after any
		for range 5 {
			p := readPage(t, get(gql(t, e, e.Admin.Key, q, map[string]any{"a": after}).ok(t), "webhooks"))
			got = append(got, p.ids...)
			if !p.hasNext {
				break
			}
			if after == nil {
				rest := e.Get("/v1/webhooks?limit=2", e.Admin.Key)
				if pg, _ := rest.JSON["pagination"].(map[string]any); pg["next_cursor"] != p.endCursor {
					t.Fatalf("endCursor %v is not REST's next_cursor: %s", p.endCursor, rest.Body)
				}
			}
			after = p.endCursor
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// recordedEvent is an event as the outbox recorded it: the exact payload
// every delivery of it sends.
type recordedEvent struct {
	Type     string
	Payload  map[string]any
	Delivery bool
}

func events(t *testing.T, db *store.DB) map[string]recordedEvent {
	t.Helper()
	var rows []struct {
		ID      string
		Type    string
		Payload []byte
	}
	if err := db.Gorm().Raw("SELECT id, type, payload FROM events").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var delivered []string
	if err := db.Gorm().Raw("SELECT event_id FROM webhook_deliveries").Scan(&delivered).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]recordedEvent{}
	for _, r := range rows {
		var p map[string]any
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		key := r.Type + " " + str(p, "data", "id")
		for _, d := range delivered {
			if d == r.ID {
				out[key] = recordedEvent{Type: r.Type, Payload: p, Delivery: true}
			}
		}
		if _, ok := out[key]; !ok {
			out[key] = recordedEvent{Type: r.Type, Payload: p}
		}
	}
	return out
}

// A mutation records the same event, with the same payload, as the REST
// call that does the same thing: both call the same core service.
func TestMutationsEmitTheRESTEvents(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		createWebhook(t, e, "https://example.com/hook", "TASK_CREATED", "TASK_UPDATED", "TASK_DELETED", "PROJECT_CREATED", "PROJECT_UPDATED")
		prj := createProject(t, e, "EVT")

		// The same task, created, updated and deleted over each API.
		viaGraph := createTask(t, e, prj, map[string]any{"title": "Same", "assigneeId": e.Guest.User.ID, "dueAt": "2026-04-01T10:00:00Z"})
		viaREST := e.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks", e.Member.Key,
			map[string]any{"title": "Same", "assignee_id": e.Guest.User.ID, "due_at": "2026-04-01T10:00:00Z"}).Str("id")
		gql(t, e, e.Member.Key, `mutation($id: ID!) { updateTask(id: $id, input: {status: DONE, assigneeId: null}) { id } }`,
			map[string]any{"id": viaGraph}).ok(t)
		e.Send(http.MethodPatch, "/v1/tasks/"+viaREST, e.Member.Key, map[string]any{"status": "done", "assignee_id": nil}).ExpectStatus(t, 200)
		gql(t, e, e.Member.Key, `mutation($id: ID!) { deleteTask(id: $id) }`, map[string]any{"id": viaGraph}).ok(t)
		e.Send(http.MethodDelete, "/v1/tasks/"+viaREST, e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
		// A no-op update emits nothing, over either API.
		gql(t, e, e.Member.Key, `mutation($id: ID!) { updateProject(id: $id, input: {name: "Project EVT"}) { id } }`, map[string]any{"id": prj}).ok(t)

		got := events(t, db)
		if len(got) != 7 { // project.created and 3 task events for each task
			t.Fatalf("want 7 events, got %d: %v", len(got), got)
		}
		for _, typ := range []string{"task.created", "task.updated", "task.deleted"} {
			g, r := got[typ+" "+viaGraph], got[typ+" "+viaREST]
			if g.Payload == nil || r.Payload == nil || !g.Delivery || !r.Delivery {
				t.Fatalf("%s: missing event or delivery: graph %v, REST %v", typ, g, r)
			}
			if normalize(g.Payload, viaGraph) != normalize(r.Payload, viaREST) {
				t.Fatalf("%s differs:\n  GraphQL %s\n  REST    %s", typ, jsonString(g.Payload), jsonString(r.Payload))
			}
		}
		if p := got["task.updated "+viaGraph].Payload; jsonString(p["previous_attributes"]) !=
			fmt.Sprintf(`{"assignee_id":%q,"status":"open"}`, e.Guest.User.ID) {
			t.Fatalf("previous_attributes: %s", jsonString(p))
		}
	})
}

// normalize blanks what must differ between two events of two tasks: the
// event's id and the task's id.
func normalize(p map[string]any, taskID string) string {
	s := jsonString(p)
	s = strings.ReplaceAll(s, taskID, "TASK")
	s = strings.ReplaceAll(s, str(p, "id"), "EVENT")
	return s
}

// rotateWebhookSecret(previousSecretExpiresIn:) follows the domain's rule
// (0 to 604800 seconds; left out or null: 0), names the argument in its
// errors, and keeps the replaced secret signing for that long.
func TestRotateWebhookSecretGrace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		id, secret := createWebhook(t, e, "https://example.com/hook", "TASK_CREATED")
		const q = `mutation($id: ID!, $in: Int) { rotateWebhookSecret(id: $id, previousSecretExpiresIn: $in) { secret } }`
		for _, bad := range []any{-1, 604801} {
			gql(t, e, e.Admin.Key, q, map[string]any{"id": id, "in": bad}).expectError(t, "validation_failed", "previousSecretExpiresIn")
		}
		gql(t, e, e.Member.Key, q, map[string]any{"id": id, "in": 60}).expectError(t, "permission_denied", "")

		rot := gql(t, e, e.Admin.Key, q, map[string]any{"id": id, "in": 600}).ok(t)
		next := str(rot, "rotateWebhookSecret", "secret")
		w, err := db.Webhooks().FindWebhookByID(t.Context(), e.Workspace.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Secret != next || w.PreviousSecret != secret || w.PreviousSecretExpiresAt == nil ||
			!w.PreviousSecretExpiresAt.Equal(e.Clock.Now().Add(600*time.Second)) {
			t.Fatalf("after a rotation with 600s of grace: %+v", w)
		}
		if got := w.SigningSecrets(e.Clock.Now()); len(got) != 2 || got[0] != next || got[1] != secret {
			t.Fatalf("signing secrets during the grace: %v", got)
		}
		for _, vars := range []map[string]any{{"id": id}, {"id": id, "in": nil}, {"id": id, "in": 0}} {
			gql(t, e, e.Admin.Key, q, vars).ok(t)
			w, err := db.Webhooks().FindWebhookByID(t.Context(), e.Workspace.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			if w.PreviousSecret != "" || w.PreviousSecretExpiresAt != nil {
				t.Fatalf("vars %v: the previous secret is kept: %+v", vars, w)
			}
		}
	})
}

// A header's value is String!: a null one is refused before anything runs
// (422), as GraphQL refuses any null where its type forbids one (param the
// variable's field, value; query for a literal), and nothing is stored: the
// webhook is not created, or keeps its headers.
func TestWebhookNullHeaderValue(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newWebhookEnv(t, db)
		refused := func(t *testing.T, r *result, param string) {
			t.Helper()
			if r.Status != http.StatusUnprocessableEntity || r.Data != nil {
				t.Fatalf("want 422 without data, got %d: %s", r.Status, r.Body)
			}
			r.expectError(t, "validation_failed", param)
		}
		const create = `mutation($in: CreateWebhookInput!) { createWebhook(input: $in) { webhook { id } } }`
		nullValue := []any{map[string]any{"name": "X-Ok", "value": "v"}, map[string]any{"name": "X-Foo", "value": nil}}
		refused(t, gql(t, e, e.Admin.Key, create, map[string]any{"in": map[string]any{
			"url": "http://127.0.0.1:9/hook", "events": []string{"TASK_CREATED"}, "headers": nullValue}}), "value")
		refused(t, gql(t, e, e.Admin.Key, `mutation { createWebhook(input: {url: "http://127.0.0.1:9/hook", events: [TASK_CREATED],
  headers: [{name: "X-Foo", value: null}]}) { webhook { id } } }`, nil), "query")
		if n := len(list(gql(t, e, e.Admin.Key, `{ webhooks(first: 100) { nodes { id } } }`, nil).ok(t), "webhooks", "nodes")); n != 0 {
			t.Fatalf("a refused creation stored %d webhooks", n)
		}

		w := get(gql(t, e, e.Admin.Key, create, map[string]any{"in": map[string]any{"url": "http://127.0.0.1:9/hook", "events": []string{"TASK_CREATED"},
			"headers": []any{map[string]any{"name": "X-Keep", "value": "v"}}}}).ok(t), "createWebhook", "webhook")
		id := mustStr(t, w, "id")
		const update = `mutation($id: ID!, $in: UpdateWebhookInput!) { updateWebhook(id: $id, input: $in) { id } }`
		refused(t, gql(t, e, e.Admin.Key, update, map[string]any{"id": id, "in": map[string]any{"headers": nullValue}}), "value")
		refused(t, gql(t, e, e.Admin.Key, `mutation($id: ID!) { updateWebhook(id: $id, input: {headers: [{name: "X-Foo", value: null}]}) { id } }`,
			map[string]any{"id": id}), "query")
		got := gql(t, e, e.Admin.Key, `query($id: ID!) { webhook(id: $id) { headers { name value } } }`, map[string]any{"id": id}).ok(t)
		if h := jsonString(get(got, "webhook", "headers")); h != `[{"name":"X-Keep","value":"v"}]` {
			t.Fatalf("a refused update changed the headers: %s", h)
		}
	})
}
