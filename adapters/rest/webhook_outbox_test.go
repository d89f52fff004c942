package rest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/cmd/worktrack/wiring"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// The dispatcher is woken by the commit, not by its poll: with polling
// effectively off, the first attempt still comes at once.
func TestWebhookDispatcherIsWokenByTheCommit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second), PollInterval: time.Hour})
		rc := newReceiver(t, nil)
		newWebhook(t, e, rc.URL(), "project.created", "task.created")
		time.Sleep(50 * time.Millisecond) // the dispatcher is idle, waiting
		start := time.Now()
		prj := newProject(t, e, "WAK")
		got := rc.WaitFor(1)
		if d := got[0].At.Sub(start); d > time.Second {
			t.Fatalf("first attempt %v after the commit; docs/api.md#retries allows one second", d)
		}
		// A task's creation is written by one store operation of its own
		// (without the core's transaction); it wakes the dispatcher too.
		time.Sleep(50 * time.Millisecond)
		start = time.Now()
		newTask(t, e, prj, map[string]any{"title": "Wake"})
		got = rc.WaitFor(2)
		if d := got[1].At.Sub(start); d > time.Second {
			t.Fatalf("a task's first attempt %v after the commit", d)
		}
	})
}

// A dispatcher of another process (its own connection pool, no in-process
// signal) is woken by PostgreSQL's NOTIFY.
func TestWebhookPostgresNotifyWakesOtherProcesses(t *testing.T) {
	t.Parallel()
	url := storetest.PostgresURL(t)
	api, other := openPostgres(t, url), openPostgres(t, url)
	e := apitest.NewWith(t, api, apitest.Settings{AllowPrivateWebhooks: true})
	remote := appOver(other, e.Clock)
	apitest.RunDispatcherOver(t, e, remote, other, webhook.NewSender(webhook.SenderOptions{Timeout: time.Second, AllowPrivate: true}),
		app.DispatcherOptions{Policy: testPolicy(5 * time.Second), PollInterval: time.Hour})
	rc := newReceiver(t, nil)
	newWebhook(t, e, rc.URL(), "project.created", "task.created")
	time.Sleep(100 * time.Millisecond) // the other dispatcher is idle, listening
	start := time.Now()
	prj := newProject(t, e, "NTF")
	got := rc.WaitFor(1)
	if d := got[0].At.Sub(start); d > time.Second {
		t.Fatalf("first attempt %v after the commit", d)
	}
	// A task's creation, one statement outside any transaction, notifies
	// as well.
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	newTask(t, e, prj, map[string]any{"title": "Notify"})
	got = rc.WaitFor(2)
	if d := got[1].At.Sub(start); d > time.Second {
		t.Fatalf("a task's first attempt %v after the commit", d)
	}
}

func openPostgres(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// appOver is the core as another serve process would wire it over db,
// sharing the test's clock.
func appOver(db *store.DB, clock ports.Clock) *app.App {
	return wiring.App(db, wiring.Core{Clock: clock, AllowPrivateWebhooks: true})
}

// failAfter is a Transactor whose transactions fail after fn has done all
// its work, so that they roll back.
type failAfter struct{ db *store.DB }

var errInjected = errors.New("injected failure after the change")

func (f failAfter) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return f.db.InTx(ctx, func(ctx context.Context) error {
		if err := fn(ctx); err != nil {
			return err
		}
		return errInjected
	})
}

// A change whose transaction rolls back leaves no event and no delivery.
func TestWebhookRolledBackChangeRecordsNothing(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		rc := newReceiver(t, nil)
		newWebhook(t, e, rc.URL(), allEvents...)
		prj := newProject(t, e, "RBK")
		count := func(table string) int64 {
			var n int64
			if err := db.Gorm().Table(table).Count(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		events, dels, tasks := count("events"), count("webhook_deliveries"), count("tasks")
		if events != 1 || dels != 1 {
			t.Fatalf("the committed project.created: %d events, %d deliveries", events, dels)
		}
		failing := app.New(app.Deps{
			Tx: failAfter{db}, Clock: e.Clock, Workspaces: db.Workspaces(), Users: db.Users(), Keys: db.APIKeys(),
			Projects: db.Projects(), Tasks: db.Tasks(), Webhooks: db.Webhooks(), EventLog: db.Events(),
			Deliveries: db.Deliveries(), Payloads: wire.Payloads{}, Addresses: webhook.AddressChecker{AllowPrivate: true},
			EventWatch: db, Answers: db.Idempotency(), Audit: db.Audit(),
		}, app.Options{})
		actor := domain.Actor{UserID: e.Member.User.ID, WorkspaceID: e.Workspace.ID, Role: domain.RoleMember}
		ctx := context.Background()
		if _, err := failing.Tasks.CreateMany(ctx, actor, prj, []domain.TaskFields{{Title: domain.Set("Never")}}); !errors.Is(err, errInjected) {
			t.Fatalf("create many: %v", err)
		}
		// A single create is one store operation, without the core's
		// transaction: it fails whole when its delivery cannot be written
		// (here, an id minted twice: the delivery's insert is refused after
		// the task's and the event's).
		task, err := domain.NewTask(domain.NewID(domain.PrefixTask), e.Workspace.ID, prj, domain.TaskFields{Title: domain.Set("Never")}, e.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		var taken string
		if err := db.Gorm().Raw("SELECT id FROM webhook_deliveries").Row().Scan(&taken); err != nil {
			t.Fatal(err)
		}
		ev := domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: e.Workspace.ID, Type: domain.EventTaskCreated,
			CreatedAt: domain.Timestamp(e.Clock.Now()), Data: task}
		reuse := func() string { return taken }
		if n, err := db.Tasks().CreateTaskLogged(ctx, task, ports.Outboxed{Event: ev, Payload: []byte("{}"), NewDeliveryID: reuse}); err == nil {
			t.Fatalf("a create whose delivery's id is taken: %d deliveries, no error", n)
		}
		if _, err := failing.Projects.Update(ctx, actor, prj, domain.ProjectFields{Name: domain.Set("Never")}); !errors.Is(err, errInjected) {
			t.Fatalf("update: %v", err)
		}
		if count("events") != events || count("webhook_deliveries") != dels || count("tasks") != tasks {
			t.Fatalf("a rolled-back change left %d events, %d deliveries, %d tasks", count("events"), count("webhook_deliveries"), count("tasks"))
		}
		// The same calls through a committing transaction do record.
		ok := appOver(db, e.Clock)
		if _, err := ok.Tasks.Create(ctx, actor, prj, domain.TaskFields{Title: domain.Set("Ever")}); err != nil {
			t.Fatal(err)
		}
		if count("events") != events+1 || count("webhook_deliveries") != dels+1 {
			t.Fatal("a committed change recorded no event")
		}
	})
}

