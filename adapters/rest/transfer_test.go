package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/cmd/worktrack/wiring"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
	"github.com/worktrack/worktrack/graph/server"
)

// serveOnly is the server over db without fixtures: what an import's target
// answers.
func serveOnly(t *testing.T, db *store.DB) *apitest.Env {
	t.Helper()
	clock := apitest.NewClock(time.Now().UTC())
	clock.Run()
	a := wiring.App(db, wiring.Core{Clock: clock, AllowPrivateWebhooks: true})
	edge, sockets := wiring.HTTP(a, db, httpedge.Options{
		Logger: slog.New(slog.DiscardHandler), Clock: clock, Limiter: ratelimit.NewMemory(), Ready: db.Ping,
	}, server.Options{})
	return &apitest.Env{T: t, DB: db, App: a, Engine: edge.Engine(), Edge: edge, Sockets: sockets, Clock: clock}
}

func transfer(db *store.DB) *app.Transfer {
	return app.NewTransfer(app.TransferDeps{Exporter: db, Importer: db})
}

var operator = domain.AuditActor{Type: domain.AuditByOperator, UserAgent: "worktrack import (test)"}

// exportOf exports db (one workspace's rows when ws is set).
func exportOf(t *testing.T, db *store.DB, ws string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := transfer(db).Export(context.Background(), &buf, ws, nil); err != nil {
		t.Fatalf("export: %v", err)
	}
	return buf.Bytes()
}

// richSource fills a workspace as a team's would: projects, tasks in every
// status (some assigned, some due), updates, a deletion, a webhook with
// headers whose deliveries wait (its receiver is not running), keys of
// every kind, idempotent creates, and the audit records of all that. Its
// clock is today's, so the idempotency records are within their window.
func richSource(t *testing.T, db *store.DB) *apitest.Env {
	t.Helper()
	e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
	e.Clock.Advance(time.Since(e.Clock.Now()))
	hook := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{
		"url": "http://127.0.0.1:9/down", "events": []string{"task.created", "task.updated"},
		"headers": map[string]string{"X-Gateway": "tok-123"}})
	hook.ExpectStatus(t, http.StatusCreated)
	for p := range 3 {
		prj := newProject(t, e, fmt.Sprintf("MOVE%d", p))
		for i := range 7 {
			body := map[string]any{"title": fmt.Sprintf("Task %d of %d", i, p), "status": []string{"open", "in_progress", "done"}[i%3]}
			if p == 1 && i == 1 {
				// Found by its words only under the server's rule of
				// search prefixes (its vowel signs are marks), not the SQL
				// fallback a row written without them gets.
				body["title"] = devanagariTitle
			}
			if i%2 == 0 {
				body["assignee_id"] = e.Member.User.ID
				body["due_at"] = e.Clock.Now().Add(time.Duration(i) * time.Hour).Format(time.RFC3339)
			}
			req := apitest.Request{Method: http.MethodPost, Path: "/v1/projects/" + prj + "/tasks", Key: e.Member.Key, Body: body,
				Header: map[string]string{"Idempotency-Key": fmt.Sprintf("k-%d-%d", p, i)}}
			res := e.Do(req)
			res.ExpectStatus(t, http.StatusCreated)
			if p == 0 && i == 0 {
				keyedRequests.Store(e, keyed{req, res.Str("id")})
			}
			e.Clock.Advance(time.Millisecond)
			if i == 3 {
				e.Send(http.MethodPatch, "/v1/tasks/"+res.Str("id"), e.Member.Key, map[string]any{"status": "archived"}).ExpectStatus(t, http.StatusOK)
			}
			if i == 5 {
				e.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + res.Str("id"), Key: e.Member.Key}).ExpectStatus(t, http.StatusNoContent)
			}
		}
	}
	e.Send(http.MethodPost, "/v1/api_keys", e.Admin.Key, map[string]any{"name": "scoped", "scopes": []string{"tasks:read"}}).ExpectStatus(t, http.StatusCreated)
	newProject(t, &apitest.Env{T: t, Engine: e.Engine, Member: apitest.Member{Key: e.Other.Key}}, "OTHER")
	return e
}

const (
	devanagariTitle = "किताब पढ़ो"
	devanagariWord  = "पढ़ो"
)

