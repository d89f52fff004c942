package rest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

const (
	auditIP    = "203.0.113.44:5123"
	auditAgent = "audit-test/1.0"
)

// auditCall is a request from a known address and user agent, whose
// answer's request id the audit record must carry.
func auditCall(e *apitest.Env, method, path, key string, body any) *apitest.Response {
	return e.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body, RemoteAddr: auditIP,
		Header: map[string]string{"User-Agent": auditAgent}})
}

// auditRecords lists the workspace's records of target (all of them when
// target is ""), newest first, through the API.
func auditRecords(t *testing.T, e *apitest.Env, key, query string) []map[string]any {
	t.Helper()
	var out []map[string]any
	path := "/v1/audit_events?limit=100"
	if query != "" {
		path += "&" + query
	}
	for {
		res := e.Get(path, key)
		res.ExpectStatus(t, http.StatusOK)
		for _, item := range res.JSON["data"].([]any) {
			out = append(out, item.(map[string]any))
		}
		next, _ := res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		if next == "" {
			return out
		}
		path = "/v1/audit_events?limit=100&cursor=" + url.QueryEscape(next)
		if query != "" {
			path += "&" + query
		}
	}
}

// expectRecord finds the newest record of action about target and checks
// its actor (an API key of the given user, from auditIP and auditAgent) and
// request id.
func expectRecord(t *testing.T, e *apitest.Env, action, target string, by apitest.Member, req *apitest.Response) map[string]any {
	t.Helper()
	for _, r := range auditRecords(t, e, e.Admin.Key, "target_id="+target) {
		if r["action"] != action {
			continue
		}
		actor := r["actor"].(map[string]any)
		if actor["type"] != "api_key" || actor["user_id"] != by.User.ID || actor["ip"] != "203.0.113.44" || actor["user_agent"] != auditAgent {
			t.Fatalf("%s of %s: actor %v", action, target, actor)
		}
		if !strings.HasPrefix(actor["api_key_id"].(string), "key_") {
			t.Fatalf("%s of %s: no key id in %v", action, target, actor)
		}
		if r["request_id"] != req.Header.Get("X-Request-Id") {
			t.Fatalf("%s of %s: request_id %v, want %s", action, target, r["request_id"], req.Header.Get("X-Request-Id"))
		}
		if tg := r["target"].(map[string]any); tg["id"] != target {
			t.Fatalf("%s: target %v", action, tg)
		}
		return r
	}
	t.Fatalf("no %s record of %s", action, target)
	return nil
}

func changeOf(r map[string]any, field string) (from, to any) {
	c := r["changes"].(map[string]any)[field].(map[string]any)
	return c["from"], c["to"]
}

