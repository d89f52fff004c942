package rest_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

var webhookSecretRe = regexp.MustCompile(`^whsec_[0-9A-Za-z]{32,}$`)

func newWebhook(t testing.TB, e *apitest.Env, url string, events ...string) *apitest.Response {
	t.Helper()
	res := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": url, "events": events})
	res.ExpectStatus(t, http.StatusCreated)
	return res
}

func TestWebhookCRUD(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		res := newWebhook(t, e, "https://93.184.215.14/hooks?x=1", "task.created", "task.updated", "task.created")
		if got := keysOf(res.JSON); got != "active,created_at,disabled_at,disabled_reason,events,headers,id,object,secret,updated_at,url" {
			t.Fatalf("fields: %s", got)
		}
		id, secret := res.Str("id"), res.Str("secret")
		if !strings.HasPrefix(id, "whk_") || res.Str("object") != "webhook" || res.Str("url") != "https://93.184.215.14/hooks?x=1" ||
			res.JSON["active"] != true || !webhookSecretRe.MatchString(secret) || res.Str("created_at") != res.Str("updated_at") {
			t.Fatalf("created: %s", res.Body)
		}
		// Duplicates collapse, order kept.
		if evs := res.JSON["events"].([]any); len(evs) != 2 || evs[0] != "task.created" || evs[1] != "task.updated" {
			t.Fatalf("events: %v", evs)
		}

		// The secret is never shown again.
		got := e.Get("/v1/webhooks/"+id, e.Admin.Key)
		got.ExpectStatus(t, 200)
		if _, ok := got.JSON["secret"]; ok || strings.Contains(string(got.Body), secret) {
			t.Fatalf("GET shows the secret: %s", got.Body)
		}
		if keysOf(got.JSON) != "active,created_at,disabled_at,disabled_reason,events,headers,id,object,updated_at,url" {
			t.Fatalf("fields: %s", got.Body)
		}
		list := e.Get("/v1/webhooks", e.Admin.Key)
		list.ExpectStatus(t, 200)
		if strings.Contains(string(list.Body), "whsec_") || len(list.JSON["data"].([]any)) != 1 || list.Str("object") != "list" {
			t.Fatalf("list: %s", list.Body)
		}

		// Merge patch: absent fields are left alone.
		e.Clock.Advance(time.Second)
		upd := e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"active": false, "events": []string{"project.updated"}})
		upd.ExpectStatus(t, 200)
		if upd.JSON["active"] != false || upd.Str("url") != res.Str("url") || upd.JSON["events"].([]any)[0] != "project.updated" ||
			upd.Str("updated_at") == res.Str("updated_at") || strings.Contains(string(upd.Body), "whsec_") {
			t.Fatalf("patched: %s", upd.Body)
		}
		// A no-op patch writes nothing.
		e.Clock.Advance(time.Second)
		same := e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"active": false})
		if same.Str("updated_at") != upd.Str("updated_at") {
			t.Fatalf("a no-op patch moved updated_at: %s", same.Body)
		}

		// Rotation answers 200 with a new secret, shown this once.
		rot := e.Send(http.MethodPost, "/v1/webhooks/"+id+"/rotate_secret", e.Admin.Key, nil)
		rot.ExpectStatus(t, 200)
		if s := rot.Str("secret"); !webhookSecretRe.MatchString(s) || s == secret || rot.Str("id") != id {
			t.Fatalf("rotated: %s", rot.Body)
		}
		if strings.Contains(string(e.Get("/v1/webhooks/"+id, e.Admin.Key).Body), rot.Str("secret")) {
			t.Fatal("GET shows the rotated secret")
		}

		// An empty delivery list, then deletion.
		dl := e.Get("/v1/webhooks/"+id+"/deliveries", e.Admin.Key)
		dl.ExpectStatus(t, 200)
		if len(dl.JSON["data"].([]any)) != 0 || dl.JSON["pagination"].(map[string]any)["next_cursor"] != nil {
			t.Fatalf("deliveries: %s", dl.Body)
		}
		del := e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/webhooks/" + id, Key: e.Admin.Key})
		if del.Status != 204 || len(del.Body) != 0 {
			t.Fatalf("delete: %d %s", del.Status, del.Body)
		}
		e.Get("/v1/webhooks/"+id, e.Admin.Key).ExpectError(t, 404, "resource_not_found", "")
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/webhooks/" + id, Key: e.Admin.Key}).ExpectError(t, 404, "resource_not_found", "")
	})
}