// apiAnswers reads, through the API, what a team and an integration see:
// every list paged to its end (cursors included), every resource, the
// counts, the log resumed from an event.
func apiAnswers(t *testing.T, e *apitest.Env, admin, other string, resumeFrom string) map[string]string {
	t.Helper()
	out := map[string]string{}
	get := func(path, key string) *apitest.Response {
		res := e.Get(path, key)
		res.ExpectStatus(t, http.StatusOK)
		out[key[:12]+" "+path] = string(res.Body)
		return res
	}
	pages := func(path, key string) []any {
		var all []any
		next := path
		for next != "" {
			res := get(next, key)
			all = append(all, res.JSON["data"].([]any)...)
			next = ""
			if c, ok := res.JSON["pagination"].(map[string]any)["next_cursor"].(string); ok {
				// The next page is the cursor's: starting_after only begins.
				u, _ := url.Parse(path)
				q := u.Query()
				q.Del("starting_after")
				q.Set("cursor", c)
				next = u.Path + "?" + q.Encode()
			}
		}
		return all
	}
	for _, key := range []string{admin, other} {
		get("/v1/users/me", key)
		pages("/v1/users?limit=2", key)
		for _, p := range pages("/v1/projects?limit=2", key) {
			id := p.(map[string]any)["id"].(string)
			get("/v1/projects/"+id, key)
			pages("/v1/projects/"+id+"/tasks?limit=3", key)
		}
		for _, task := range pages("/v1/tasks?limit=4&sort=-due_at", key) {
			get("/v1/tasks/"+task.(map[string]any)["id"].(string), key)
		}
		get("/v1/tasks/counts?group_by=status", key)
		get("/v1/tasks/counts?group_by=assignee_id", key)
		get("/v1/tasks?q=task&limit=100", key)
		get("/v1/tasks?q="+url.QueryEscape(devanagariWord), key)
		for _, w := range pages("/v1/webhooks", key) {
			id := w.(map[string]any)["id"].(string)
			get("/v1/webhooks/"+id, key)
			pages("/v1/webhooks/"+id+"/deliveries?limit=5", key)
		}
		for _, ev := range pages("/v1/events?limit=5", key) {
			get("/v1/events/"+ev.(map[string]any)["id"].(string), key)
		}
		pages("/v1/api_keys?limit=3", key)
	}
	pages("/v1/events?limit=4&starting_after="+resumeFrom, admin)
	return out
}