// Every change the audit log keeps, made over REST, is recorded with its
// actor (key, user, address, user agent), target, changes and request id;
// no secret or header value is in any record.
func TestAuditRecordsChangesOverREST(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		admin := apitest.Member{User: e.Admin.User, Key: e.Admin.Key}

		key := auditCall(e, http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": "ci", "scopes": []string{"tasks:read"}})
		key.ExpectStatus(t, http.StatusCreated)
		r := expectRecord(t, e, "api_key.created", key.Str("id"), admin, key)
		if _, to := changeOf(r, "name"); to != "ci" {
			t.Fatalf("created key: %v", r["changes"])
		}
		renamed := auditCall(e, http.MethodPatch, "/v1/api_keys/"+key.Str("id"), e.Admin.Key, map[string]any{"name": "ci-2"})
		renamed.ExpectStatus(t, http.StatusOK)
		r = expectRecord(t, e, "api_key.renamed", key.Str("id"), admin, renamed)
		if from, to := changeOf(r, "name"); from != "ci" || to != "ci-2" {
			t.Fatalf("renamed key: %v", r["changes"])
		}
		revoked := auditCall(e, http.MethodDelete, "/v1/api_keys/"+key.Str("id"), e.Admin.Key, nil)
		revoked.ExpectStatus(t, http.StatusNoContent)
		expectRecord(t, e, "api_key.revoked", key.Str("id"), admin, revoked)

		hook := auditCall(e, http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{
			"url": "http://127.0.0.1:1/hook", "events": []string{"task.created"}, "headers": map[string]string{"X-Gateway-Token": "gw-s3cret-1"}})
		hook.ExpectStatus(t, http.StatusCreated)
		id := hook.Str("id")
		r = expectRecord(t, e, "webhook.created", id, admin, hook)
		if _, to := changeOf(r, "headers"); to.(map[string]any)["X-Gateway-Token"] != domain.Redacted {
			t.Fatalf("created webhook's headers: %v", r["changes"])
		}
		updated := auditCall(e, http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{
			"url": "http://127.0.0.1:2/hook", "headers": map[string]string{"X-Gateway-Token": "gw-s3cret-2"}})
		updated.ExpectStatus(t, http.StatusOK)
		r = expectRecord(t, e, "webhook.updated", id, admin, updated)
		if from, to := changeOf(r, "url"); from != "http://127.0.0.1:1/hook" || to != "http://127.0.0.1:2/hook" {
			t.Fatalf("updated webhook: %v", r["changes"])
		}
		off := auditCall(e, http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"active": false})
		off.ExpectStatus(t, http.StatusOK)
		r = expectRecord(t, e, "webhook.disabled", id, admin, off)
		if _, to := changeOf(r, "disabled_reason"); to != "user" {
			t.Fatalf("disabled webhook: %v", r["changes"])
		}
		on := auditCall(e, http.MethodPatch, "/v1/webhooks/"+id, e.Admin.Key, map[string]any{"active": true})
		on.ExpectStatus(t, http.StatusOK)
		expectRecord(t, e, "webhook.enabled", id, admin, on)
		rotated := auditCall(e, http.MethodPost, "/v1/webhooks/"+id+"/rotate_secret", e.Admin.Key, map[string]any{"previous_secret_expires_in": 60})
		rotated.ExpectStatus(t, http.StatusOK)
		expectRecord(t, e, "webhook.secret_rotated", id, admin, rotated)
		deleted := auditCall(e, http.MethodDelete, "/v1/webhooks/"+id, e.Admin.Key, nil)
		deleted.ExpectStatus(t, http.StatusNoContent)
		expectRecord(t, e, "webhook.deleted", id, admin, deleted)

		member := apitest.Member{User: e.Member.User, Key: e.Member.Key}
		prj := auditCall(e, http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Audited", "key": "AUD"})
		prj.ExpectStatus(t, http.StatusCreated)
		expectRecord(t, e, "project.created", prj.Str("id"), member, prj)
		ren := auditCall(e, http.MethodPatch, "/v1/projects/"+prj.Str("id"), e.Member.Key, map[string]any{"name": "Audited 2"})
		ren.ExpectStatus(t, http.StatusOK)
		r = expectRecord(t, e, "project.renamed", prj.Str("id"), member, ren)
		if from, to := changeOf(r, "name"); from != "Audited" || to != "Audited 2" {
			t.Fatalf("renamed project: %v", r["changes"])
		}
		// A change that changes nothing records nothing.
		auditCall(e, http.MethodPatch, "/v1/projects/"+prj.Str("id"), e.Member.Key, map[string]any{"name": "Audited 2"}).ExpectStatus(t, http.StatusOK)
		if n := len(auditRecords(t, e, e.Admin.Key, "target_id="+prj.Str("id"))); n != 2 {
			t.Fatalf("%d records of the project, want 2 (a no-op recorded nothing)", n)
		}

		// No secret and no header value anywhere in the log.
		all := e.Get("/v1/audit_events?limit=100", e.Admin.Key)
		for _, secret := range []string{hook.Str("secret"), rotated.Str("secret"), key.Str("secret"), "gw-s3cret-1", "gw-s3cret-2", e.Admin.Key} {
			if secret == "" || strings.Contains(string(all.Body), secret) {
				t.Fatalf("a secret (%q) in the audit log: %s", secret, all.Body)
			}
		}
		// And the chain holds.
		rep, err := e.App.Audit.Verify(context.Background(), e.Workspace.ID)
		if err != nil || rep.Break != nil || rep.Records < 12 {
			t.Fatalf("verify: %+v %v", rep, err)
		}
	})
}