func TestWebhookListPages(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		var want []string
		for range 5 {
			e.Clock.Advance(time.Millisecond)
			want = append(want, newWebhook(t, e, "https://93.184.215.14/h", "task.created").Str("id"))
		}
		e.Send(http.MethodPost, "/v1/webhooks", e.Other.Key, map[string]any{"url": "https://93.184.215.14/h", "events": []string{"task.created"}}).ExpectStatus(t, 201)
		pages := pageThrough(t, e, "/v1/webhooks?limit=2", e.Admin.Key)
		var got []string
		for _, p := range pages {
			got = append(got, p...)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") || len(pages) != 3 {
			t.Fatalf("pages %v, want %v", pages, want)
		}
		e.Get("/v1/webhooks?limit=0", e.Admin.Key).ExpectError(t, 400, "validation_failed", "limit")
		e.Get("/v1/webhooks?cursor=nope", e.Admin.Key).ExpectError(t, 400, "validation_failed", "cursor")
	})
}

// Every webhook endpoint, reads included, is admin-only; another
// workspace's webhook is not found.
func TestWebhookRolesAndTenancy(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		id := newWebhook(t, e, "https://93.184.215.14/h", "task.created").Str("id")
		const whd = "whd_nope000000000000000000"
		routes := []struct {
			method, path string
			body         any
		}{
			{http.MethodPost, "/v1/webhooks", map[string]any{"url": "https://93.184.215.14/h", "events": []string{"task.created"}}},
			{http.MethodGet, "/v1/webhooks", nil},
			{http.MethodGet, "/v1/webhooks/" + id, nil},
			{http.MethodPatch, "/v1/webhooks/" + id, map[string]any{"active": false}},
			{http.MethodDelete, "/v1/webhooks/" + id, nil},
			{http.MethodPost, "/v1/webhooks/" + id + "/rotate_secret", nil},
			{http.MethodGet, "/v1/webhooks/" + id + "/deliveries", nil},
			{http.MethodPost, "/v1/webhooks/" + id + "/deliveries/" + whd + "/redeliver", nil},
		}
		for _, r := range routes {
			for _, m := range []apitest.Member{e.Guest, e.Member} {
				t.Run(r.method+" "+r.path+" as "+string(m.User.Role), func(t *testing.T) {
					e.Do(apitest.Request{Method: r.method, Path: r.path, Key: m.Key, Body: r.body}).ExpectError(t, 403, "permission_denied", "")
				})
			}
		}
		// Nothing changed behind the refusals.
		got := e.Get("/v1/webhooks/"+id, e.Admin.Key)
		if got.Status != 200 || got.JSON["active"] != true {
			t.Fatalf("after refusals: %s", got.Body)
		}
		for _, r := range routes[2:] {
			t.Run(r.method+" "+r.path+" from another workspace", func(t *testing.T) {
				e.Do(apitest.Request{Method: r.method, Path: r.path, Key: e.Other.Key, Body: r.body}).ExpectError(t, 404, "resource_not_found", "")
			})
		}
		// Ids of the wrong kind, or absent, are not found.
		for _, p := range []string{"/v1/webhooks/whk_nope000000000000000000", "/v1/webhooks/" + e.Workspace.ID, "/v1/webhooks/whk_nope000000000000000000/deliveries"} {
			e.Get(p, e.Admin.Key).ExpectError(t, 404, "resource_not_found", "")
		}
		e.Send(http.MethodPost, "/v1/webhooks/"+id+"/deliveries/"+whd+"/redeliver", e.Admin.Key, nil).ExpectError(t, 404, "resource_not_found", "")
		e.Send(http.MethodPost, "/v1/webhooks/"+id+"/deliveries/"+id+"/redeliver", e.Admin.Key, nil).ExpectError(t, 404, "resource_not_found", "")
		if got := e.Get("/v1/webhooks/"+id, e.Admin.Key); got.Status != 200 {
			t.Fatalf("the other workspace deleted the webhook: %s", got.Body)
		}
	})
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db) // private addresses are refused, as by default
		ok := []string{"task.created"}
		cases := []struct {
			name   string
			body   any
			code   string
			param  string
			status int
		}{
			{"no url", map[string]any{"events": ok}, "validation_failed", "url", 400},
			{"url null", map[string]any{"url": nil, "events": ok}, "validation_failed", "url", 400},
			{"url number", map[string]any{"url": 5, "events": ok}, "validation_failed", "url", 400},
			{"relative url", map[string]any{"url": "/hook", "events": ok}, "validation_failed", "url", 400},
			{"ftp url", map[string]any{"url": "ftp://93.184.215.14/", "events": ok}, "validation_failed", "url", 400},
			{"user info", map[string]any{"url": "https://u:p@93.184.215.14/", "events": ok}, "validation_failed", "url", 400},
			{"too long", map[string]any{"url": "https://93.184.215.14/" + strings.Repeat("a", 2048), "events": ok}, "validation_failed", "url", 400},
			{"loopback", map[string]any{"url": "http://127.0.0.1/hook", "events": ok}, "validation_failed", "url", 400},
			{"loopback v6", map[string]any{"url": "http://[::1]/", "events": ok}, "validation_failed", "url", 400},
			{"private", map[string]any{"url": "http://10.0.0.1/", "events": ok}, "validation_failed", "url", 400},
			{"metadata", map[string]any{"url": "http://169.254.169.254/latest", "events": ok}, "validation_failed", "url", 400},
			{"unspecified", map[string]any{"url": "http://0.0.0.0:8080/", "events": ok}, "validation_failed", "url", 400},
			{"mapped", map[string]any{"url": "http://[::ffff:192.168.1.1]/", "events": ok}, "validation_failed", "url", 400},
			{"ula", map[string]any{"url": "http://[fd00::1]/", "events": ok}, "validation_failed", "url", 400},
			{"resolves to loopback", map[string]any{"url": "http://localhost:9000/hook", "events": ok}, "validation_failed", "url", 400},
			{"no events", map[string]any{"url": "https://93.184.215.14/"}, "validation_failed", "events", 400},
			{"events null", map[string]any{"url": "https://93.184.215.14/", "events": nil}, "validation_failed", "events", 400},
			{"events empty", map[string]any{"url": "https://93.184.215.14/", "events": []string{}}, "validation_failed", "events", 400},
			{"unknown event", map[string]any{"url": "https://93.184.215.14/", "events": []string{"task.created", "task.moved"}}, "validation_failed", "events", 400},
			{"event not a string", map[string]any{"url": "https://93.184.215.14/", "events": []any{"task.created", 3}}, "validation_failed", "events", 400},
			{"events not an array", map[string]any{"url": "https://93.184.215.14/", "events": "task.created"}, "validation_failed", "events", 400},
			{"unknown field", map[string]any{"url": "https://93.184.215.14/", "events": ok, "secret": "x"}, "validation_failed", "secret", 400},
			{"not json", "{", "invalid_json", "", 400},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, tc.body).ExpectError(t, tc.status, tc.code, tc.param)
			})
		}
		if list := e.Get("/v1/webhooks", e.Admin.Key); len(list.JSON["data"].([]any)) != 0 {
			t.Fatalf("a refused create stored a webhook: %s", list.Body)
		}

		id := newWebhook(t, e, "https://93.184.215.14/h", "task.created").Str("id")
		patches := []struct {
			name  string
			body  any
			param string
		}{
			{"private url", map[string]any{"url": "http://192.168.0.10/"}, "url"},
			{"url null", map[string]any{"url": nil}, "url"},
			{"events empty", map[string]any{"events": []string{}}, "events"},
			{"events null", map[string]any{"events": nil}, "events"},
			{"unknown event", map[string]any{"events": []string{"project.deleted"}}, "events"},
			{"active null", map[string]any{"active": nil}, "active"},
			{"active string", map[string]any{"active": "yes"}, "active"},
			{"secret", map[string]any{"secret": "whsec_mine"}, "secret"},
		}
		for _, tc := range patches {
			t.Run("patch "+tc.name, func(t *testing.T) {
				e.Send(http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, tc.body).ExpectError(t, 400, "validation_failed", tc.param)
			})
		}
		e.Get("/v1/webhooks/"+id+"/deliveries?status=done", e.Admin.Key).ExpectError(t, 400, "validation_failed", "status")
		e.Get("/v1/webhooks/"+id+"/deliveries?limit=101", e.Admin.Key).ExpectError(t, 400, "validation_failed", "limit")
	})
}

