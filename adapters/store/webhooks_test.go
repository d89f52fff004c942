package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func newWebhook(t *testing.T, db *store.DB, ws domain.Workspace, at time.Time, events ...string) domain.Webhook {
	t.Helper()
	w, err := domain.NewWebhook(domain.NewID(domain.PrefixWebhook), ws.ID, domain.WebhookFields{URL: domain.Set("https://hooks.example.com/" + ws.ID), Events: domain.Set(events)}, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Webhooks().CreateWebhook(context.Background(), w); err != nil {
		t.Fatalf("CreateWebhook: %v", err)
	}
	return w
}

// newEvent stores an event with a payload of its own.
func newEvent(t *testing.T, db *store.DB, ws domain.Workspace, typ domain.EventType, at time.Time) (domain.Event, []byte) {
	t.Helper()
	e := domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ws.ID, Type: typ, CreatedAt: domain.Timestamp(at)}
	payload := []byte(fmt.Sprintf(`{"id":%q,"object":"event","data":{"title":"caf\u00e9 \u003c\u003e"}}`, e.ID))
	if _, err := db.Events().CreateEvents(context.Background(), []domain.Event{e}, [][]byte{payload}); err != nil {
		t.Fatalf("CreateEvent: %v", err)
	}
	return e, payload
}

func newDeliveries(t *testing.T, db *store.DB, e domain.Event, hooks ...domain.Webhook) []domain.Delivery {
	t.Helper()
	var ds []domain.Delivery
	for _, w := range hooks {
		ds = append(ds, domain.NewDelivery(domain.NewID(domain.PrefixDelivery), w.ID, e))
	}
	if err := db.Deliveries().CreateDeliveries(context.Background(), ds); err != nil {
		t.Fatalf("CreateDeliveries: %v", err)
	}
	return ds
}