// The same changes over GraphQL are recorded alike, and Query.auditEvents
// reads them.
func TestAuditRecordsChangesOverGraphQL(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		gql := func(query string) *apitest.Response {
			res := auditCall(e, http.MethodPost, "/graphql", e.Admin.Key, map[string]any{"query": query})
			res.ExpectStatus(t, http.StatusOK)
			if res.JSON["errors"] != nil {
				t.Fatalf("%s: %s", query, res.Body)
			}
			return res
		}
		created := gql(`mutation { createApiKey(input: {name: "gql"}) { apiKey { id } secret } }`)
		id := created.JSON["data"].(map[string]any)["createApiKey"].(map[string]any)["apiKey"].(map[string]any)["id"].(string)
		admin := apitest.Member{User: e.Admin.User, Key: e.Admin.Key}
		expectRecord(t, e, "api_key.created", id, admin, created)
		revoked := gql(`mutation { revokeApiKey(id: "` + id + `") { id } }`)
		expectRecord(t, e, "api_key.revoked", id, admin, revoked)

		list := gql(`{ auditEvents(first: 1, filter: {actions: [API_KEY_REVOKED], targetId: "` + id + `"}) {
			nodes { action actor { type userId apiKeyId ip userAgent } target { type id } changes requestId seq hash prevHash }
			pageInfo { hasNextPage } } }`)
		conn := list.JSON["data"].(map[string]any)["auditEvents"].(map[string]any)
		nodes := conn["nodes"].([]any)
		if len(nodes) != 1 {
			t.Fatalf("auditEvents: %s", list.Body)
		}
		n := nodes[0].(map[string]any)
		if n["action"] != "API_KEY_REVOKED" || n["requestId"] != revoked.Header.Get("X-Request-Id") ||
			n["actor"].(map[string]any)["type"] != "API_KEY" || n["actor"].(map[string]any)["ip"] != "203.0.113.44" ||
			n["target"].(map[string]any)["id"] != id || n["changes"].(map[string]any)["revoked_at"] == nil {
			t.Fatalf("auditEvents node: %v", n)
		}
		// A bad filter names its path in the filter argument.
		bad := auditCall(e, http.MethodPost, "/graphql", e.Admin.Key, map[string]any{"query": `{ auditEvents(filter: {actorId: "prj_x"}) { nodes { id } } }`})
		if !strings.Contains(string(bad.Body), `"param":"filter.actorId"`) {
			t.Fatalf("a bad actorId: %s", bad.Body)
		}
	})
}

// Only admins with audit:read read the log, with a key not restricted to
// projects; another workspace sees none of it.
func TestAuditAccess(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p := newProject(t, e, "ACC")
		e.Get("/v1/audit_events", e.Member.Key).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Get("/v1/audit_events", e.Guest.Key).ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Get("/v1/audit_events", e.KeyFor(e.Admin.User, []string{"projects:read", "webhooks:read"}, nil)).
			ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")
		e.Get("/v1/audit_events", e.KeyFor(e.Admin.User, []string{"audit:read"}, []string{p})).
			ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Get("/v1/audit_events", e.KeyFor(e.Admin.User, []string{"audit:read"}, nil)).ExpectStatus(t, http.StatusOK)

		mine := auditRecords(t, e, e.Admin.Key, "")
		theirs := auditRecords(t, e, e.Other.Key, "")
		if len(mine) == 0 || len(theirs) == 0 {
			t.Fatalf("%d and %d records", len(mine), len(theirs))
		}
		ids := map[string]bool{}
		for _, r := range mine {
			ids[r["id"].(string)] = true
		}
		for _, r := range theirs {
			if ids[r["id"].(string)] {
				t.Fatalf("the other workspace sees %v", r)
			}
		}
		if n := len(auditRecords(t, e, e.Other.Key, "target_id="+p)); n != 0 {
			t.Fatalf("the other workspace sees %d records of our project", n)
		}
	})
}

