package graph_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/adapters/telemetry/telemetrytest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/graph/server"
)

// tracedLiveEnv is a live environment whose server, statements and
// subscriptions are traced into a recorder.
func tracedLiveEnv(t *testing.T, url string) (*liveEnv, *telemetrytest.Recorder) {
	t.Helper()
	rec := telemetrytest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := store.Open(ctx, url, store.WithTracing(rec.Provider))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	e := newLiveEnv(t, db, apitest.Settings{GraphQL: server.Options{Tracing: rec.Provider}},
		func(o *httpedge.Options) { o.Tracing = rec.Provider })
	return e, rec
}

// A GraphQL query with a nested field, traced on each database: the
// operation a span named by its type and name under the request's, each
// field with a resolver a span under it, the statements under those; the
// document and the variables in none of them.
func TestTracesOfAGraphQLOperation(t *testing.T) {
	t.Parallel()
	storetest.ForEachURL(t, func(t *testing.T, url string) {
		e, rec := tracedLiveEnv(t, url)
		const title = "Calibrate the zeppelin"
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Board", "key": "BRD"})
		prj.ExpectStatus(t, http.StatusCreated)
		e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": title}).ExpectStatus(t, http.StatusCreated)

		const query = `query Board($q: String) { projects(first: 5) { nodes { id tasks(first: 5, filter: {query: $q}) { nodes { id title } } } } }`
		res := gql(t, e.Env, e.Member.Key, query, map[string]any{"q": "zeppel"})
		if n := len(list(res.ok(t), "projects", "nodes", 0, "tasks", "nodes")); n != 1 {
			t.Fatalf("the search found %d tasks, want 1", n)
		}
		requestID := res.Header.Get("X-Request-Id")
		op, spans := rec.WaitFor(t, "query Board", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "query Board" })
		if telemetrytest.Attr(op, "graphql.operation.type") != "query" || telemetrytest.Attr(op, "graphql.operation.name") != "Board" ||
			telemetrytest.Has(op, "graphql.document") {
			t.Errorf("operation span attributes %v", op.Attributes())
		}
		if telemetrytest.Attr(op, telemetry.RequestID) != requestID || telemetrytest.Attr(op, telemetry.WorkspaceID) != e.Workspace.ID {
			t.Errorf("operation span request %q workspace %q, want %s %s", telemetrytest.Attr(op, telemetry.RequestID),
				telemetrytest.Attr(op, telemetry.WorkspaceID), requestID, e.Workspace.ID)
		}
		inTrace := telemetrytest.InTrace(spans, op.SpanContext().TraceID())
		var server, nested sdktrace.ReadOnlySpan
		for _, s := range inTrace {
			switch {
			case s.SpanKind() == trace.SpanKindServer:
				server = s
			case s.Name() == "Project.tasks":
				nested = s
			}
		}
		if server == nil || server.Name() != "POST /graphql" || op.Parent().SpanID() != server.SpanContext().SpanID() {
			t.Fatalf("want query Board under the server span POST /graphql:\n%s", telemetrytest.Describe(inTrace))
		}
		if nested == nil || !telemetrytest.Descends(inTrace, nested, op.SpanContext().SpanID()) {
			t.Fatalf("want the nested field Project.tasks under query Board:\n%s", telemetrytest.Describe(spans))
		}
		underOp := 0
		for _, s := range inTrace {
			if s.SpanKind() == trace.SpanKindClient && telemetrytest.Attr(s, "db.query.text") != "" &&
				telemetrytest.Descends(inTrace, s, op.SpanContext().SpanID()) {
				underOp++
			}
		}
		if underOp == 0 {
			t.Fatalf("no statement under the operation:\n%s", telemetrytest.Describe(inTrace))
		}
		telemetrytest.NoneHolds(t, spans, title, "zeppel", "filter: {query", e.Member.Key)
	})
}

// Each message a subscription sends is a span of the socket's request,
// with the operation id and the workspace, never the event's data.
func TestTracesOfSubscriptionMessages(t *testing.T) {
	t.Parallel()
	storetest.ForEachURL(t, func(t *testing.T, url string) {
		e, rec := tracedLiveEnv(t, url)
		const title = "Polish the telescope"
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Live", "key": "LIV"})
		prj.ExpectStatus(t, http.StatusCreated)
		e.Get("/v1/events", e.Guest.Key).ExpectStatus(t, http.StatusOK)
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		c.subscribe("s1", eventsSubscription, map[string]any{"types": []string{"TASK_CREATED"}})
		waitForSubscriptions(t, e, 1)
		e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": title}).ExpectStatus(t, http.StatusCreated)
		if ev := c.event("s1", 10*time.Second); ev["type"] != "TASK_CREATED" {
			t.Fatalf("event %v", ev)
		}
		msg, _ := rec.WaitFor(t, "subscription message", func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "subscription message" })
		if telemetrytest.Attr(msg, "worktrack.subscription.id") != "s1" || telemetrytest.Attr(msg, "graphql.operation.type") != "subscription" ||
			telemetrytest.Attr(msg, telemetry.WorkspaceID) != e.Workspace.ID || msg.SpanKind() != trace.SpanKindProducer {
			t.Errorf("message span %v kind %v", msg.Attributes(), msg.SpanKind())
		}
		// The socket's request span ends when the socket closes: the
		// message's parent.
		_ = c.conn.Close(websocket.StatusNormalClosure, "done")
		upgrade, spans := rec.WaitFor(t, "of the socket's request", func(s sdktrace.ReadOnlySpan) bool {
			return s.SpanContext().SpanID() == msg.Parent().SpanID()
		})
		if upgrade.Name() != "GET /graphql" || upgrade.SpanKind() != trace.SpanKindServer {
			t.Errorf("message's parent %q kind %v, want the server span GET /graphql", upgrade.Name(), upgrade.SpanKind())
		}
		telemetrytest.NoneHolds(t, spans, title, e.Guest.Key, e.Member.Key)
	})
}