// A whole database exported and imported into an empty one answers every
// API call as before (ids, times, counts, pages and cursors, the log and
// its resume), the old keys authenticate, webhook secrets open, the audit
// chains verify with the import recorded; across the dialects too.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	pairs := map[string][2]func(testing.TB) *store.DB{
		"sqlite to sqlite":     {storetest.SQLite, storetest.SQLite},
		"postgres to postgres": {storetest.Postgres, storetest.Postgres},
		"sqlite to postgres":   {storetest.SQLite, storetest.Postgres},
		"postgres to sqlite":   {storetest.Postgres, storetest.SQLite},
	}
	for name, pair := range pairs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src := richSource(t, pair[0](t))
			events := src.Get("/v1/events?limit=3", src.Admin.Key).JSON["data"].([]any)
			resume := events[2].(map[string]any)["id"].(string)
			before := apiAnswers(t, src, src.Admin.Key, src.Other.Key, resume)
			if found := before[src.Admin.Key[:12]+" /v1/tasks?q="+url.QueryEscape(devanagariWord)]; !strings.Contains(found, devanagariTitle) {
				t.Fatalf("the source's search does not find %q: %s", devanagariTitle, found)
			}
			file := exportOf(t, src.DB, "")

			dst := pair[1](t)
			sum, err := transfer(dst).Import(context.Background(), bytes.NewReader(file), ports.ImportIntoEmpty, operator, nil)
			if err != nil {
				t.Fatalf("import: %v", err)
			}
			if sum.Counts[domain.ExportTask] != 18 || sum.Counts[domain.ExportWorkspace] != 2 || sum.Repositioned {
				t.Fatalf("import summary: %+v", sum)
			}
			sameIndexes(t, dst)
			target := serveOnly(t, dst)
			after := apiAnswers(t, target, src.Admin.Key, src.Other.Key, resume)
			for call, body := range before {
				if after[call] != body {
					t.Errorf("%s differs after the import:\nbefore %s\nafter  %s", call, body, after[call])
				}
			}
			// The audit log is the same, with the import on top; the chain
			// verifies.
			srcAudit := auditRecords(t, src, src.Admin.Key, "")
			dstAudit := auditRecords(t, target, src.Admin.Key, "")
			if len(dstAudit) != len(srcAudit)+1 || dstAudit[0]["action"] != "workspace.imported" || dstAudit[0]["actor"].(map[string]any)["type"] != "operator" {
				t.Fatalf("audit after import: %d records (source %d), newest %v", len(dstAudit), len(srcAudit), dstAudit[0])
			}
			for i := range srcAudit {
				a, _ := json.Marshal(srcAudit[i])
				b, _ := json.Marshal(dstAudit[i+1])
				if !bytes.Equal(a, b) {
					t.Fatalf("audit record %d differs:\n%s\n%s", i, a, b)
				}
			}
			if rep, err := target.App.Audit.Verify(context.Background(), ""); err != nil || rep.Break != nil {
				t.Fatalf("audit verify after import: %+v %v", rep, err)
			}
			// A keyed create sent again replays its answer on the target.
			k, _ := keyedRequests.Load(src)
			replay := target.Do(k.(keyed).req)
			if replay.Status != http.StatusCreated || replay.Header.Get("Idempotent-Replayed") != "true" || replay.Str("id") != k.(keyed).id {
				t.Fatalf("a keyed create was not replayed: %d %s", replay.Status, replay.Body)
			}
			// The webhook's secret opens on the target: a ping is signed.
			hooks := target.Get("/v1/webhooks", src.Admin.Key).JSON["data"].([]any)
			target.Send(http.MethodPost, "/v1/webhooks/"+hooks[0].(map[string]any)["id"].(string)+"/rotate_secret", src.Admin.Key, nil).ExpectStatus(t, http.StatusOK)
			// The file holds no key secret.
			for _, m := range []apitest.Member{src.Admin, src.Member, src.Guest, src.Other} {
				if bytes.Contains(file, []byte(m.Key)) {
					t.Fatal("the export holds a key's secret")
				}
			}
			// A new event goes on after the imported ones.
			target.Send(http.MethodPost, "/v1/projects", src.Member.Key, map[string]any{"name": "After", "key": "AFTER"}).ExpectStatus(t, http.StatusCreated)
			log := target.Get("/v1/events?limit=100&starting_after="+resume, src.Admin.Key).JSON["data"].([]any)
			if last := log[len(log)-1].(map[string]any); last["type"] != "project.created" {
				t.Fatalf("the new event is not last in the log: %v", last)
			}
		})
	}
}

// sameIndexes fails t unless db holds exactly the indexes of a freshly
// migrated database of its kind, as defined.
func sameIndexes(t *testing.T, db *store.DB) {
	t.Helper()
	q := "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
	fresh := storetest.SQLite
	if db.Dialect() == store.DialectPostgres {
		q = "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() ORDER BY indexname"
		fresh = storetest.Postgres
	}
	var got, want []string
	if err := db.Gorm().Raw(q).Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	if err := fresh(t).Gorm().Raw(q).Scan(&want).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(want) < 10 {
		t.Fatalf("indexes after the import:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// keyed is a create made with an Idempotency-Key, and the task it made.
type keyed struct {
	req apitest.Request
	id  string
}

// keyedRequests remembers each source's first keyed create.
var keyedRequests sync.Map

func firstProject(t *testing.T, e *apitest.Env) string {
	t.Helper()
	return e.Get("/v1/projects?limit=1", e.Member.Key).JSON["data"].([]any)[0].(map[string]any)["id"].(string)
}

// One workspace moved into a database that holds others: its data answers
// as before, its events come after the target's in their order, it sees
// nothing of the target's workspaces and they nothing of it.
func TestExportImportMovesAWorkspace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		src := richSource(t, storetest.SQLite(t))
		file := exportOf(t, src.DB, src.Workspace.ID)
		target := apitest.NewWith(t, db, apitest.Settings{})
		newProject(t, target, "LOCAL")
		targetEvents := target.Get("/v1/events?limit=100", target.Admin.Key).JSON["data"].([]any)

		sum, err := transfer(db).Import(context.Background(), bytes.NewReader(file), ports.ImportMergeWorkspace, operator, nil)
		if err != nil {
			t.Fatalf("merge: %v", err)
		}
		if !sum.Repositioned || len(sum.Workspaces) != 1 || sum.Workspaces[0] != src.Workspace.ID {
			t.Fatalf("merge summary: %+v", sum)
		}
		// Its projects and tasks answer as they did.
		for _, path := range []string{"/v1/projects?limit=100", "/v1/tasks?limit=100", "/v1/tasks/counts?group_by=status", "/v1/users?limit=100"} {
			was, is := src.Get(path, src.Admin.Key), target.Get(path, src.Admin.Key)
			is.ExpectStatus(t, http.StatusOK)
			if !bytes.Equal(was.Body, is.Body) {
				t.Fatalf("%s after the move:\n%s\n%s", path, was.Body, is.Body)
			}
		}
		// Its events, in their order, positioned after the target's.
		if _, err := db.Events().PositionEvents(context.Background()); err != nil {
			t.Fatal(err)
		}
		was := src.Get("/v1/events?limit=100", src.Admin.Key).JSON["data"].([]any)
		is := target.Get("/v1/events?limit=100", src.Admin.Key).JSON["data"].([]any)
		if len(was) != len(is) {
			t.Fatalf("%d events moved, %d listed", len(was), len(is))
		}
		for i := range was {
			if was[i].(map[string]any)["id"] != is[i].(map[string]any)["id"] {
				t.Fatalf("event %d: %v, want %v", i, is[i], was[i])
			}
		}
		// Neither side sees the other.
		if n := len(target.Get("/v1/events?limit=100", target.Admin.Key).JSON["data"].([]any)); n != len(targetEvents) {
			t.Fatalf("the target's workspace sees %d events, had %d", n, len(targetEvents))
		}
		for _, p := range target.Get("/v1/projects?limit=100", src.Admin.Key).JSON["data"].([]any) {
			if p.(map[string]any)["key"] == "LOCAL" {
				t.Fatal("the moved workspace sees the target's project")
			}
		}
		target.Get("/v1/projects/"+firstProject(t, src), target.Admin.Key).ExpectError(t, http.StatusNotFound, "resource_not_found", "")
		// Moving it again is refused: the target holds it.
		if _, err := transfer(db).Import(context.Background(), bytes.NewReader(file), ports.ImportMergeWorkspace, operator, nil); err == nil ||
			!strings.Contains(err.Error(), "holds workspace") {
			t.Fatalf("a second move: %v", err)
		}
	})
}