// The list is newest first in pages, and each filter keeps what it names;
// bad filters are validation_failed naming them, and a cursor belongs to
// its filters.
func TestAuditPagesAndFilters(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		var projects []string
		for i := range 5 {
			projects = append(projects, newProject(t, e, fmt.Sprintf("PF%d", i)))
			e.Clock.Advance(time.Second)
		}
		mark := e.Clock.Now()
		e.Clock.Advance(time.Second)
		e.Send(http.MethodPatch, "/v1/projects/"+projects[0], e.Member.Key, map[string]any{"name": "Renamed"}).ExpectStatus(t, http.StatusOK)

		all := auditRecords(t, e, e.Admin.Key, "")
		for i := 1; i < len(all); i++ {
			if all[i]["created_at"].(string) > all[i-1]["created_at"].(string) || all[i]["seq"].(float64) >= all[i-1]["seq"].(float64) {
				t.Fatalf("not newest first at %d: %v then %v", i, all[i-1], all[i])
			}
		}
		// Pages of two, through every record, none twice.
		seen := map[string]bool{}
		path := "/v1/audit_events?limit=2"
		for pages := 0; path != ""; pages++ {
			res := e.Get(path, e.Admin.Key)
			res.ExpectStatus(t, http.StatusOK)
			for _, item := range res.JSON["data"].([]any) {
				id := item.(map[string]any)["id"].(string)
				if seen[id] {
					t.Fatalf("%s twice", id)
				}
				seen[id] = true
			}
			path = ""
			if next, ok := res.JSON["pagination"].(map[string]any)["next_cursor"].(string); ok {
				path = "/v1/audit_events?limit=2&cursor=" + url.QueryEscape(next)
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("pages gave %d records, the list %d", len(seen), len(all))
		}

		created := auditRecords(t, e, e.Admin.Key, "action=project.created")
		if len(created) != 5 || created[0]["target"].(map[string]any)["id"] != projects[4] {
			t.Fatalf("action=project.created: %v", created)
		}
		if n := len(auditRecords(t, e, e.Admin.Key, "action=project.created,project.renamed")); n != 6 {
			t.Fatalf("two actions: %d", n)
		}
		if n := len(auditRecords(t, e, e.Admin.Key, "actor_id="+e.Member.User.ID)); n != 6 {
			t.Fatalf("actor_id (user): %d", n)
		}
		if n := len(auditRecords(t, e, e.Admin.Key, "target_id="+projects[0])); n != 2 {
			t.Fatalf("target_id: %d", n)
		}
		after := auditRecords(t, e, e.Admin.Key, "created_after="+url.QueryEscape(mark.Format(time.RFC3339Nano)))
		if len(after) != 1 || after[0]["action"] != "project.renamed" {
			t.Fatalf("created_after: %v", after)
		}
		if n := len(auditRecords(t, e, e.Admin.Key, "action=project.created&created_before="+url.QueryEscape(mark.Format(time.RFC3339Nano)))); n != 5 {
			t.Fatalf("created_before: %d", n)
		}

		for query, param := range map[string]string{
			"action=task.created": "action", "actor_id=prj_1": "actor_id", "target_id=nope": "target_id",
			"created_after=yesterday": "created_after", "created_before=2026-13-01T00:00:00Z": "created_before",
			"limit=0": "limit", "limit=101": "limit", "cursor=abc": "cursor", "sort=created_at": "sort",
		} {
			e.Get("/v1/audit_events?"+query, e.Admin.Key).ExpectError(t, http.StatusBadRequest, "validation_failed", param)
		}
		first := e.Get("/v1/audit_events?limit=1&action=project.created", e.Admin.Key)
		next := first.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		e.Get("/v1/audit_events?limit=1&cursor="+url.QueryEscape(next), e.Admin.Key).ExpectError(t, http.StatusBadRequest, "validation_failed", "cursor")
	})
}