// A create reads the webhooks it owes deliveries to with its event's
// insert: its statements are the task's insert, the event's, and the
// deliveries' when a webhook is subscribed, and no read of the webhooks of
// its own. A webhook created, disabled or unsubscribed is seen by the next
// create; another workspace's webhooks never are.
func TestACreateReadsItsSubscribersWithItsEvent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.New(t, db)
		counter := storetest.CountStatements(db)
		prj := newProject(t, e, "OUT")
		other := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Globex", "key": "GLX"})
		other.ExpectStatus(t, http.StatusCreated)
		// Globex subscribes to everything; Acme's creates must not see it.
		e.Send(http.MethodPost, "/v1/webhooks", e.Other.Key, map[string]any{
			"url": "https://93.184.215.14/globex", "events": []string{"task.created"},
		}).ExpectStatus(t, http.StatusCreated)

		seen := map[string]bool{} // deliveries owed before this create
		create := func(want ...string) {
			t.Helper()
			counter.Reset()
			id := newTask(t, e, prj, map[string]any{"title": "Counted"}).Str("id")
			var kinds []string
			for _, s := range counter.Statements() {
				switch s = strings.NewReplacer(`"`, "", "`", "").Replace(s); {
				case strings.HasPrefix(s, "SELECT pg_notify("):
					// Other processes' dispatchers are woken after the
					// commit, by a statement of its own (store/announce.go).
				case strings.HasPrefix(s, "WITH t AS (\n    INSERT INTO tasks "):
					// PostgreSQL writes the task, its event and its
					// deliveries in one statement.
					kinds = append(kinds, "tasks+events+deliveries")
				case strings.HasPrefix(s, "INSERT INTO tasks "):
					kinds = append(kinds, "tasks")
				case strings.HasPrefix(s, "INSERT INTO events "):
					kinds = append(kinds, "events")
				case strings.HasPrefix(s, "INSERT INTO webhook_deliveries "):
					kinds = append(kinds, "deliveries")
				default:
					kinds = append(kinds, s)
				}
			}
			switch {
			case db.Dialect() == store.DialectPostgres:
				if !slices.Equal(kinds, []string{"tasks+events+deliveries"}) {
					t.Fatalf("a create ran %q", counter.Statements())
				}
			case !slices.Equal(kinds, []string{"tasks", "events"}) && !slices.Equal(kinds, []string{"tasks", "events", "deliveries"}):
				t.Fatalf("a create ran %q", counter.Statements())
			}
			var rows []struct{ ID, WebhookID string }
			if err := db.Gorm().Raw("SELECT id, webhook_id FROM webhook_deliveries").Scan(&rows).Error; err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				if !seen[r.ID] {
					seen[r.ID] = true
					got = append(got, r.WebhookID)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("task %s: new deliveries to %v, want %v", id, got, want)
			}
			if db.Dialect() != store.DialectPostgres && (len(want) > 0) != slices.Contains(kinds, "deliveries") {
				t.Fatalf("deliveries %v written by %q", want, counter.Statements())
			}
		}

		create()
		a := newWebhook(t, e, "https://93.184.215.14/a", "task.created").Str("id")
		b := newWebhook(t, e, "https://93.184.215.14/b", "task.created", "task.updated").Str("id")
		u := newWebhook(t, e, "https://93.184.215.14/u", "task.updated").Str("id")
		create(a, b)
		e.Send(http.MethodPatch, "/v1/webhooks/"+a, e.Admin.Key, map[string]any{"active": false}).ExpectStatus(t, http.StatusOK)
		e.Send(http.MethodPatch, "/v1/webhooks/"+u, e.Admin.Key, map[string]any{"events": []string{"task.created"}}).ExpectStatus(t, http.StatusOK)
		create(b, u)
		e.Send(http.MethodDelete, "/v1/webhooks/"+b, e.Admin.Key, nil).ExpectStatus(t, http.StatusNoContent)
		create(u)
	})
}