// With private addresses allowed (WORKTRACK_WEBHOOK_ALLOW_PRIVATE), loopback
// receivers can be registered.
func TestWebhookAllowPrivate(t *testing.T) {
	t.Parallel()
	e := apitest.NewWith(t, storetest.SQLite(t), apitest.Settings{AllowPrivateWebhooks: true})
	newWebhook(t, e, "http://127.0.0.1:9/hook", "task.created")
	newWebhook(t, e, "http://localhost:9/hook", "task.created")
}

// rotate_secret's optional body: previous_secret_expires_in is an integer
// from 0 to 604800; anything else is 400 validation_failed with that param.
// No body, an empty object and any value in range are accepted, and the
// value sets how long the replaced secret keeps signing.
func TestRotateSecretBody(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		id := newWebhook(t, e, "https://93.184.215.14/hooks", "task.created").Str("id")
		path := "/v1/webhooks/" + id + "/rotate_secret"
		const param = "previous_secret_expires_in"
		for _, bad := range []string{`-1`, `604801`, `1.5`, `"60"`, `true`, `null`, `1e3`, `99999999999999999999`} {
			res := e.Send(http.MethodPost, path, e.Admin.Key, `{"previous_secret_expires_in":`+bad+`}`)
			res.ExpectError(t, http.StatusBadRequest, "validation_failed", param)
		}
		e.Send(http.MethodPost, path, e.Admin.Key, `{"previous_secret_expires":60}`).
			ExpectError(t, http.StatusBadRequest, "validation_failed", "previous_secret_expires")
		e.Send(http.MethodPost, path, e.Admin.Key, `{"previous_secret_expires_in":`).
			ExpectError(t, http.StatusBadRequest, "invalid_json", "")
		// A member is refused before the body is looked at.
		e.Send(http.MethodPost, path, e.Member.Key, `{"previous_secret_expires_in":-1}`).
			ExpectError(t, http.StatusForbidden, "permission_denied", "")

		stored := func() domain.Webhook {
			t.Helper()
			w, err := db.Webhooks().FindWebhookByID(t.Context(), e.Workspace.ID, id)
			if err != nil {
				t.Fatal(err)
			}
			return w
		}
		for _, tc := range []struct {
			body  any
			grace time.Duration
		}{
			{nil, 0}, {"", 0}, {"  ", 0}, {`{}`, 0}, {`{"previous_secret_expires_in":0}`, 0},
			{`{"previous_secret_expires_in":604800}`, 604800 * time.Second},
			{`{"previous_secret_expires_in":90}`, 90 * time.Second},
		} {
			before := stored()
			res := e.Send(http.MethodPost, path, e.Admin.Key, tc.body)
			res.ExpectStatus(t, http.StatusOK)
			after := stored()
			if res.Str("secret") != after.Secret || after.Secret == before.Secret || strings.Contains(string(res.Body), before.Secret) {
				t.Fatalf("body %v: rotated to %s", tc.body, res.Body)
			}
			if tc.grace == 0 {
				if after.PreviousSecret != "" || after.PreviousSecretExpiresAt != nil {
					t.Fatalf("body %v: a previous secret is kept: %+v", tc.body, after)
				}
				continue
			}
			if after.PreviousSecret != before.Secret || after.PreviousSecretExpiresAt == nil ||
				!after.PreviousSecretExpiresAt.Equal(e.Clock.Now().Add(tc.grace)) {
				t.Fatalf("body %v: previous secret %q until %v", tc.body, after.PreviousSecret, after.PreviousSecretExpiresAt)
			}
		}
		if got := e.Get("/v1/webhooks/"+id, e.Admin.Key); strings.Contains(string(got.Body), "whsec_") || strings.Contains(string(got.Body), "previous") {
			t.Fatalf("GET shows a secret: %s", got.Body)
		}
	})
}