func TestWebhookStore(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		s := db.Webhooks()
		ws, other := newWorkspace(t, db), newWorkspace(t, db)
		w := newWebhook(t, db, ws, base, "task.updated", "project.created")

		got, err := s.FindWebhookByID(ctx, ws.ID, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		// Everything round-trips: the secret, the events in their order.
		equal(t, "webhook", got, w)
		if got, err := s.FindWebhookByIDForUpdate(ctx, ws.ID, w.ID); err != nil || got.ID != w.ID {
			t.Fatalf("FindWebhookByIDForUpdate: %v %v", got, err)
		}
		_, err = s.FindWebhookByID(ctx, other.ID, w.ID)
		wantError(t, err, domain.CodeNotFound, "", "No such webhook: '"+w.ID+"'")

		t.Run("pages", func(t *testing.T) {
			all := []domain.Webhook{w}
			for i := range 7 {
				// Two share each instant: id breaks the tie.
				all = append(all, newWebhook(t, db, ws, base.Add(time.Duration(i/2+1)*time.Second), "task.created"))
			}
			newWebhook(t, db, other, base, "task.created")
			sortByPosition(all, domain.Webhook.Position)
			got := collectPages(t, 3, domain.Webhook.Position, func(after *domain.Position, limit int) ([]domain.Webhook, error) {
				return s.FindWebhooks(ctx, ports.WebhookFilter{WorkspaceID: ws.ID, After: after, Limit: limit})
			})
			equal(t, "pages", got, all)
		})

		t.Run("subscribed", func(t *testing.T) {
			// CreateEvents answers each event's subscribers: the active
			// webhooks of its own workspace whose events include its type.
			ws := newWorkspace(t, db)
			a := newWebhook(t, db, ws, base, "task.created", "task.updated")
			b := newWebhook(t, db, ws, base, "task.updated")
			inactive := newWebhook(t, db, ws, base, "task.updated")
			inactive.Active = false
			if err := s.UpdateWebhook(ctx, inactive); err != nil {
				t.Fatal(err)
			}
			other := newWorkspace(t, db)
			c := newWebhook(t, db, other, base, "task.updated")
			ab := []string{a.ID, b.ID}
			slices.Sort(ab)
			types := []struct {
				ws   domain.Workspace
				typ  domain.EventType
				want []string
			}{
				{ws, domain.EventTaskUpdated, ab},
				{ws, domain.EventTaskCreated, []string{a.ID}},
				{ws, domain.EventProjectUpdated, nil},
				{other, domain.EventTaskUpdated, []string{c.ID}},
				{other, domain.EventTaskCreated, nil},
			}
			// More events than one INSERT carries, so that the answers of
			// every statement are matched to their events.
			n := 2*1000 + len(types)
			es, payloads := make([]domain.Event, n), make([][]byte, n)
			for i := range es {
				ty := types[i%len(types)]
				es[i] = domain.Event{ID: domain.NewID(domain.PrefixEvent), WorkspaceID: ty.ws.ID, Type: ty.typ, CreatedAt: domain.Timestamp(base)}
				payloads[i] = []byte(`{}`)
			}
			var got [][]string
			err := db.InTx(ctx, func(ctx context.Context) error {
				var err error
				got, err = db.Events().CreateEvents(ctx, es, payloads)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d answers for %d events", len(got), n)
			}
			for i := range es {
				if want := types[i%len(types)].want; !slices.Equal(got[i], want) {
					t.Fatalf("event %d (%s in %s): subscribers %v, want %v", i, es[i].Type, es[i].WorkspaceID, got[i], want)
				}
			}
		})

		t.Run("update", func(t *testing.T) {
			next, changed, err := w.Apply(domain.WebhookFields{
				URL: domain.Set("https://other.example.com/x"), Events: domain.Set([]string{"task.deleted"}), Active: domain.Set(false),
			}, base.Add(time.Hour))
			if err != nil || !changed {
				t.Fatal(err)
			}
			// A rotation with a grace period stores the replaced secret and
			// its expiry; one without clears them again.
			next = next.RotateSecret(base.Add(time.Hour), 90*time.Second)
			if err := s.UpdateWebhook(ctx, next); err != nil {
				t.Fatal(err)
			}
			got, _ := s.FindWebhookByID(ctx, ws.ID, w.ID)
			equal(t, "updated", got, next)
			if got.PreviousSecret != w.Secret || got.PreviousSecretExpiresAt == nil ||
				!got.PreviousSecretExpiresAt.Equal(domain.Timestamp(base.Add(time.Hour+90*time.Second))) {
				t.Fatalf("previous secret after a rotation with grace: %q until %v", got.PreviousSecret, got.PreviousSecretExpiresAt)
			}
			next = next.RotateSecret(base.Add(2*time.Hour), 0)
			if err := s.UpdateWebhook(ctx, next); err != nil {
				t.Fatal(err)
			}
			got, _ = s.FindWebhookByID(ctx, ws.ID, w.ID)
			equal(t, "rotated without grace", got, next)
			if got.PreviousSecret != "" || got.PreviousSecretExpiresAt != nil {
				t.Fatalf("previous secret after a rotation without grace: %q until %v", got.PreviousSecret, got.PreviousSecretExpiresAt)
			}
			foreign := next
			foreign.WorkspaceID = other.ID
			wantCode(t, s.UpdateWebhook(ctx, foreign), domain.CodeNotFound, "")
		})

		t.Run("delete takes the deliveries along", func(t *testing.T) {
			w := newWebhook(t, db, ws, base, "task.created")
			e, _ := newEvent(t, db, ws, domain.EventTaskCreated, base)
			d := newDeliveries(t, db, e, w)[0]
			wantCode(t, s.DeleteWebhook(ctx, other.ID, w.ID), domain.CodeNotFound, "")
			if err := s.DeleteWebhook(ctx, ws.ID, w.ID); err != nil {
				t.Fatal(err)
			}
			wantCode(t, s.DeleteWebhook(ctx, ws.ID, w.ID), domain.CodeNotFound, "")
			_, err := db.Deliveries().FindDeliveryByID(ctx, ws.ID, w.ID, d.ID)
			wantCode(t, err, domain.CodeNotFound, "")
		})
	})
}