// Nothing is recorded for a change that is refused, and a change whose
// record cannot be written is rolled back: never a change without its
// record.
func TestAuditNothingWithoutTheChange(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		before := len(auditRecords(t, e, e.Admin.Key, ""))
		e.Send(http.MethodPost, "/v1/webhooks", e.Member.Key, map[string]any{"url": "https://hooks.example/x", "events": []string{"task.created"}}).
			ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": "http://127.0.0.1/x", "events": []string{"task.created"}}).
			ExpectError(t, http.StatusBadRequest, "validation_failed", "url")
		newProject(t, e, "DUP")
		e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Again", "key": "DUP"}).
			ExpectError(t, http.StatusConflict, "resource_already_exists", "key")
		e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "too wide", "scopes": []string{"*"}, "user_id": e.Admin.User.ID}).
			ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		if n := len(auditRecords(t, e, e.Admin.Key, "")); n != before+1 {
			t.Fatalf("%d records after one project and four refusals, want %d", n, before+1)
		}

		// The record's insert fails: the project is not created either.
		failing := errors.New("audit insert refused by the test")
		if err := db.Gorm().Callback().Create().Before("gorm:create").Register("test:fail-audit", func(tx *gorm.DB) {
			if tx.Statement.Table == "audit_events" {
				_ = tx.AddError(failing)
			}
		}); err != nil {
			t.Fatal(err)
		}
		res := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Unrecorded", "key": "UNREC"})
		if res.Status != http.StatusInternalServerError {
			t.Fatalf("a create whose record failed: %d %s", res.Status, res.Body)
		}
		if err := db.Gorm().Callback().Create().Remove("test:fail-audit"); err != nil {
			t.Fatal(err)
		}
		list := e.Get("/v1/projects?limit=100", e.Member.Key)
		if strings.Contains(string(list.Body), "UNREC") {
			t.Fatal("the project was created without its audit record")
		}
	})
}

// Concurrent changes in one workspace make one chain: consecutive places,
// each after the one before, and it verifies.
func TestAuditOneChainUnderConcurrency(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				res := e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": fmt.Sprintf("parallel %d", i)})
				if res.Status != http.StatusCreated {
					t.Errorf("key %d: %d %s", i, res.Status, res.Body)
				}
			})
		}
		wg.Wait()
		rep, err := e.App.Audit.Verify(context.Background(), e.Workspace.ID)
		if err != nil || rep.Break != nil {
			t.Fatalf("verify: %+v %v", rep, err)
		}
		all := auditRecords(t, e, e.Admin.Key, "")
		for i := range all {
			if seq := int64(all[i]["seq"].(float64)); seq != int64(len(all)-i) {
				t.Fatalf("record %d has seq %d of %d: the chain forked or has a gap", i, seq, len(all))
			}
		}
		if n := len(auditRecords(t, e, e.Admin.Key, "action=api_key.created")); n < 16 {
			t.Fatalf("%d key creations recorded", n)
		}
	})
}

