package rest_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/domain"
)

var keySecretRe = regexp.MustCompile(`^wtk_[0-9A-Za-z]{40}$`)

// A user makes, lists, renames and revokes their own key; the secret is
// shown once, the prefix recognises it, and a revoked key stays listed and
// stops working at once.
func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		exp := e.Clock.Now().Add(30 * 24 * time.Hour).Format(time.RFC3339)
		res := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{
			"name": "  dashboard  ", "scopes": []string{"projects:read", "tasks:read"}, "expires_at": exp,
		})
		res.ExpectStatus(t, http.StatusCreated)
		id, secret := res.Str("id"), res.Str("secret")
		if !keySecretRe.MatchString(secret) || res.Str("prefix") != secret[:12] || res.Str("name") != "dashboard" ||
			res.Str("user_id") != e.Member.User.ID || res.Str("object") != "api_key" || res.JSON["project_ids"] != nil ||
			res.JSON["last_used_at"] != nil || res.JSON["revoked_at"] != nil || res.Str("expires_at") == "" {
			t.Fatalf("created: %s", res.Body)
		}
		e.Get("/v1/projects", secret).ExpectStatus(t, http.StatusOK)
		e.Get("/v1/users/me", secret).ExpectError(t, http.StatusForbidden, string(domain.CodeInsufficientScope), "")

		got := e.Get("/v1/api_keys/"+id, e.Member.Key)
		got.ExpectStatus(t, http.StatusOK)
		if got.JSON["secret"] != nil || got.Str("last_used_at") == "" {
			t.Fatalf("a key read back shows its secret, or not its use: %s", got.Body)
		}
		expectIDs(t, e.Get("/v1/api_keys", e.Member.Key), memberKeyID(t, e), id)

		renamed := e.Send(http.MethodPatch, "/v1/api_keys/"+id, e.Member.Key, map[string]any{"name": "wallboard"})
		renamed.ExpectStatus(t, http.StatusOK)
		if renamed.Str("name") != "wallboard" {
			t.Fatalf("renamed: %s", renamed.Body)
		}
		for _, field := range []string{"scopes", "project_ids", "expires_at", "user_id"} {
			e.Send(http.MethodPatch, "/v1/api_keys/"+id, e.Member.Key, map[string]any{field: nil}).
				ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), field)
		}
		e.Send(http.MethodPatch, "/v1/api_keys/"+id, e.Member.Key, map[string]any{"name": " "}).
			ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "name")

		e.Send(http.MethodDelete, "/v1/api_keys/"+id, e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
		e.Get("/v1/projects", secret).ExpectError(t, http.StatusUnauthorized, string(domain.CodeInvalidAPIKey), "")
		revoked := e.Get("/v1/api_keys/"+id, e.Member.Key)
		if revoked.Str("revoked_at") == "" {
			t.Fatalf("a revoked key stays listed with revoked_at: %s", revoked.Body)
		}
		expectIDs(t, e.Get("/v1/api_keys", e.Member.Key), memberKeyID(t, e), id)
	})
}

func memberKeyID(t *testing.T, e *apitest.Env) string {
	t.Helper()
	keys, err := e.App.Admin.ListKeys(context.Background(), e.Member.User.ID)
	if err != nil || len(keys) == 0 {
		t.Fatalf("ListKeys: %v", err)
	}
	return keys[0].ID
}

// last_used_at moves at most once a minute: no write per request.
func TestAPIKeyLastUsedIsKeptToTheMinute(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		res := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "used"})
		id, secret := res.Str("id"), res.Str("secret")
		lastUsed := func() string {
			k, err := db.APIKeys().FindAPIKeyByID(context.Background(), id)
			if err != nil || k.LastUsedAt == nil {
				t.Fatalf("FindAPIKeyByID: %+v %v", k, err)
			}
			return k.LastUsedAt.String()
		}
		e.Get("/v1/users/me", secret).ExpectStatus(t, http.StatusOK)
		first := lastUsed()
		e.Clock.Advance(30 * time.Second)
		e.Get("/v1/users/me", secret).ExpectStatus(t, http.StatusOK)
		if lastUsed() != first {
			t.Fatal("last_used_at moved twice within a minute")
		}
		e.Clock.Advance(31 * time.Second)
		e.Get("/v1/users/me", secret).ExpectStatus(t, http.StatusOK)
		if lastUsed() == first {
			t.Fatal("last_used_at did not move after a minute")
		}
	})
}