// A file that does not hold, or a record the database refuses, is refused
// naming the line and the reason, and nothing is written.
func TestImportRefusesBadFiles(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		src := richSource(t, storetest.SQLite(t))
		file := exportOf(t, src.DB, "")
		lines := bytes.SplitAfter(file, []byte("\n"))
		lines = lines[:len(lines)-1] // the empty piece after the last newline
		join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
		with := func(i int, line string) []byte {
			c := append([][]byte(nil), lines...)
			c[i] = []byte(line + "\n")
			return join(c)
		}
		lineOf := func(kind string) int {
			for i, l := range lines {
				if bytes.HasPrefix(l, []byte(`{"kind":"`+kind+`"`)) {
					return i
				}
			}
			t.Fatalf("no %s line", kind)
			return -1
		}
		taskLine, keyLine := lineOf("task"), lineOf("api_key")
		changed := bytes.Replace(lines[taskLine], []byte(`"title":"`), []byte(`"title":"X`), 1)
		cases := map[string]struct {
			file []byte
			line int
			why  string
		}{
			"a corrupted line": {with(taskLine, `{"kind":"task","id":`), taskLine + 1, "corrupted"},
			"a truncated file": {join(lines[:len(lines)-3]), len(lines) - 2, "truncated"},
			"a cut line":       {append(join(lines[:taskLine]), lines[taskLine][:20]...), taskLine + 1, "truncated"},
			"a newer version":  {with(0, strings.Replace(string(lines[0]), `"format_version":1`, `"format_version":2`, 1)), 1, "format version 2"},
			"a changed record": {with(taskLine, strings.TrimSuffix(string(changed), "\n")), len(lines), "checksum"},
			"a key secret": {with(keyLine, strings.Replace(strings.TrimSuffix(string(lines[keyLine]), "\n"), `"name"`, `"secret":"wtk_x","name"`, 1)),
				keyLine + 1, "must not hold"},
			"an unknown kind":         {with(taskLine, `{"kind":"comment","id":"c"}`), taskLine + 1, "unknown kind"},
			"kinds out of order":      {with(taskLine, strings.Replace(string(lines[1]), "\n", "", 1)), taskLine + 1, "out of order"},
			"another format":          {with(0, `{"kind":"header","format":"other-dump","format_version":1}`), 1, "format"},
			"lines after the trailer": {append(append([]byte(nil), file...), lines[1]...), len(lines) + 1, "after the trailer"},
		}
		for name, c := range cases {
			_, err := transfer(db).Import(context.Background(), bytes.NewReader(c.file), ports.ImportIntoEmpty, operator, nil)
			var xe *domain.ExportError
			if !errors.As(err, &xe) || !strings.Contains(xe.Reason, c.why) || (c.line > 0 && xe.Line != int64(c.line)) {
				t.Errorf("%s: %v, want line %d: …%s…", name, err, c.line, c.why)
			}
			if _, err := app.VerifyExport(bytes.NewReader(c.file), nil); err == nil {
				t.Errorf("%s: --verify passed it", name)
			}
		}
		empty := func() {
			t.Helper()
			var n int64
			if err := db.Gorm().Raw("SELECT count(*) FROM workspaces").Scan(&n).Error; err != nil || n != 0 {
				t.Fatalf("after a refusal the database holds %d workspaces (%v)", n, err)
			}
		}
		empty()
		// Every index is there after the refusals (an import into an
		// empty PostgreSQL database drops the bulk tables' indexes and
		// builds them at its end, all in its transaction).
		sameIndexes(t, db)
		// A conflicting id: a whole database into one that holds the same
		// workspace is refused (not empty); its rows into a database where
		// one id is taken are refused naming the line.
		if _, err := transfer(db).Import(context.Background(), bytes.NewReader(file), ports.ImportIntoEmpty, operator, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := transfer(db).Import(context.Background(), bytes.NewReader(file), ports.ImportIntoEmpty, operator, nil); err == nil ||
			!strings.Contains(err.Error(), "needs an empty") {
			t.Fatalf("into a database that is not empty: %v", err)
		}
		other := storetest.SQLite(t)
		ws := exportOf(t, src.DB, src.OtherWorkspace.ID)
		if _, err := transfer(other).Import(context.Background(), bytes.NewReader(ws), ports.ImportMergeWorkspace, operator, nil); err != nil {
			t.Fatal(err)
		}
		acme := exportOf(t, src.DB, src.Workspace.ID)
		// The same user id under another workspace id: the workspace is
		// new to the target, the user is not.
		clash := bytes.ReplaceAll(acme, []byte(src.Workspace.ID), []byte("wsp_ClashClashClashClash00"))
		clashLines := bytes.SplitAfter(clash, []byte("\n"))
		clashLines[0] = lines[0]
		header := strings.Replace(string(lines[0]), `"workspace":null`, `"workspace":"wsp_ClashClashClashClash00"`, 1)
		clashLines[0] = []byte(header)
		_, err := transfer(other).Import(context.Background(), bytes.NewReader(bytes.Join(clashLines, nil)), ports.ImportMergeWorkspace, operator, nil)
		if err == nil {
			t.Fatal("a file whose ids clash with the database's was imported")
		}
	})
}

