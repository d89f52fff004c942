package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// event is the part of a listed event the tests look at.
type event struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		ID        string `json:"id"`
		ProjectID string `json:"project_id"`
	} `json:"data"`
}

// listAll pages through GET /v1/events with query (cursor pages) and
// returns every event in order.
func listAll(t *testing.T, e *apitest.Env, key string, query url.Values) []event {
	t.Helper()
	var out []event
	for {
		res := e.Get("/v1/events?"+query.Encode(), key)
		res.ExpectStatus(t, http.StatusOK)
		var page struct {
			Data       []event `json:"data"`
			Pagination struct {
				HasMore    bool    `json:"has_more"`
				NextCursor *string `json:"next_cursor"`
			} `json:"pagination"`
		}
		if err := json.Unmarshal(res.Body, &page); err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Data...)
		if !page.Pagination.HasMore {
			return out
		}
		query = cloneWith(query, "cursor", *page.Pagination.NextCursor)
		query.Del("starting_after") // the cursor carries the place on
	}
}

func cloneWith(q url.Values, k, v string) url.Values {
	c := url.Values{}
	for key, vs := range q {
		c[key] = slices.Clone(vs)
	}
	c.Set(k, v)
	return c
}

func types(es []event) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type)
	}
	return out
}

func TestEventLogListsEveryChangeInOrder(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Log", "key": "LOG"})
		prj.ExpectStatus(t, http.StatusCreated)
		pid := prj.Str("id")
		other := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Other", "key": "OTH"}).Str("id")
		task := e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": "One"})
		tid := task.Str("id")
		e.Send(http.MethodPatch, "/v1/tasks/"+tid, e.Member.Key, map[string]any{"status": "done"}).ExpectStatus(t, http.StatusOK)
		e.Send(http.MethodPatch, "/v1/projects/"+pid, e.Member.Key, map[string]any{"name": "Log 2"}).ExpectStatus(t, http.StatusOK)
		e.Send(http.MethodDelete, "/v1/tasks/"+tid, e.Member.Key, nil).ExpectStatus(t, http.StatusNoContent)
		// Another workspace's changes never show.
		e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Theirs", "key": "THEM"}).ExpectStatus(t, http.StatusCreated)

		all := listAll(t, e, e.Guest.Key, url.Values{"limit": {"2"}})
		want := []string{"project.created", "project.created", "task.created", "task.updated", "project.updated", "task.deleted"}
		if !slices.Equal(types(all), want) {
			t.Fatalf("log: %v, want %v", types(all), want)
		}
		// Each listed event is the document GET /v1/events/{id} answers.
		for _, ev := range all {
			one := e.Get("/v1/events/"+ev.ID, e.Guest.Key)
			one.ExpectStatus(t, http.StatusOK)
			if one.Str("id") != ev.ID || one.Str("object") != "event" || one.Str("type") != ev.Type {
				t.Fatalf("GET /v1/events/%s: %s", ev.ID, one.Body)
			}
		}
		updated := e.Get("/v1/events/"+all[3].ID, e.Guest.Key)
		prev, _ := updated.JSON["previous_attributes"].(map[string]any)
		if prev["status"] != "open" {
			t.Fatalf("task.updated has no previous_attributes: %s", updated.Body)
		}

		byType := listAll(t, e, e.Guest.Key, url.Values{"type": {"task.created"}})
		if len(byType) != 1 || byType[0].Data.ID != tid {
			t.Fatalf("type=task.created: %v", byType)
		}
		byProject := listAll(t, e, e.Guest.Key, url.Values{"project_id": {pid}})
		if got := types(byProject); !slices.Equal(got, []string{"project.created", "task.created", "task.updated", "project.updated", "task.deleted"}) {
			t.Fatalf("project_id=%s: %v", pid, got)
		}
		if got := listAll(t, e, e.Guest.Key, url.Values{"project_id": {other}}); len(got) != 1 || got[0].Data.ID != other {
			t.Fatalf("project_id=%s: %v", other, got)
		}
		theirs := listAll(t, e, e.Other.Key, nil)
		if len(theirs) != 1 || slices.ContainsFunc(all, func(x event) bool { return x.ID == theirs[0].ID }) {
			t.Fatalf("workspaces share events: %v and %v", theirs, all)
		}
		e.Get("/v1/events/"+theirs[0].ID, e.Guest.Key).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
	})
}