// Every user manages their own keys; an admin every key of the workspace,
// and makes keys for another user; another workspace sees none of them.
func TestAPIKeyOwnership(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		adminKey := e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": "admin's"}).Str("id")
		memberKey := memberKeyID(t, e)
		for _, r := range []struct {
			method string
			body   any
		}{{http.MethodGet, nil}, {http.MethodPatch, map[string]any{"name": "x"}}, {http.MethodDelete, nil}} {
			e.Send(r.method, "/v1/api_keys/"+adminKey, e.Member.Key, r.body).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
			e.Send(r.method, "/v1/api_keys/"+memberKey, e.Other.Key, r.body).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
		}
		e.Get("/v1/api_keys/"+memberKey, e.Admin.Key).ExpectStatus(t, http.StatusOK)
		expectIDs(t, e.Get("/v1/api_keys?user_id="+e.Admin.User.ID, e.Member.Key))
		expectIDs(t, e.Get("/v1/api_keys?user_id="+e.Member.User.ID, e.Admin.Key), memberKey)
		if n := len(e.Get("/v1/api_keys?limit=100", e.Admin.Key).JSON["data"].([]any)); n != 4 {
			t.Fatalf("an admin lists every key of the workspace, %d here; want 4", n)
		}
		expectIDs(t, e.Get("/v1/api_keys?user_id="+e.Member.User.ID, e.Other.Key))
		e.Get("/v1/api_keys?user_id=nope", e.Admin.Key).ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "user_id")

		forMember := e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": "for mel", "user_id": e.Member.User.ID})
		forMember.ExpectStatus(t, http.StatusCreated)
		if forMember.Str("user_id") != e.Member.User.ID {
			t.Fatalf("an admin's key for another user: %s", forMember.Body)
		}
		e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "x", "user_id": e.Admin.User.ID}).
			ExpectError(t, http.StatusForbidden, string(domain.CodePermissionDenied), "")
		e.Send(http.MethodPost, "/v1/api_keys", e.Other.Key, map[string]any{"name": "x", "user_id": e.Member.User.ID}).
			ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "user_id")
	})
}

// The rules of a new key, each refused with its param.
func TestAPIKeyValidation(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p := newProject(t, e, "VAL")
		otherProject := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Theirs", "key": "THEIRS"}).Str("id")
		now := e.Clock.Now()
		tooMany := make([]string, 51)
		for i := range tooMany {
			tooMany[i] = p
		}
		for _, c := range []struct {
			body  map[string]any
			param string
		}{
			{map[string]any{}, "name"},
			{map[string]any{"name": "   "}, "name"},
			{map[string]any{"name": string(make([]byte, 101))}, "name"},
			{map[string]any{"name": "k", "scopes": []string{"tasks:delete"}}, "scopes"},
			{map[string]any{"name": "k", "scopes": []string{}}, "scopes"},
			{map[string]any{"name": "k", "scopes": nil}, "scopes"},
			{map[string]any{"name": "k", "project_ids": []string{}}, "project_ids"},
			{map[string]any{"name": "k", "project_ids": tooMany}, "project_ids"},
			{map[string]any{"name": "k", "project_ids": []string{otherProject}}, "project_ids"},
			{map[string]any{"name": "k", "project_ids": []string{"prj_nope"}}, "project_ids"},
			{map[string]any{"name": "k", "expires_at": now.Add(-time.Second).Format(time.RFC3339)}, "expires_at"},
			{map[string]any{"name": "k", "expires_at": now.AddDate(11, 0, 0).Format(time.RFC3339)}, "expires_at"},
			{map[string]any{"name": "k", "secret": "wtk_mine"}, "secret"},
		} {
			e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, c.body).ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), c.param)
		}
		keys, _ := e.App.Admin.ListKeys(context.Background(), e.Admin.User.ID)
		if len(keys) != 1 {
			t.Fatalf("a refused key was stored: %d keys", len(keys))
		}
	})
}