// A workspace has at most 20 webhooks: the 21st is 409
// resource_limit_reached, also when many are created at once, and another
// workspace is not affected; deleting one makes room.
func TestWebhooksPerWorkspaceAreCapped(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		url := "http://127.0.0.1:9/"
		var wg sync.WaitGroup
		statuses := make(chan int, domain.MaxWebhooksPerWorkspace+5)
		for i := range domain.MaxWebhooksPerWorkspace + 5 {
			wg.Go(func() {
				res := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": url + strconv.Itoa(i), "events": []string{"task.created"}})
				statuses <- res.Status
			})
		}
		wg.Wait()
		close(statuses)
		created := 0
		for s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusConflict:
			default:
				t.Fatalf("status %d", s)
			}
		}
		if created != domain.MaxWebhooksPerWorkspace {
			t.Fatalf("%d webhooks created at once, want %d", created, domain.MaxWebhooksPerWorkspace)
		}
		res := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": url + "x", "events": []string{"task.created"}})
		res.ExpectError(t, http.StatusConflict, "resource_limit_reached", "")
		e.Send(http.MethodPost, "/v1/webhooks", e.Other.Key, map[string]any{"url": url + "o", "events": []string{"task.created"}}).
			ExpectStatus(t, http.StatusCreated)
		first := e.Get("/v1/webhooks?limit=1", e.Admin.Key).JSON["data"].([]any)[0].(map[string]any)["id"].(string)
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/webhooks/" + first, Key: e.Admin.Key}).ExpectStatus(t, http.StatusNoContent)
		e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": url + "y", "events": []string{"task.created"}}).
			ExpectStatus(t, http.StatusCreated)
	})
}