func TestEventLogErrors(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		pid := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Log", "key": "LOG"}).Str("id")
		e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": "One"}).ExpectStatus(t, http.StatusCreated)
		e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": "Two"}).ExpectStatus(t, http.StatusCreated)
		theirPrj := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Theirs", "key": "THEM"}).Str("id")
		theirEvent := listAll(t, e, e.Other.Key, nil)[0].ID
		first := e.Get("/v1/events?limit=1", e.Guest.Key)
		cursor := first.JSON["pagination"].(map[string]any)["next_cursor"].(string)
		mine := listAll(t, e, e.Guest.Key, nil)

		for _, tc := range []struct{ query, param string }{
			{"type=task.exploded", "type"},
			{"project_id=prj_nope", "project_id"},
			{"project_id=not-an-id", "project_id"},
			{"project_id=" + theirPrj, "project_id"},
			{"starting_after=evt_nope", "starting_after"},
			{"starting_after=" + theirEvent, "starting_after"},
			{"starting_after=" + mine[0].ID + "&cursor=" + cursor, "starting_after"},
			{"limit=0", "limit"},
			{"limit=101", "limit"},
			{"cursor=garbage", "cursor"},
			{"type=task.created&cursor=" + cursor, "cursor"}, // a cursor of another filter
		} {
			e.Get("/v1/events?"+tc.query, e.Guest.Key).ExpectError(t, http.StatusBadRequest, "validation_failed", tc.param)
		}
		e.Get("/v1/events/evt_nope", e.Guest.Key).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		e.Get("/v1/events/tsk_nope", e.Guest.Key).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		e.Get("/v1/events", "").ExpectError(t, http.StatusUnauthorized, "missing_api_key", "")
	})
}

// A reader that lists to the end and asks again with starting_after set to
// the last event it saw gets exactly the events committed since.
func TestEventLogResumesWithStartingAfter(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		pid := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Log", "key": "LOG"}).Str("id")
		seen := listAll(t, e, e.Guest.Key, nil)
		var created []string
		for i := range 5 {
			created = append(created, e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": fmt.Sprint(i)}).Str("id"))
		}
		next := listAll(t, e, e.Guest.Key, url.Values{"starting_after": {seen[len(seen)-1].ID}, "limit": {"2"}})
		var got []string
		for _, ev := range next {
			got = append(got, ev.Data.ID)
		}
		if !slices.Equal(got, created) {
			t.Fatalf("after %s: %v, want %v", seen[len(seen)-1].ID, got, created)
		}
		if rest := listAll(t, e, e.Guest.Key, url.Values{"starting_after": {next[len(next)-1].ID}}); len(rest) != 0 {
			t.Fatalf("after the last event: %v", rest)
		}
	})
}