// A key never makes a key that may do more, or see more projects, than
// itself.
func TestAPIKeyNoEscalation(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		a, b := newProject(t, e, "AAA"), newProject(t, e, "BBB")
		narrow := e.KeyFor(e.Admin.User, []string{"tasks:read", "api_keys:write"}, []string{a})
		create := func(body map[string]any) *apitest.Response {
			return e.Send(http.MethodPost, "/v1/api_keys", narrow, body)
		}
		create(map[string]any{"name": "k", "project_ids": []string{a}}).ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "scopes")
		create(map[string]any{"name": "k", "scopes": []string{"tasks:write"}, "project_ids": []string{a}}).
			ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "scopes")
		create(map[string]any{"name": "k", "scopes": []string{"tasks:read"}}).
			ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "project_ids")
		create(map[string]any{"name": "k", "scopes": []string{"tasks:read"}, "project_ids": []string{a, b}}).
			ExpectError(t, http.StatusBadRequest, string(domain.CodeValidationFailed), "project_ids")
		made := create(map[string]any{"name": "k", "scopes": []string{"tasks:read", "api_keys:read"}, "project_ids": []string{a}})
		made.ExpectStatus(t, http.StatusCreated)
		e.Get("/v1/projects/"+b+"/tasks", made.Str("secret")).ExpectError(t, http.StatusNotFound, string(domain.CodeNotFound), "")
		e.Get("/v1/projects/"+a+"/tasks", made.Str("secret")).ExpectStatus(t, http.StatusOK)
	})
}

// A user holds at most 100 unrevoked keys; revoking one makes room.
func TestAPIKeysPerUserAreCapped(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		for range domain.MaxAPIKeysPerUser - 1 { // the fixture's key is the first
			e.KeyFor(e.Guest.User, []string{"users:read"}, nil)
		}
		res := e.Send(http.MethodPost, "/v1/api_keys", e.Guest.Key, map[string]any{"name": "101st"})
		res.ExpectError(t, http.StatusConflict, string(domain.CodeLimitReached), "")
		keys, _ := e.App.Admin.ListKeys(context.Background(), e.Guest.User.ID)
		if len(keys) != domain.MaxAPIKeysPerUser {
			t.Fatalf("%d keys after the refusal", len(keys))
		}
		e.Send(http.MethodDelete, "/v1/api_keys/"+keys[1].ID, e.Guest.Key, nil).ExpectStatus(t, http.StatusNoContent)
		e.Send(http.MethodPost, "/v1/api_keys", e.Guest.Key, map[string]any{"name": "room"}).ExpectStatus(t, http.StatusCreated)
		// Another user of the workspace is not counted against it.
		e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "mine"}).ExpectStatus(t, http.StatusCreated)
	})
}