// Retention removes the old records, oldest first, and the chain that
// remains still verifies from the last removed record's hash.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		for i := range 3 {
			newProject(t, e, fmt.Sprintf("OLD%d", i))
		}
		e.Clock.Advance(200 * 24 * time.Hour)
		kept := newProject(t, e, "NEW")
		n, err := e.App.Audit.Prune(context.Background(), 180*24*time.Hour)
		if err != nil || n == 0 {
			t.Fatalf("pruned %d: %v", n, err)
		}
		left := auditRecords(t, e, e.Admin.Key, "")
		if len(left) != 1 || left[0]["target"].(map[string]any)["id"] != kept {
			t.Fatalf("after pruning: %v", left)
		}
		for _, ws := range []string{e.Workspace.ID, e.OtherWorkspace.ID, ""} {
			rep, err := e.App.Audit.Verify(context.Background(), ws)
			if err != nil || rep.Break != nil {
				t.Fatalf("verify %q after pruning: %+v %v", ws, rep, err)
			}
		}
		// The anchor is what makes it verify: a tail whose first record is
		// then removed too does not.
		if err := db.Gorm().Exec("DELETE FROM audit_events WHERE id = ?", left[0]["id"]).Error; err != nil {
			t.Fatal(err)
		}
		if rep, _ := e.App.Audit.Verify(context.Background(), e.Workspace.ID); rep.Break == nil {
			t.Fatal("a chain missing its newest record verified")
		}
	})
}

// Failed authentications of a known key (a wrong secret of its prefix, or
// the key revoked) are recorded at most once a minute a key.
func TestAuditFailedAuthentications(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		created := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "leaky"})
		created.ExpectStatus(t, http.StatusCreated)
		secret := created.Str("secret")
		wrong := secret[:domain.PrefixLength] + strings.Repeat("Z", len(secret)-domain.PrefixLength)
		for range 5 {
			auditCall(e, http.MethodGet, "/v1/users/me", wrong, nil).ExpectError(t, http.StatusUnauthorized, "invalid_api_key", "")
		}
		failures := func() []map[string]any {
			return auditRecords(t, e, e.Admin.Key, "action=api_key.authentication_failed&target_id="+created.Str("id"))
		}
		got := failures()
		if len(got) != 1 || got[0]["actor"].(map[string]any)["ip"] != "203.0.113.44" {
			t.Fatalf("after 5 failures: %v", got)
		}
		e.Clock.Advance(2 * time.Minute)
		e.Send(http.MethodDelete, "/v1/api_keys/"+created.Str("id"), e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
		for range 3 {
			auditCall(e, http.MethodGet, "/v1/users/me", secret, nil).ExpectError(t, http.StatusUnauthorized, "invalid_api_key", "")
		}
		if got := failures(); len(got) != 2 {
			t.Fatalf("after a revoked key's use a minute later: %d records", len(got))
		}
		// An unknown key's failures name no key: nothing is recorded.
		before := len(auditRecords(t, e, e.Admin.Key, "action=api_key.authentication_failed"))
		auditCall(e, http.MethodGet, "/v1/users/me", "wtk_"+strings.Repeat("Q", 40), nil).ExpectStatus(t, http.StatusUnauthorized)
		if after := len(auditRecords(t, e, e.Admin.Key, "action=api_key.authentication_failed")); after != before {
			t.Fatalf("an unknown key's failure was recorded")
		}
	})
}

// A webhook the service disables itself (a 410) is recorded with the
// system as actor, in the transaction that disables it.
func TestAuditSystemDisables(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: opsPolicy})
		gone := newReceiver(t, func(int, *http.Request, http.ResponseWriter) int { return http.StatusGone })
		id := newWebhook(t, e, gone.URL(), "project.created").Str("id")
		newProject(t, e, "GONE")
		waitWebhook(t, e, id, inactive)
		for _, r := range auditRecords(t, e, e.Admin.Key, "target_id="+id) {
			if r["action"] != "webhook.disabled" {
				continue
			}
			if r["actor"].(map[string]any)["type"] != "system" || r["request_id"] != nil {
				t.Fatalf("a 410's disable: %v", r)
			}
			if _, to := changeOf(r, "disabled_reason"); to != "gone" {
				t.Fatalf("a 410's disable: %v", r["changes"])
			}
			return
		}
		t.Fatal("no webhook.disabled record after a 410")
	})
}