// Exact resume under concurrency: while 8 writers create 30 tasks each, a
// reader keeps resuming with starting_after. It must see every event of the
// log once, in the order the log lists at the end: no gap where a
// transaction committed after a later-created one, no repeat. The overlap is
// arranged, not hoped for: a writer goes on to its next five tasks only once
// the reader has read again, however slow the machine.
func TestEventLogResumeIsExactUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 8, 30
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		ctx := context.Background()
		member := domain.Actor{UserID: e.Member.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleMember}
		guest := domain.Actor{UserID: e.Guest.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleGuest}
		p, err := e.App.Projects.Create(ctx, member, domain.ProjectFields{Name: domain.Set("Busy"), Key: domain.Set("BUSY")})
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg       sync.WaitGroup
			reads    atomic.Int64
			done     atomic.Bool
			quit     atomic.Bool // the reader failed: writers stop waiting for it
			writeErr error
			mu       sync.Mutex
		)
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					for i%5 == 0 && reads.Load() < int64(i/5+1) && !quit.Load() {
						time.Sleep(time.Millisecond) // until the reader has read again
					}
					if _, err := e.App.Tasks.Create(ctx, member, p.ID, domain.TaskFields{Title: domain.Set(fmt.Sprintf("w%d-%d", w, i))}); err != nil {
						mu.Lock()
						writeErr = err
						mu.Unlock()
						return
					}
				}
			})
		}
		go func() { wg.Wait(); done.Store(true) }()
		var seen []string
		read := func() {
			req := app.EventListRequest{Page: domain.PageRequest{Limit: domain.Set(7)}}
			if len(seen) > 0 {
				last := seen[len(seen)-1]
				req.StartingAfter = &last
			}
			page, err := e.App.Events.List(ctx, guest, req)
			if err != nil {
				quit.Store(true)
				wg.Wait()
				t.Fatal(err)
			}
			for _, ev := range page.Items {
				seen = append(seen, ev.ID)
			}
			reads.Add(1)
		}
		for !done.Load() {
			read()
		}
		if writeErr != nil {
			t.Fatal(writeErr)
		}
		for range 1000 { // drain what is left
			n := len(seen)
			read()
			if len(seen) == n {
				break
			}
		}
		final := listAll(t, e, e.Guest.Key, url.Values{"limit": {"100"}})
		var want []string
		for _, ev := range final {
			want = append(want, ev.ID)
		}
		if len(want) != writers*perWriter+1 {
			t.Fatalf("the log lists %d events for %d tasks and a project", len(want), writers*perWriter)
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("the resuming reader saw %d events, the log lists %d; first difference at %d",
				len(seen), len(want), firstDiff(seen, want))
		}
		t.Logf("%d events, read in %d pages by resuming with starting_after while 8 writers wrote", len(want), reads.Load())
	})
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Retention: events older than the retention are purged, except those with
// a pending delivery; a purged event is 404, and no longer a place to
// resume from.
func TestEventLogRetention(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		ctx := context.Background()
		// A receiver that is never reached keeps project.created deliveries pending.
		e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{"url": "http://127.0.0.1:1/down", "events": []string{"project.created"}}).
			ExpectStatus(t, http.StatusCreated)
		pid := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Old", "key": "OLD"}).Str("id")
		e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": "Old"}).ExpectStatus(t, http.StatusCreated)
		old := listAll(t, e, e.Guest.Key, nil)
		e.Clock.Advance(48 * time.Hour)
		e.Send(http.MethodPost, "/v1/projects/"+pid+"/tasks", e.Member.Key, map[string]any{"title": "New"}).ExpectStatus(t, http.StatusCreated)

		n, err := e.App.Events.Purge(ctx, 24*time.Hour, 1000)
		if err != nil || n != 1 {
			t.Fatalf("Purge: %d, %v; want the old task.created only", n, err)
		}
		left := listAll(t, e, e.Guest.Key, nil)
		if got := types(left); !slices.Equal(got, []string{"project.created", "task.created"}) {
			t.Fatalf("after the purge: %v", got)
		}
		if left[0].ID != old[0].ID || left[1].ID == old[1].ID {
			t.Fatalf("the pending event must stay and the old task.created go: %v (before: %v)", left, old)
		}
		e.Get("/v1/events/"+old[1].ID, e.Guest.Key).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		e.Get("/v1/events?starting_after="+old[1].ID, e.Guest.Key).ExpectError(t, http.StatusBadRequest, "validation_failed", "starting_after")
	})
}

// A read sees every event that committed before it, whatever the backlog
// of the log's unpositioned events (here another workspace's 5,500 that no
// one has read yet, more than one run of the sequencer positions): the
// event is found by id, listed by its project's filter and counted before
// has_more is false.
func TestEventReadsSeeEveryCommittedEventWhateverTheBacklog(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		noisy := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Import", "key": "IMP"})
		noisy.ExpectStatus(t, http.StatusCreated)
		batch := make([]map[string]any, 500)
		for i := range batch {
			batch[i] = map[string]any{"title": fmt.Sprintf("Imported %d", i)}
		}
		for range 11 {
			e.Send(http.MethodPost, "/v1/projects/"+noisy.Str("id")+"/tasks/batch", e.Other.Key, map[string]any{"tasks": batch}).
				ExpectStatus(t, http.StatusCreated)
		}
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Quiet", "key": "QUI"})
		prj.ExpectStatus(t, http.StatusCreated)
		for i := range 3 {
			e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": fmt.Sprint("Mine ", i)}).
				ExpectStatus(t, http.StatusCreated)
		}
		var unpositioned int64
		if err := db.Gorm().Table("events").Where("seq IS NULL").Count(&unpositioned).Error; err != nil {
			t.Fatal(err)
		}
		if unpositioned < 5504 {
			t.Fatalf("%d events unpositioned before the reads: the test would prove nothing", unpositioned)
		}
		var last string
		if err := db.Gorm().Table("events").Where("workspace_id = ?", e.Workspace.ID).Order("created_at DESC").Limit(1).Pluck("id", &last).Error; err != nil {
			t.Fatal(err)
		}
		e.Get("/v1/events/"+last, e.Guest.Key).ExpectStatus(t, http.StatusOK)
		if mine := listAll(t, e, e.Guest.Key, url.Values{"project_id": {prj.Str("id")}}); len(mine) != 4 {
			t.Fatalf("the project's events: %v, want its creation and 3 tasks'", types(mine))
		}
		if theirs := listAll(t, e, e.Other.Key, url.Values{"project_id": {noisy.Str("id")}, "limit": {"100"}}); len(theirs) != 5501 {
			t.Fatalf("the other workspace's project lists %d events, want 5,501", len(theirs))
		}
	})
}