// A snapshot taken while creates run is consistent: every task in it has
// its task.created event, and each project's counts are its tasks'.
func TestExportUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		projects := []string{newProject(t, e, "CONA"), newProject(t, e, "CONB")}
		var stop atomic.Bool
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for i := 0; !stop.Load(); i++ {
					path := "/v1/projects/" + projects[(w+i)%2] + "/tasks"
					if i%5 == 0 {
						e.Send(http.MethodPost, path+"/batch", e.Member.Key, map[string]any{"tasks": []any{map[string]any{"title": "b1"}, map[string]any{"title": "b2", "status": "done"}}})
					} else {
						e.Send(http.MethodPost, path, e.Member.Key, map[string]any{"title": fmt.Sprint("t", i)})
					}
				}
			})
		}
		for range 3 {
			time.Sleep(50 * time.Millisecond) // let creates run between the snapshots
			file := exportOf(t, db, e.Workspace.ID)
			checkConsistent(t, file)
		}
		stop.Store(true)
		wg.Wait()
	})
}

// checkConsistent checks a file's tasks against its events and counts.
func checkConsistent(t *testing.T, file []byte) {
	t.Helper()
	tasks := map[string]map[string]int{} // project -> status -> n
	created := map[string]bool{}
	var taskIDs []string
	counts := map[string]map[string]float64{}
	for _, line := range bytes.Split(bytes.TrimSpace(file), []byte("\n")) {
		var rec map[string]any
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatal(err)
		}
		switch rec["kind"] {
		case "project":
			counts[rec["id"].(string)] = map[string]float64{"open": rec["open_count"].(float64), "in_progress": rec["in_progress_count"].(float64),
				"done": rec["done_count"].(float64), "archived": rec["archived_count"].(float64)}
		case "task":
			p := rec["project_id"].(string)
			if tasks[p] == nil {
				tasks[p] = map[string]int{}
			}
			tasks[p][rec["status"].(string)]++
			taskIDs = append(taskIDs, rec["id"].(string))
		case "event":
			if rec["type"] == "task.created" {
				created[rec["payload"].(map[string]any)["data"].(map[string]any)["id"].(string)] = true
			}
		}
	}
	for _, id := range taskIDs {
		if !created[id] {
			t.Fatalf("task %s is in the snapshot without its task.created event", id)
		}
	}
	for p, byStatus := range counts {
		for status, n := range byStatus {
			if int(n) != tasks[p][status] {
				t.Fatalf("project %s counts %v %s, the snapshot holds %d such tasks", p, n, status, tasks[p][status])
			}
		}
	}
}

