package clienttest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/client"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// Users, API keys and the event log, every method, beside a second
// workspace that sees none of it.
func TestUsersKeysAndEvents(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{})
		ctx := context.Background()

		me := must[*client.User](t)(s.member.Users.Me(ctx))
		if me.ID != s.Env.Member.User.ID || me.Role != client.UserRoleMember {
			t.Fatalf("me %+v", me)
		}
		if users := collect(t, s.member.Users.List(ctx, client.ListParams{PageSize: 1})); len(users) != 3 {
			t.Fatalf("%d users of Acme, want 3", len(users))
		}

		k := must[*client.APIKeyWithSecret](t)(s.member.APIKeys.Create(ctx, client.APIKeyCreate{Name: "ci",
			Scopes: &[]client.Scope{client.ScopeTasksRead}}))
		if k.Secret == nil || *k.Secret == "" || k.Name != "ci" {
			t.Fatalf("created key %+v", k)
		}
		if got := must[*client.APIKey](t)(s.member.APIKeys.Update(ctx, k.ID, client.APIKeyUpdate{Name: client.Ptr("ci-2")})); got.Name != "ci-2" {
			t.Fatalf("renamed key %+v", got)
		}
		if got := must[*client.APIKey](t)(s.member.APIKeys.Get(ctx, k.ID)); got.ID != k.ID || got.Name != "ci-2" {
			t.Fatalf("get key %+v", got)
		}
		mine := collect(t, s.member.APIKeys.List(ctx, client.APIKeyListParams{UserID: me.ID}))
		if len(mine) != 2 {
			t.Fatalf("%d keys of the member, want 2", len(mine))
		}
		scoped := client.New(s.URL, *k.Secret)
		_, err := scoped.Projects.Create(ctx, client.ProjectCreate{Name: "Nope", Key: "NOP"})
		expectError(t, err, http.StatusForbidden, "insufficient_scope")
		if err := s.member.APIKeys.Revoke(ctx, k.ID); err != nil {
			t.Fatal(err)
		}
		_, err = scoped.Users.Me(ctx)
		expectError(t, err, http.StatusUnauthorized, "invalid_api_key")
		_, err = s.other.APIKeys.Get(ctx, k.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")

		// The log, read, resumed after an event, and followed.
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Log", Key: "LOG"}))
		for _, title := range []string{"one", "two", "three"} {
			s.Clock.Advance(time.Millisecond)
			must[*client.Task](t)(s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: title}))
		}
		all := collect(t, s.member.Events.List(ctx, client.EventListParams{ListParams: client.ListParams{PageSize: 2}}))
		if len(all) != 4 || all[0].Type != client.EventTypeProjectCreated || all[3].Type != client.EventTypeTaskCreated {
			t.Fatalf("the log: %+v", all)
		}
		if task, err := all[3].Task(); err != nil || task.Title != "three" {
			t.Fatalf("the last event's task: %+v %v", task, err)
		}
		after := collect(t, s.member.Events.List(ctx, client.EventListParams{StartingAfter: all[1].ID, Type: client.EventTypeTaskCreated}))
		if len(after) != 2 || after[0].ID != all[2].ID || after[1].ID != all[3].ID {
			t.Fatalf("resumed after %s: %+v", all[1].ID, after)
		}
		if got := must[*client.Event](t)(s.member.Events.Get(ctx, all[2].ID)); got.ID != all[2].ID {
			t.Fatalf("get event %+v", got)
		}
		if theirs := collect(t, s.other.Events.List(ctx, client.EventListParams{})); len(theirs) != 0 {
			t.Fatalf("Globex reads %d of Acme's events", len(theirs))
		}

		// Follow reads what is there, then what commits later.
		fctx, stop := context.WithCancel(ctx)
		defer stop()
		got := make(chan client.Event)
		go func() {
			defer close(got)
			for e, err := range s.member.Events.Follow(fctx, client.EventListParams{StartingAfter: all[2].ID}, 10*time.Millisecond) {
				if err != nil {
					t.Error(err)
					return
				}
				got <- e
			}
		}()
		if e := <-got; e.ID != all[3].ID {
			t.Fatalf("followed first %s, want %s", e.ID, all[3].ID)
		}
		s.Clock.Advance(time.Millisecond)
		later := must[*client.Task](t)(s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "four"}))
		select {
		case e := <-got:
			task, err := e.Task()
			if err != nil || task.ID != later.ID {
				t.Fatalf("followed next %+v (%v), want the task created later", task, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Follow never gave the event committed after it read the log")
		}
		stop()
		for range got { // it ends with its context
		}
	})
}