// A new key's secret is shown once and kept nowhere: an Idempotency-Key
// replay of the create answers the same key without it, and the stored
// replay holds no trace of it.
func TestAPIKeyCreateReplayKeepsNoSecret(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		const body = `{"name":"ci","scopes":["tasks:read"]}`
		first := idem(e, e.Member.Key, "make-ci-key", "/v1/api_keys", body)
		first.ExpectStatus(t, http.StatusCreated)
		secret := first.Str("secret")
		if !strings.HasPrefix(secret, "wtk_") {
			t.Fatalf("create: %s", first.Body)
		}
		again := idem(e, e.Member.Key, "make-ci-key", "/v1/api_keys", body)
		again.ExpectStatus(t, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "true" || again.Str("id") != first.Str("id") ||
			again.JSON["secret"] != nil || strings.Contains(string(again.Body), secret) {
			t.Fatalf("replay: %s", again.Body)
		}
		var bodies [][]byte
		if err := e.DB.Gorm().Raw(`SELECT response_body FROM idempotency_keys`).Scan(&bodies).Error; err != nil {
			t.Fatal(err)
		}
		for _, b := range bodies {
			if strings.Contains(string(b), secret) || strings.Contains(string(b), secret[4:]) {
				t.Fatalf("a stored replay holds the secret: %s", b)
			}
		}
		if len(bodies) != 1 {
			t.Fatalf("%d stored replays, want 1", len(bodies))
		}
	})
}

// A key never outlives the key that made it: a key with an expiry makes
// keys that expire no later (400 validation_failed, param expires_at).
func TestKeysMadeByAnExpiringKeyExpireNoLater(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		at := func(d time.Duration) string { return e.Clock.Now().Add(d).Format(time.RFC3339) }
		parent := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{
			"name": "short", "scopes": []string{"api_keys:write"}, "expires_at": at(90 * time.Second)})
		parent.ExpectStatus(t, http.StatusCreated)
		short := parent.Str("secret")
		for name, body := range map[string]map[string]any{
			"no expiry":   {"name": "forever", "scopes": []string{"api_keys:read"}},
			"a later one": {"name": "later", "scopes": []string{"api_keys:read"}, "expires_at": at(2 * time.Hour)},
		} {
			res := e.Send(http.MethodPost, "/v1/api_keys", short, body)
			res.ExpectError(t, http.StatusBadRequest, "validation_failed", "expires_at")
			if name == "no expiry" && !strings.Contains(res.ErrorField("message"), "outlives") {
				t.Fatalf("%s: %s", name, res.Body)
			}
		}
		e.Send(http.MethodPost, "/v1/api_keys", short, map[string]any{
			"name": "sooner", "scopes": []string{"api_keys:read"}, "expires_at": at(60 * time.Second)}).ExpectStatus(t, http.StatusCreated)
		// Nothing was half-written: the user holds the default key, the
		// parent and the one child.
		if list := e.Get("/v1/api_keys", e.Member.Key); len(list.JSON["data"].([]any)) != 3 {
			t.Fatalf("keys: %s", list.Body)
		}
	})
}