// Pending deliveries of an imported database are sent by its dispatcher,
// signed with the secret the source had.
func TestImportedDeliveriesAreSent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		src := apitest.NewWith(t, storetest.SQLite(t), apitest.Settings{AllowPrivateWebhooks: true})
		src.Clock.Advance(time.Since(src.Clock.Now())) // deliveries within their retry window today
		rc := newReceiver(t, nil)
		hook := newWebhook(t, src, rc.URL(), "project.created")
		newProject(t, src, "SENT")
		file := exportOf(t, src.DB, "")
		if _, err := transfer(db).Import(context.Background(), bytes.NewReader(file), ports.ImportIntoEmpty, operator, nil); err != nil {
			t.Fatal(err)
		}
		target := serveOnly(t, db)
		apitest.RunDispatcherOver(t, target, target.App, db, webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true}), app.DispatcherOptions{Policy: opsPolicy})
		got := rc.WaitFor(1)
		if err := goVerify(t, hook.Str("secret"), got[0]); err != nil {
			t.Fatalf("the delivery after the import does not verify with the source's secret: %v", err)
		}
	})
}

// Into an empty database the ids are checked by the insert's constraints,
// not looked up batch by batch: a task id that comes back in a later batch
// (2,000 rows a batch) is refused, naming its line on PostgreSQL and its
// batch's lines on SQLite, with nothing written and every index in place.
func TestImportIntoEmptyRefusesAnIDTwice(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		src := richSource(t, storetest.SQLite(t))
		prj := firstProject(t, src)
		for range 5 {
			items := make([]map[string]any, domain.MaxBatchItems)
			for i := range items {
				items[i] = map[string]any{"title": fmt.Sprintf("Bulk %d", i)}
			}
			src.Send(http.MethodPost, "/v1/projects/"+prj+"/tasks/batch", src.Member.Key, map[string]any{"tasks": items}).ExpectStatus(t, http.StatusCreated)
		}
		lines := bytes.SplitAfter(exportOf(t, src.DB, ""), []byte("\n"))
		first, last := -1, -1
		for i, l := range lines {
			if bytes.HasPrefix(l, []byte(`{"kind":"task"`)) {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		if last-first < 2000 {
			t.Fatalf("only %d task lines", last-first+1)
		}
		file := slices.Concat(lines[:last+1], [][]byte{lines[first]}, lines[last+1:])
		_, err := transfer(db).Import(context.Background(), bytes.NewReader(bytes.Join(file, nil)), ports.ImportIntoEmpty, operator, nil)
		var xe *domain.ExportError
		dup := int64(last + 2) // the copy's line, counted from 1
		switch {
		case !errors.As(err, &xe):
			t.Fatalf("import: %v, want an export error", err)
		case db.Dialect() == store.DialectPostgres && (xe.Line != dup || !strings.Contains(xe.Reason, "is in the file twice")):
			t.Fatalf("import: %v, want line %d: the task is in the file twice", err, dup)
		case db.Dialect() == store.DialectSQLite && (xe.Line > dup || xe.Line < dup-2000 || !strings.Contains(xe.Reason, "same key")):
			t.Fatalf("import: %v, want the batch of line %d refused for its key", err, dup)
		}
		var n int64
		if err := db.Gorm().Raw("SELECT count(*) FROM tasks").Scan(&n).Error; err != nil || n != 0 {
			t.Fatalf("after the refusal the database holds %d tasks (%v)", n, err)
		}
		sameIndexes(t, db)
	})
}