// receiver records the deliveries it verifies with client.VerifyWebhook.
type receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	events  []*client.Event
	refused int
	raw     []delivery
}

type delivery struct {
	body   []byte
	header http.Header
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.raw = append(rc.raw, delivery{body: body, header: r.Header.Clone()})
		e, err := client.VerifyWebhook(body, r.Header, rc.secrets...)
		if err != nil {
			rc.refused++
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rc.events = append(rc.events, e)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) use(secrets ...string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = secrets
}

// waitFor waits until n events have verified.
func (rc *receiver) waitFor(t *testing.T, n int) []*client.Event {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rc.mu.Lock()
		events, refused := append([]*client.Event(nil), rc.events...), rc.refused
		rc.mu.Unlock()
		if len(events) >= n {
			return events
		}
		if refused > 0 {
			t.Fatalf("the receiver refused %d deliveries", refused)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events verified, want %d", len(events), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Every method of Webhooks, and client.VerifyWebhook against real
// deliveries: Standard Webhooks, a rotation's grace with either secret,
// X-service-Signature alone, a tampered body, a wrong secret, a replay.
func TestWebhooksAndVerification(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := serve(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		s.RunDispatcher(t, app.DispatcherOptions{Policy: domain.RetryPolicy{Base: 20 * time.Millisecond, Max: 160 * time.Millisecond, Window: 5 * time.Second}})
		ctx := context.Background()
		rc := newReceiver(t)

		w := must[*client.WebhookWithSecret](t)(s.admin.Webhooks.Create(ctx, client.WebhookCreate{URL: rc.srv.URL + "/hook",
			Events: []client.EventType{client.EventTypeTaskCreated}}))
		rc.use(w.Secret)
		p := must[*client.Project](t)(s.member.Projects.Create(ctx, client.ProjectCreate{Name: "Hooks", Key: "HKS"}))
		task := must[*client.Task](t)(s.member.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Signed"}))
		got := rc.waitFor(t, 1)
		if data, err := got[0].Task(); err != nil || data.ID != task.ID || got[0].Type != client.EventTypeTaskCreated {
			t.Fatalf("verified event %+v (%+v, %v)", got[0], data, err)
		}

		upd := must[*client.Webhook](t)(s.admin.Webhooks.Update(ctx, w.ID, client.WebhookUpdate{
			Events: &[]client.EventType{client.EventTypeTaskCreated, client.EventTypeTaskUpdated}}))
		if len(upd.Events) != 2 {
			t.Fatalf("updated %+v", upd)
		}
		if got := must[*client.Webhook](t)(s.admin.Webhooks.Get(ctx, w.ID)); got.URL != w.URL {
			t.Fatalf("get %+v", got)
		}
		if list := collect(t, s.admin.Webhooks.List(ctx, client.ListParams{})); len(list) != 1 || list[0].ID != w.ID {
			t.Fatalf("list %+v", list)
		}
		// A list's error is its one item.
		var errs []error
		for _, err := range s.member.Webhooks.List(ctx, client.ListParams{}) {
			errs = append(errs, err)
		}
		if len(errs) != 1 {
			t.Fatalf("a refused list yielded %v, want one error", errs)
		}
		expectError(t, errs[0], http.StatusForbidden, "permission_denied")
		_, err := s.other.Webhooks.Get(ctx, w.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")

		// Rotation with a grace period: both secrets sign; a receiver with
		// the old one, then one with the new one, verifies.
		old := w.Secret
		rotated := must[*client.WebhookWithSecret](t)(s.admin.Webhooks.RotateSecret(ctx, w.ID, client.RotateSecret{PreviousSecretExpiresIn: client.Ptr(3600)}))
		if rotated.Secret == old || rotated.Secret == "" {
			t.Fatalf("rotated secret %q", rotated.Secret)
		}
		ping := must[*client.Delivery](t)(s.admin.Webhooks.Ping(ctx, w.ID))
		if ping.Status != client.DeliveryStatusPending {
			t.Fatalf("ping %+v", ping)
		}
		rc.waitFor(t, 2) // with the old secret
		// Both deliveries are recorded as succeeded (the receiver answers
		// before the dispatcher records it): listed one a page.
		var deliveries []client.Delivery
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			deliveries = collect(t, s.admin.Webhooks.Deliveries(ctx, w.ID, client.DeliveryListParams{Status: "succeeded", ListParams: client.ListParams{PageSize: 1}}))
			if len(deliveries) == 2 || time.Now().After(deadline) {
				break
			}
		}
		if len(deliveries) != 2 {
			t.Fatalf("%d succeeded deliveries, want 2 (the task's and the ping's)", len(deliveries))
		}
		rc.use(rotated.Secret)
		if again := must[*client.Delivery](t)(s.admin.Webhooks.Redeliver(ctx, w.ID, ping.ID)); again.EventID != ping.EventID {
			t.Fatalf("redelivered %+v, want the ping's event", again)
		}
		rc.waitFor(t, 3) // with the new one

		// What VerifyWebhook refuses, on a real delivery's bytes.
		rc.mu.Lock()
		sent := rc.raw[len(rc.raw)-1]
		rc.mu.Unlock()
		if _, err := client.VerifyWebhook(sent.body, sent.header, rotated.Secret); err != nil {
			t.Fatalf("a genuine delivery: %v", err)
		}
		tampered := append([]byte(nil), sent.body...)
		tampered[len(tampered)-2] ^= 1
		if _, err := client.VerifyWebhook(tampered, sent.header, rotated.Secret); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("a tampered body: %v, want ErrWebhookSignature", err)
		}
		if _, err := client.VerifyWebhook(sent.body, sent.header, domain.NewWebhookSecret()); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("a wrong secret: %v, want ErrWebhookSignature", err)
		}
		replay := sent.header.Clone()
		replay.Set(webhook.HeaderWebhookTimestamp, "1000000000") // 2001: long past the five minutes
		if _, err := client.VerifyWebhook(sent.body, replay, rotated.Secret); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("a replayed timestamp: %v, want ErrWebhookSignature", err)
		}
		// An older timestamp passes a verifier told to tolerate its age.
		lenient := must[*client.WebhookVerifier](t)(client.NewWebhookVerifier([]string{rotated.Secret}, client.WithTolerance(time.Duration(1<<62))))
		if _, err := lenient.Verify(sent.body, replay); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("a forged timestamp (the signature covers it): %v, want ErrWebhookSignature", err)
		}
		// Without the Standard Webhooks headers, as a replay whose
		// timestamp was stripped would come, the delivery is refused by
		// default: X-service-Signature signs no timestamp.
		bare := sent.header.Clone()
		for _, h := range []string{webhook.HeaderWebhookID, webhook.HeaderWebhookTimestamp, webhook.HeaderWebhookSignature} {
			bare.Del(h)
		}
		if _, err := client.VerifyWebhook(sent.body, bare, old, rotated.Secret); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("a delivery stripped of its webhook-* headers: %v, want ErrWebhookSignature", err)
		}
		// A receiver behind a proxy that strips them opts in to
		// X-service-Signature (made with the new secret).
		legacy := must[*client.WebhookVerifier](t)(client.NewWebhookVerifier([]string{old, rotated.Secret}, client.AllowLegacySignature()))
		if _, err := legacy.Verify(sent.body, bare); err != nil {
			t.Fatalf("X-service-Signature with either secret, allowed: %v", err)
		}
		legacyOld := must[*client.WebhookVerifier](t)(client.NewWebhookVerifier([]string{old}, client.AllowLegacySignature()))
		if _, err := legacyOld.Verify(sent.body, bare); !errors.Is(err, client.ErrWebhookSignature) {
			t.Fatalf("X-service-Signature with the old secret only: %v, want ErrWebhookSignature", err)
		}

		if err := s.admin.Webhooks.Delete(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		_, err = s.admin.Webhooks.Get(ctx, w.ID)
		expectError(t, err, http.StatusNotFound, "resource_not_found")
	})
}