// A key lists, renames and revokes only the keys it covers: their scopes
// within its own, their projects within its own, their life within its
// own. A key restricted to one project cannot see or revoke its user's
// unrestricted key, nor an admin's restricted key another admin's.
func TestNarrowKeysManageOnlyTheKeysTheyCover(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p1 := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "One", "key": "ONE"}).Str("id")
		p2 := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Two", "key": "TWO"}).Str("id")
		mk := func(key string, body map[string]any) (id, secret string) {
			t.Helper()
			res := e.Send(http.MethodPost, "/v1/api_keys", key, body)
			res.ExpectStatus(t, http.StatusCreated)
			return res.Str("id"), res.Str("secret")
		}
		narrowID, narrow := mk(e.Member.Key, map[string]any{"name": "p1", "project_ids": []string{p1}})
		inP1, _ := mk(e.Member.Key, map[string]any{"name": "in p1", "project_ids": []string{p1}, "scopes": []string{"tasks:read"}})
		inP2, _ := mk(e.Member.Key, map[string]any{"name": "in p2", "project_ids": []string{p2}})
		memberKeys := e.Get("/v1/api_keys", e.Member.Key)
		var unrestricted string
		for _, k := range memberKeys.JSON["data"].([]any) {
			if m := k.(map[string]any); m["name"] == "test" {
				unrestricted = m["id"].(string)
			}
		}
		if unrestricted == "" {
			t.Fatalf("the member's own key is not listed: %s", memberKeys.Body)
		}

		// The narrow key lists itself and the key within its project only.
		list := e.Get("/v1/api_keys", narrow)
		list.ExpectStatus(t, http.StatusOK)
		var ids []string
		for _, k := range list.JSON["data"].([]any) {
			ids = append(ids, k.(map[string]any)["id"].(string))
		}
		want := []string{narrowID, inP1}
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) || strings.Contains(string(list.Body), p2) {
			t.Fatalf("the narrow key lists %v (want %s, %s): %s", ids, narrowID, inP1, list.Body)
		}
		for _, id := range []string{unrestricted, inP2} {
			e.Get("/v1/api_keys/"+id, narrow).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
			e.Send(http.MethodPatch, "/v1/api_keys/"+id, narrow, map[string]any{"name": "mine"}).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
			e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + id, Key: narrow}).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		}
		e.Get("/v1/users/me", e.Member.Key).ExpectStatus(t, http.StatusOK) // the unrestricted key still works
		e.Send(http.MethodPatch, "/v1/api_keys/"+inP1, narrow, map[string]any{"name": "renamed"}).ExpectStatus(t, http.StatusOK)
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + inP1, Key: narrow}).ExpectStatus(t, http.StatusNoContent)

		// A key with fewer scopes covers only keys within them.
		_, scoped := mk(e.Member.Key, map[string]any{"name": "keys only", "scopes": []string{"api_keys:write"}})
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + unrestricted, Key: scoped}).ExpectError(t, http.StatusNotFound, "resource_not_found", "")

		// An admin's restricted key and another admin's unrestricted key.
		other := e.NewMember(e.Workspace.ID, "ad2@acme.test", domain.RoleAdmin)
		otherKeys := e.Get("/v1/api_keys?user_id="+other.User.ID, e.Admin.Key).JSON["data"].([]any)
		otherID := otherKeys[0].(map[string]any)["id"].(string)
		_, adminNarrow := mk(e.Admin.Key, map[string]any{"name": "admin p1", "project_ids": []string{p1}})
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + otherID, Key: adminNarrow}).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		e.Get("/v1/users/me", other.Key).ExpectStatus(t, http.StatusOK)
		// The admin's unrestricted key manages it as before.
		e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/api_keys/" + otherID, Key: e.Admin.Key}).ExpectStatus(t, http.StatusNoContent)
	})
}

// A narrow key's list reads past the keys it does not cover a bounded
// number of statements a page: with many of them, pages may come short or
// empty, but walking the cursors yields exactly the covered keys, once.
func TestNarrowKeyListWalksPastUncoveredKeys(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		p1 := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "One", "key": "ONE"}).Str("id")
		p2 := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Two", "key": "TWO"}).Str("id")
		want := []string{}
		var narrow string
		for i := range 30 {
			project := p2
			if i == 0 || i == 29 { // 28 keys it does not cover between: more than a page reads
				project = p1
			}
			e.Clock.Advance(time.Millisecond)
			res := e.Send(http.MethodPost, "/v1/api_keys", e.Member.Key, map[string]any{"name": "k", "project_ids": []string{project}})
			res.ExpectStatus(t, http.StatusCreated)
			if project == p1 {
				want = append(want, res.Str("id"))
				narrow = res.Str("secret")
			}
		}
		var got []string
		path := "/v1/api_keys?limit=1"
		for pages := 0; ; pages++ {
			if pages > 40 {
				t.Fatalf("more than 40 pages of limit 1 for %d keys", len(want))
			}
			res := e.Get(path, narrow)
			res.ExpectStatus(t, http.StatusOK)
			for _, k := range res.JSON["data"].([]any) {
				got = append(got, k.(map[string]any)["id"].(string))
			}
			next, _ := res.JSON["pagination"].(map[string]any)["next_cursor"].(string)
			if next == "" {
				break
			}
			path = "/v1/api_keys?limit=1&cursor=" + next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("walked %v, want %v", got, want)
		}
	})
}
