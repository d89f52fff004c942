package rest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/adapters/telemetry/telemetrytest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
)

// A REST read, a bulk create and the deliveries it caused, traced on each
// database: the server span named by its route and continuing the caller's
// traceparent; every statement a client span under it with placeholders;
// each delivery attempt a client span in the create's trace, whose
// traceparent the receiver got; the request and workspace ids on every
// span after authentication; and no title, key, header value or secret in
// any span.
func TestTracesOfARequestItsStatementsAndItsDeliveries(t *testing.T) {
	t.Parallel()
	storetest.ForEachURL(t, func(t *testing.T, url string) {
		rec := telemetrytest.New(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db, err := store.Open(ctx, url, store.WithTracing(rec.Provider))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true}, func(o *httpedge.Options) { o.Tracing = rec.Provider })
		apitest.RunDispatcherOver(t, e, e.App, e.DB,
			webhook.NewSender(webhook.SenderOptions{AllowPrivate: true, Tracing: rec.Provider}),
			app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})

		const (
			readTitle   = "Quarterly zeppelin budget"
			batchTitle  = "Negotiate walrus contract"
			headerValue = "hv-7f3a9c-never-in-a-span"
		)
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Apollo", "key": "APO"})
		prj.ExpectStatus(t, http.StatusCreated)
		tsk := newTask(t, e, prj.Str("id"), map[string]any{"title": readTitle})

		// A read continuing a caller's trace.
		callerTrace, callerSpan := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		read := e.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/tasks/" + tsk.Str("id"), Key: e.Member.Key,
			Header: map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}})
		read.ExpectStatus(t, http.StatusOK)
		server, spans := rec.WaitFor(t, "of the read", func(s sdktrace.ReadOnlySpan) bool {
			return s.SpanKind() == trace.SpanKindServer && s.SpanContext().TraceID().String() == callerTrace
		})
		if server.Parent().SpanID().String() != callerSpan || !server.Parent().IsRemote() {
			t.Errorf("server span's parent %v, want the caller's span %s", server.Parent(), callerSpan)
		}
		if server.Name() != "GET /v1/tasks/:taskId" || telemetrytest.Attr(server, "http.route") != "/v1/tasks/:taskId" ||
			telemetrytest.Attr(server, "http.response.status_code") != "200" {
			t.Errorf("server span %q route %q status %q", server.Name(), telemetrytest.Attr(server, "http.route"), telemetrytest.Attr(server, "http.response.status_code"))
		}
		requestID := read.Header.Get("X-Request-Id")
		if got := telemetrytest.Attr(server, telemetry.RequestID); got != requestID || requestID == "" {
			t.Errorf("server span request id %q, X-Request-Id %q", got, requestID)
		}
		if got := telemetrytest.Attr(server, telemetry.WorkspaceID); got != e.Workspace.ID {
			t.Errorf("server span workspace %q, want %s", got, e.Workspace.ID)
		}
		statements := 0
		for _, s := range telemetrytest.InTrace(spans, server.SpanContext().TraceID()) {
			if s.SpanKind() != trace.SpanKindClient {
				continue
			}
			statements++
			text := telemetrytest.Attr(s, "db.query.text")
			// Under the server span, or under its statement (PostgreSQL's
			// prepare of a statement not yet cached on the connection).
			if text == "" || !telemetrytest.Descends(spans, s, server.SpanContext().SpanID()) {
				t.Errorf("statement span %q: text %q, parent %s, want under the server span:\n%s", s.Name(), text, s.Parent().SpanID(), telemetrytest.Describe(spans))
			}
			if telemetrytest.Attr(s, telemetry.RequestID) != requestID {
				t.Errorf("statement span %q lacks the request id", s.Name())
			}
			// The task's read runs under the caller's workspace.
			if strings.Contains(text, "FROM tasks") && telemetrytest.Attr(s, telemetry.WorkspaceID) != e.Workspace.ID {
				t.Errorf("statement %q: workspace %q", text, telemetrytest.Attr(s, telemetry.WorkspaceID))
			}
		}
		if statements == 0 {
			t.Fatalf("no statement spans in the read's trace:\n%s", telemetrytest.Describe(spans))
		}

		// A bulk create whose events are delivered: each attempt is a
		// client span in the create's trace, and the receiver continues it.
		rc := newReceiver(t, nil)
		hook := e.Send(http.MethodPost, "/v1/webhooks", e.Admin.Key, map[string]any{
			"url": rc.URL(), "events": []string{"task.created"}, "headers": map[string]string{"X-Receiver-Token": headerValue},
		})
		hook.ExpectStatus(t, http.StatusCreated)
		batch := e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks/batch", e.Member.Key, map[string]any{
			"tasks": []map[string]any{{"title": batchTitle}, {"title": batchTitle + " 2"}, {"title": batchTitle + " 3"}},
		})
		batch.ExpectStatus(t, http.StatusCreated)
		batchID := batch.Header.Get("X-Request-Id")
		got := rc.WaitFor(3)
		create, spans := rec.WaitFor(t, "of the bulk create", func(s sdktrace.ReadOnlySpan) bool {
			return s.SpanKind() == trace.SpanKindServer && telemetrytest.Attr(s, telemetry.RequestID) == batchID
		})
		if create.Name() != "POST /v1/projects/:projectId/tasks/batch" {
			t.Errorf("bulk create's span %q", create.Name())
		}
		inserts := 0
		for _, s := range telemetrytest.InTrace(spans, create.SpanContext().TraceID()) {
			if strings.HasPrefix(telemetrytest.Attr(s, "db.query.text"), "INSERT INTO tasks") {
				inserts++
			}
		}
		if inserts == 0 {
			t.Errorf("no INSERT INTO tasks statement in the bulk create's trace:\n%s", telemetrytest.Describe(spans))
		}
		for _, r := range got {
			parts := strings.Split(r.Header.Get("traceparent"), "-")
			if len(parts) != 4 || parts[1] != create.SpanContext().TraceID().String() {
				t.Fatalf("delivery traceparent %q, want the bulk create's trace %s", r.Header.Get("traceparent"), create.SpanContext().TraceID())
			}
			attempt, all := rec.WaitFor(t, "of the delivery attempt "+parts[2], func(s sdktrace.ReadOnlySpan) bool {
				return s.SpanContext().SpanID().String() == parts[2]
			})
			spans = all
			if attempt.Name() != "POST" || attempt.SpanKind() != trace.SpanKindClient ||
				attempt.Parent().SpanID() != create.SpanContext().SpanID() {
				t.Errorf("attempt span %q kind %v parent %s, want a client POST under the create's span %s",
					attempt.Name(), attempt.SpanKind(), attempt.Parent().SpanID(), create.SpanContext().SpanID())
			}
			if telemetrytest.Attr(attempt, "worktrack.webhook.id") != hook.Str("id") ||
				telemetrytest.Attr(attempt, "worktrack.delivery.attempt") != "1" ||
				telemetrytest.Attr(attempt, "http.response.status_code") != "200" ||
				telemetrytest.Attr(attempt, telemetry.WorkspaceID) != e.Workspace.ID ||
				telemetrytest.Attr(attempt, "url.full") != rc.URL() {
				t.Errorf("attempt span attributes %v", attempt.Attributes())
			}
		}
		telemetrytest.NoneHolds(t, spans, readTitle, batchTitle, headerValue, hook.Str("secret"),
			e.Member.Key, e.Admin.Key)
	})
}
