package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

// liveEnv is newEnv served on a real listener (WebSockets need one), with
// the live feed running, as `worktrack serve` runs it.
type liveEnv struct {
	*apitest.Env
	URL     string // ws://…/graphql
	Sockets *server.Sockets
}

func newLiveEnv(t *testing.T, db *store.DB, set apitest.Settings, opts ...apitest.Option) *liveEnv {
	t.Helper()
	e := apitest.NewWith(t, db, set, opts...)
	sockets := e.Sockets
	srv := httptest.NewServer(e.Edge)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.App.Live.Run(ctx)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", e.Logs)
		}
		closeCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = sockets.Close(closeCtx)
		srv.Close()
		cancel()
		<-done
	})
	return &liveEnv{Env: e, URL: "ws" + strings.TrimPrefix(srv.URL, "http") + server.Path, Sockets: sockets}
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsClient speaks graphql-transport-ws over coder/websocket. The npm
// graphql-ws client is tested against the same server in
// cmd/worktrack/e2e (graphqlws_test.go).
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
	msgs chan wsMessage
	mu   sync.Mutex
	err  error // why the read loop ended (a close status, say)
	done chan struct{}
	gate atomic.Pointer[chan struct{}] // set by pause: the read loop waits for it to close
}

// pause stops reading the socket (the server's writes back up); resume
// reads again.
func (c *wsClient) pause() {
	ch := make(chan struct{})
	c.gate.Store(&ch)
}

func (c *wsClient) resume() {
	if ch := c.gate.Swap(nil); ch != nil {
		close(*ch)
	}
}

// dialWS opens a socket with the header and sends connection_init with
// payload (none when nil). It does not wait for the ack.
func dialWS(t *testing.T, url string, header http.Header, payload map[string]any) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if res.Body != nil {
		_ = res.Body.Close() // a 101's body is empty; the socket is conn's
	}
	if got := res.Header.Get("Sec-WebSocket-Protocol"); got != "graphql-transport-ws" {
		t.Fatalf("negotiated subprotocol %q", got)
	}
	conn.SetReadLimit(1 << 24)
	c := &wsClient{t: t, conn: conn, msgs: make(chan wsMessage, 10_000), done: make(chan struct{})}
	go c.read()
	t.Cleanup(func() { _ = conn.CloseNow() })
	init := wsMessage{Type: "connection_init"}
	if payload != nil {
		init.Payload, _ = json.Marshal(payload)
	}
	c.send(init)
	return c
}

func (c *wsClient) read() {
	defer close(c.done)
	for {
		if ch := c.gate.Load(); ch != nil {
			<-*ch
		}
		_, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err != nil {
			c.mu.Lock()
			c.err = fmt.Errorf("bad message %s: %w", data, err)
			c.mu.Unlock()
			return
		}
		if m.Type == "ping" {
			c.send(wsMessage{Type: "pong"})
			continue
		}
		c.msgs <- m
	}
}

func (c *wsClient) send(m wsMessage) {
	c.t.Helper()
	raw, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, raw); err != nil {
		c.t.Fatalf("send %s: %v", raw, err)
	}
}

// next is the next message, failing the test after wait.
func (c *wsClient) next(wait time.Duration) wsMessage {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-c.done:
		select {
		case m := <-c.msgs:
			return m
		default:
		}
		c.t.Fatalf("socket closed while a message was awaited: %v", c.readErr())
	case <-time.After(wait):
		c.t.Fatalf("no message within %s", wait)
	}
	return wsMessage{}
}

func (c *wsClient) readErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// ack waits for connection_ack.
func (c *wsClient) ack() {
	c.t.Helper()
	if m := c.next(10 * time.Second); m.Type != "connection_ack" {
		c.t.Fatalf("got %s %s, want connection_ack", m.Type, m.Payload)
	}
}

// closed waits for the server to close the socket and returns its code and
// reason.
func (c *wsClient) closed(wait time.Duration) (websocket.StatusCode, string) {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(wait):
		c.t.Fatalf("socket still open after %s", wait)
	}
	var ce websocket.CloseError
	if err := c.readErr(); !errors.As(err, &ce) {
		c.t.Fatalf("socket ended without a close frame: %v", err)
	}
	return ce.Code, ce.Reason
}

func (c *wsClient) subscribe(id, query string, vars map[string]any) {
	c.t.Helper()
	p := map[string]any{"query": query}
	if vars != nil {
		p["variables"] = vars
	}
	raw, _ := json.Marshal(p)
	c.send(wsMessage{ID: id, Type: "subscribe", Payload: raw})
}

// event reads the next message, which must be a next of subscription id,
// and returns its data.events.
func (c *wsClient) event(id string, wait time.Duration) map[string]any {
	c.t.Helper()
	m := c.next(wait)
	if m.Type != "next" || m.ID != id {
		c.t.Fatalf("got %s (id %s) %s, want next of %s", m.Type, m.ID, m.Payload, id)
	}
	var p struct {
		Data   map[string]map[string]any `json:"data"`
		Errors []gqlError                `json:"errors"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		c.t.Fatalf("next payload %s: %v", m.Payload, err)
	}
	if len(p.Errors) > 0 {
		c.t.Fatalf("next with errors: %s", m.Payload)
	}
	return p.Data["events"]
}

// failure reads the next message, which must be an error of subscription
// id, and returns its one error.
func (c *wsClient) failure(id string, wait time.Duration) gqlError {
	c.t.Helper()
	m := c.next(wait)
	if m.Type != "error" || m.ID != id {
		c.t.Fatalf("got %s (id %s) %s, want an error message of %s", m.Type, m.ID, m.Payload, id)
	}
	var errs []gqlError
	if err := json.Unmarshal(m.Payload, &errs); err != nil || len(errs) != 1 {
		c.t.Fatalf("error payload %s: %v", m.Payload, err)
	}
	return errs[0]
}

// quiet fails if a message arrives within wait.
func (c *wsClient) quiet(wait time.Duration) {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		c.t.Fatalf("unexpected %s (id %s) %s", m.Type, m.ID, m.Payload)
	case <-time.After(wait):
	}
}

func bearer(key string) map[string]any { return map[string]any{"authorization": "Bearer " + key} }

const eventsSubscription = `subscription($types: [WebhookEventType!], $projectId: ID, $after: ID) {
	events(types: $types, projectId: $projectId, after: $after) {
		id type projectId payload
		task { id title status assignee { email } project { key } }
		project { id key } } }`

// A change made over REST reaches a subscriber of its workspace, as the
// log shows it, promptly; another workspace's subscriber never sees it; the
// filters keep only what they name.
func TestSubscriptionDeliversChangesOfItsWorkspace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Live", "key": "LIV"})
		prj.ExpectStatus(t, http.StatusCreated)
		other := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Other", "key": "OTH"})
		other.ExpectStatus(t, http.StatusCreated)

		// Events that committed before a subscribe but were not yet given
		// their log position may arrive too; reading the log positions them.
		e.Get("/v1/events", e.Guest.Key).ExpectStatus(t, http.StatusOK)
		all := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		all.ack()
		all.subscribe("all", eventsSubscription, nil)
		created := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		created.ack()
		created.subscribe("created", eventsSubscription, map[string]any{"types": []string{"TASK_CREATED"}, "projectId": prj.Str("id")})
		foreign := dialWS(t, e.URL, nil, bearer(e.Other.Key))
		foreign.ack()
		foreign.subscribe("foreign", eventsSubscription, nil)
		waitForSubscriptions(t, e, 3)

		sent := time.Now()
		tsk := e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "Ship", "assignee_id": e.Guest.User.ID})
		tsk.ExpectStatus(t, http.StatusCreated)
		got := all.event("all", 10*time.Second)
		t.Logf("a REST change reached the subscriber %s after the request was sent", time.Since(sent).Round(time.Millisecond))
		logged := e.Get("/v1/events?type=task.created", e.Guest.Key)
		logged.ExpectStatus(t, http.StatusOK)
		want := logged.JSON["data"].([]any)[0].(map[string]any)
		if got["id"] != want["id"] || got["type"] != "TASK_CREATED" || got["projectId"] != prj.Str("id") {
			t.Fatalf("event %v, log %v", got, want)
		}
		gotPayload, _ := json.Marshal(got["payload"])
		wantPayload, _ := json.Marshal(want)
		if string(gotPayload) != string(wantPayload) {
			t.Fatalf("payload %s, log %s", gotPayload, wantPayload)
		}
		task := got["task"].(map[string]any)
		if task["id"] != tsk.Str("id") || task["assignee"].(map[string]any)["email"] != e.Guest.User.Email || task["project"].(map[string]any)["key"] != "LIV" {
			t.Fatalf("task %v", task)
		}
		if c := created.event("created", 10*time.Second); c["id"] != want["id"] {
			t.Fatalf("filtered subscriber got %v", c)
		}

		// Neither an update (type) nor a task of another project reaches
		// the filtered subscriber; both reach the unfiltered one.
		e.Send(http.MethodPatch, "/v1/tasks/"+tsk.Str("id"), e.Member.Key, map[string]any{"status": "in_progress"}).ExpectStatus(t, http.StatusOK)
		e.Send(http.MethodPost, "/v1/projects/"+other.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "Elsewhere"}).ExpectStatus(t, http.StatusCreated)
		if u := all.event("all", 10*time.Second); u["type"] != "TASK_UPDATED" || u["task"].(map[string]any)["status"] != "IN_PROGRESS" {
			t.Fatalf("update %v", u)
		}
		if o := all.event("all", 10*time.Second); o["projectId"] != other.Str("id") {
			t.Fatalf("other project %v", o)
		}
		// The Other workspace's own change reaches its subscriber, after
		// none of Acme's.
		e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "Globex", "key": "GLX"}).ExpectStatus(t, http.StatusCreated)
		if f := foreign.event("foreign", 10*time.Second); f["type"] != "PROJECT_CREATED" || f["project"].(map[string]any)["key"] != "GLX" {
			t.Fatalf("foreign subscriber got %v", f)
		}
		created.quiet(300 * time.Millisecond)
		foreign.quiet(300 * time.Millisecond)
	})
}

// waitForSubscriptions waits until the process holds n subscriptions: a
// subscribe message is answered only with events, so a test that needs the
// subscription in place before its change waits for it here.
func waitForSubscriptions(t *testing.T, e *liveEnv, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.App.Live.Subscriptions() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions, want %d", e.App.Live.Subscriptions(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The key may come in connection_init (any case of the name) or in the
// upgrade request's header; none, a bad one, and a revoked or expired one
// close the socket with 4403.
func TestSubscriptionAuthentication(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})

		for name, payload := range map[string]map[string]any{
			"Authorization": {"Authorization": "Bearer " + e.Guest.Key},
			"AUTHORIZATION": {"AUTHORIZATION": "bearer " + e.Guest.Key},
		} {
			c := dialWS(t, e.URL, nil, payload)
			c.ack()
			c.subscribe("1", `subscription { events { id } }`, nil)
			waitForSubscriptions(t, e, 1)
			_ = c.conn.Close(websocket.StatusNormalClosure, "")
			waitForSubscriptions0(t, e, name)
		}
		header := dialWS(t, e.URL, http.Header{"Authorization": {"Bearer " + e.Guest.Key}}, nil)
		header.ack()

		for name, c := range map[string]*wsClient{
			"no key":        dialWS(t, e.URL, nil, nil),
			"empty payload": dialWS(t, e.URL, nil, map[string]any{}),
			"invalid key":   dialWS(t, e.URL, nil, bearer("wtk_"+strings.Repeat("x", 40))),
			"not bearer":    dialWS(t, e.URL, nil, map[string]any{"authorization": e.Guest.Key}),
			"not a string":  dialWS(t, e.URL, nil, map[string]any{"authorization": 42}),
		} {
			code, reason := c.closed(10 * time.Second)
			if code != server.CloseForbidden {
				t.Fatalf("%s: closed with %d %q, want 4403", name, code, reason)
			}
		}

		// A key revoked while connected closes its socket within 10 s.
		victim := e.NewMember(e.Workspace.ID, "rev@acme.test", "member")
		c := dialWS(t, e.URL, nil, bearer(victim.Key))
		c.ack()
		c.subscribe("1", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 1)
		keys, err := e.App.Admin.ListKeys(context.Background(), victim.User.ID)
		if err != nil || len(keys) != 1 {
			t.Fatalf("keys %v %v", keys, err)
		}
		revoked := time.Now()
		if _, err := e.App.Admin.RevokeKey(context.Background(), keys[0].ID); err != nil {
			t.Fatal(err)
		}
		code, reason := c.closed(15 * time.Second)
		t.Logf("the revoked key's socket closed %s after the revocation", time.Since(revoked).Round(time.Millisecond))
		if code != server.CloseForbidden || !strings.Contains(reason, "revoked") {
			t.Fatalf("closed with %d %q, want 4403", code, reason)
		}
		if took := time.Since(revoked); took > 10*time.Second {
			t.Fatalf("closed %s after the revocation, want within 10s", took)
		}

		// An expiring key closes it when it expires.
		short, secret, err := e.App.Admin.CreateKey(context.Background(), e.Guest.User.ID, domain.APIKeyFields{Name: domain.Set("short"), ExpiresAt: domain.Set(e.Clock.Now().Add(time.Hour))})
		if err != nil {
			t.Fatal(err)
		}
		_ = short
		c = dialWS(t, e.URL, nil, bearer(secret))
		c.ack()
		e.Clock.Advance(2 * time.Hour)
		if code, reason := c.closed(15 * time.Second); code != server.CloseForbidden {
			t.Fatalf("expired: closed with %d %q, want 4403", code, reason)
		}
		header.quiet(100 * time.Millisecond) // the header-authenticated socket stays open
	})
}

func waitForSubscriptions0(t *testing.T, e *liveEnv, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.App.Live.Subscriptions() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the subscription outlived its socket", name)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A key holds at most 20 subscriptions; the 21st gets an error message, and
// completing one makes room. Each subscribe counts against the rate limit.
func TestSubscriptionLimits(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		for i := range 20 {
			c.subscribe(fmt.Sprint(i), `subscription { events { id } }`, nil)
		}
		waitForSubscriptions(t, e, 20)
		c.subscribe("21", `subscription { events { id } }`, nil)
		if f := c.failure("21", 10*time.Second); f.Extensions["code"] != "too_many_requests" {
			t.Fatalf("21st: %v", f)
		}
		// Another socket of the same key is refused too; another key is not.
		d := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		d.ack()
		d.subscribe("x", `subscription { events { id } }`, nil)
		if f := d.failure("x", 10*time.Second); f.Extensions["code"] != "too_many_requests" {
			t.Fatalf("other socket: %v", f)
		}
		m := dialWS(t, e.URL, nil, bearer(e.Member.Key))
		m.ack()
		m.subscribe("m", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 21)
		c.send(wsMessage{ID: "0", Type: "complete"})
		if m := c.next(10 * time.Second); m.Type != "complete" || m.ID != "0" { // gqlgen confirms it
			t.Fatalf("after complete: %s %s %s", m.Type, m.ID, m.Payload)
		}
		deadline := time.Now().Add(10 * time.Second)
		for e.App.Live.Subscriptions() != 20 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		c.subscribe("22", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 21)
		c.quiet(200 * time.Millisecond)
	})
}

func TestSubscribeCountsAgainstTheRateLimit(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{}, func(o *httpedge.Options) { o.RateLimit = 3 })
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		e.Get("/v1/users/me", e.Guest.Key).ExpectStatus(t, http.StatusOK)
		c.subscribe("1", `subscription { events { id } }`, nil)
		c.subscribe("2", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 2)
		c.subscribe("3", `subscription { events { id } }`, nil)
		if f := c.failure("3", 10*time.Second); f.Extensions["code"] != "too_many_requests" || !strings.Contains(f.Message, "Too many requests") {
			t.Fatalf("past the limit: %v", f)
		}
		e.Get("/v1/users/me", e.Guest.Key).ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
		if n := e.App.Live.Subscriptions(); n != 2 {
			t.Fatalf("%d subscriptions, want 2", n)
		}
	})
}

// With after, a subscription first receives what followed that event in
// the log, then the live events, with no gap and no repeat; an unknown,
// foreign or malformed after is refused with validation_failed.
func TestSubscriptionResumesAfterAnEvent(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Resume", "key": "RES"})
		prj.ExpectStatus(t, http.StatusCreated)
		for i := range 5 {
			e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": fmt.Sprint("T", i)}).ExpectStatus(t, http.StatusCreated)
		}
		log := e.Get("/v1/events?limit=100", e.Guest.Key)
		log.ExpectStatus(t, http.StatusOK)
		events := log.JSON["data"].([]any)
		if len(events) != 6 {
			t.Fatalf("%d events, want 6", len(events))
		}
		after := events[2].(map[string]any)["id"].(string)

		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		c.subscribe("r", eventsSubscription, map[string]any{"after": after})
		for _, want := range events[3:] {
			if got := c.event("r", 10*time.Second); got["id"] != want.(map[string]any)["id"] {
				t.Fatalf("replayed %v, want %v", got["id"], want.(map[string]any)["id"])
			}
		}
		live := e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "Live"})
		live.ExpectStatus(t, http.StatusCreated)
		if got := c.event("r", 10*time.Second); got["task"].(map[string]any)["id"] != live.Str("id") {
			t.Fatalf("live event %v", got)
		}
		c.quiet(300 * time.Millisecond)

		otherEvent := e.Send(http.MethodPost, "/v1/projects", e.Other.Key, map[string]any{"name": "G", "key": "GGG"})
		otherEvent.ExpectStatus(t, http.StatusCreated)
		foreign := e.Get("/v1/events", e.Other.Key).JSON["data"].([]any)[0].(map[string]any)["id"].(string)
		for name, bad := range map[string]string{
			"unknown": "evt_" + strings.Repeat("a", 24), "foreign": foreign, "malformed": "tsk_123",
		} {
			c.subscribe(name, eventsSubscription, map[string]any{"after": bad})
			f := c.failure(name, 10*time.Second)
			if f.Extensions["code"] != "validation_failed" || f.Extensions["param"] != "after" {
				t.Fatalf("%s after: %v", name, f)
			}
		}
	})
}

// A subscriber that stops reading falls behind; past the limit (here 50
// events, so that a hundred more pass it) its subscription ends with
// subscriber_too_slow, after the events it was sent, and it resumes with
// after from the last one it received.
func TestSlowSubscriberIsCutOffAndResumes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{Live: app.LiveOptions{MaxBehind: 50}}, func(o *httpedge.Options) { o.RateLimit = 1_000_000 })
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Slow", "key": "SLO"})
		prj.ExpectStatus(t, http.StatusCreated)

		// Subscribed through the core: the feed's channel is what the
		// socket's writer drains. It reads ten events, then stops.
		e.Get("/v1/events", e.Guest.Key).ExpectStatus(t, http.StatusOK)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		endedCh := make(chan error, 1)
		feed, err := e.App.Live.Subscribe(ctx, guestActor(t, e), app.SubscribeRequest{Ended: func(err error) { endedCh <- err }})
		if err != nil {
			t.Fatal(err)
		}
		createTasks(t, e, prj.Str("id"), 10)
		var got []string
		for len(got) < 10 {
			select {
			case ev := <-feed:
				got = append(got, ev.ID)
			case <-time.After(10 * time.Second):
				t.Fatalf("%d events, want 10", len(got))
			}
		}
		const more = 110
		createTasks(t, e, prj.Str("id"), more)
		// The subscriber reads nothing more until the feed has ended it:
		// creates can all commit before the feed has read any of them, and a
		// subscriber draining the feed meanwhile would never be behind.
		var ended error
		select {
		case ended = <-endedCh:
		case <-time.After(30 * time.Second):
			t.Fatal("a subscriber that stopped reading was not ended")
		}
		for ev := range feed {
			got = append(got, ev.ID)
		}
		if code := domain.ErrorCode(ended); code != domain.CodeSubscriberTooSlow {
			t.Fatalf("feed ended with %v after %d events, want subscriber_too_slow", ended, len(got))
		}
		if len(got) >= 10+more {
			t.Fatalf("%d events before the cut: all of them", len(got))
		}
		t.Logf("cut off after %d of %d events", len(got), 10+more)
		n := 10 + more
		// Resume after the last one received: the rest, exactly.
		last := got[len(got)-1]
		resumed, err := e.App.Live.Subscribe(ctx, guestActor(t, e), app.SubscribeRequest{After: &last})
		if err != nil {
			t.Fatal(err)
		}
		for len(got) < n {
			select {
			case ev := <-resumed:
				got = append(got, ev.ID)
			case <-time.After(10 * time.Second):
				t.Fatalf("resumed feed stalled at %d events", len(got))
			}
		}
		log := allEventIDs(t, e, e.Guest.Key)
		if strings.Join(log[1:], ",") != strings.Join(got, ",") { // log[0] is project.created
			t.Fatalf("the feed and its resumption differ from the log (%d against %d events)", len(got), len(log)-1)
		}
	})
}

func guestActor(t *testing.T, e *liveEnv) domain.Actor {
	t.Helper()
	a, err := e.App.Auth.Authenticate(context.Background(), e.Guest.Key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// createTasks creates n tasks in the project over REST, eight at a time.
func createTasks(t *testing.T, e *liveEnv, projectID string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	jobs := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				res := e.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects/" + projectID + "/tasks", Key: e.Member.Key,
					Body: map[string]any{"title": fmt.Sprint("Task ", i)}})
				if res.Status != http.StatusCreated {
					errs <- fmt.Sprintf("create %d: %d %s", i, res.Status, res.Body)
				}
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Fatal(msg)
	}
}

// allEventIDs pages through GET /v1/events with starting_after.
func allEventIDs(t *testing.T, e *liveEnv, key string) []string {
	t.Helper()
	var ids []string
	path := "/v1/events?limit=100"
	for {
		res := e.Get(path, key)
		res.ExpectStatus(t, http.StatusOK)
		data := res.JSON["data"].([]any)
		for _, d := range data {
			ids = append(ids, d.(map[string]any)["id"].(string))
		}
		if more, _ := res.JSON["pagination"].(map[string]any)["has_more"].(bool); !more {
			return ids
		}
		path = "/v1/events?limit=100&starting_after=" + ids[len(ids)-1]
	}
}

// A subscription sent with POST is refused: it needs a WebSocket.
func TestSubscriptionOverPOSTIsRefused(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		r := gql(t, e, e.Guest.Key, `subscription { events { id } }`, nil)
		if len(r.Errors) != 1 || r.Errors[0].Extensions["code"] != "validation_failed" || r.Errors[0].Extensions["param"] != "query" ||
			!strings.Contains(r.Errors[0].Message, "WebSocket") {
			t.Fatalf("got %d %s", r.Status, r.Body)
		}
	})
}

// Bad input over a socket (docs/api.md#under-load-and-faults) never crashes the server
// or gets an internal error: each is answered with the protocol's close
// code (4400 for a message the protocol does not allow at that point) or an
// error, and the server goes on serving.
func TestWebSocketBadInput(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	raw := func(c *wsClient, typ websocket.MessageType, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.conn.Write(ctx, typ, data)
	}
	huge := `{"type":"subscribe","id":"1","payload":{"query":"` + strings.Repeat("a", 2<<20) + `"}}`
	closes := map[string]struct {
		before func(*wsClient) // after dialing, before the ack
		msg    string
		code   websocket.StatusCode
	}{
		"not JSON before init":            {msg: "{", code: server.CloseBadRequest},
		"not an object before init":       {msg: `[{"type":"connection_init"}]`, code: server.CloseBadRequest},
		"no type before init":             {msg: `{"payload":{}}`, code: server.CloseBadRequest},
		"unknown message before init":     {msg: `{"type":"hello"}`, code: server.CloseBadRequest},
		"subscribe before init":           {msg: `{"type":"subscribe","id":"1","payload":{"query":"subscription { events { id } }"}}`, code: server.CloseBadRequest},
		"complete before init":            {msg: `{"type":"complete","id":"1"}`, code: server.CloseBadRequest},
		"init payload a string":           {msg: `{"type":"connection_init","payload":"x"}`, code: server.CloseBadRequest},
		"init payload an array":           {msg: `{"type":"connection_init","payload":[1,2]}`, code: server.CloseBadRequest},
		"init payload a number":           {msg: `{"type":"connection_init","payload":5}`, code: server.CloseBadRequest},
		"a second connection_init":        {before: func(c *wsClient) { c.ack() }, msg: `{"type":"connection_init","payload":{}}`, code: server.CloseBadRequest},
		"not JSON after init":             {before: func(c *wsClient) { c.ack() }, msg: "{", code: server.CloseBadRequest},
		"unknown type after init":         {before: func(c *wsClient) { c.ack() }, msg: `{"type":"hello"}`, code: server.CloseBadRequest},
		"a server's message after init":   {before: func(c *wsClient) { c.ack() }, msg: `{"type":"next","id":"1","payload":{}}`, code: server.CloseBadRequest},
		"subscribe without an id":         {before: func(c *wsClient) { c.ack() }, msg: `{"type":"subscribe","payload":{"query":"subscription { events { id } }"}}`, code: server.CloseBadRequest},
		"subscribe with a number id":      {before: func(c *wsClient) { c.ack() }, msg: `{"type":"subscribe","id":1,"payload":{"query":"subscription { events { id } }"}}`, code: server.CloseBadRequest},
		"subscribe with a string payload": {before: func(c *wsClient) { c.ack() }, msg: `{"type":"subscribe","id":"1","payload":"subscription { events { id } }"}`, code: server.CloseBadRequest},
		"a message over the limit":        {before: func(c *wsClient) { c.ack() }, msg: huge, code: websocket.StatusMessageTooBig},
	}
	for name, tc := range closes {
		var c *wsClient
		if tc.before == nil {
			c = dialRaw(t, e.URL)
		} else {
			c = dialWS(t, e.URL, nil, bearer(e.Guest.Key))
			tc.before(c)
		}
		raw(c, websocket.MessageText, []byte(tc.msg))
		if code, reason := c.closed(10 * time.Second); code != tc.code {
			t.Errorf("%s: closed with %d %q, want %d", name, code, reason, tc.code)
		}
	}
	// Errors that leave the socket open: each is an error for its id.
	c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
	c.ack()
	for name, payload := range map[string]string{
		"syntax":        `{"query":"subscription {"}`,
		"unknown field": `{"query":"subscription { nope }"}`,
		"bad enum":      `{"query":"subscription { events(types: [NOPE]) { id } }"}`,
		"bad variables": `{"query":"subscription($a: ID) { events(after: $a) { id } }","variables":{"a":{"x":1}}}`,
		"two fields":    `{"query":"subscription { a: events { id } b: events { id } }"}`,
		"no field":      `{"query":"subscription { ... on Subscription { __typename } }"}`,
		"null bytes":    `{"query":"subscription { events(projectId: \"prj_\u0000\") { id } }"}`,
	} {
		raw(c, websocket.MessageText, []byte(`{"type":"subscribe","id":"`+name+`","payload":`+payload+`}`))
		m := c.next(10 * time.Second)
		for m.Type == "complete" && m.ID != name { // gqlgen completes some refused operations
			m = c.next(10 * time.Second)
		}
		if m.ID != name || (m.Type != "next" && m.Type != "error") || strings.Contains(string(m.Payload), "internal_error") {
			t.Fatalf("%s: got %s %s", name, m.Type, m.Payload)
		}
	}
	drain := time.After(300 * time.Millisecond)
	for draining := true; draining; {
		select {
		case m := <-c.msgs:
			if m.Type != "complete" {
				t.Fatalf("unexpected %s %s %s", m.Type, m.ID, m.Payload)
			}
		case <-drain:
			draining = false
		}
	}
	// The socket and the server still work.
	c.subscribe("ok", `subscription { events { id } }`, nil)
	waitForSubscriptions(t, e, 1)
	e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Still", "key": "STL"}).ExpectStatus(t, http.StatusCreated)
	if got := c.event("ok", 10*time.Second); got["id"] == nil {
		t.Fatalf("got %v", got)
	}
	if strings.Contains(e.Logs.String(), `"level":"ERROR"`) {
		t.Fatalf("server errors logged:\n%s", e.Logs)
	}
}

// What the protocol allows before connection_ack is served: a
// connection_init with no payload or a null one (the key in the upgrade
// request's header), a ping before it.
func TestWebSocketAllowedBeforeAck(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	header := http.Header{"Authorization": {"Bearer " + e.Guest.Key}}
	for name, init := range map[string]string{
		"no payload":   `{"type":"connection_init"}`,
		"null payload": `{"type":"connection_init","payload":null}`,
	} {
		c := dialRaw(t, e.URL, header)
		c.send(wsMessage{Type: "ping"})
		if m := c.next(10 * time.Second); m.Type != "pong" {
			t.Fatalf("%s: a ping before connection_init got %s %s, want pong", name, m.Type, m.Payload)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := c.conn.Write(ctx, websocket.MessageText, []byte(init))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		c.ack()
		c.subscribe("1", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 1)
		_ = c.conn.Close(websocket.StatusNormalClosure, "")
		waitForSubscriptions0(t, e, name)
	}
}

// Over the legacy graphql-ws subprotocol too, a connection_init whose
// payload is not an object closes the socket with 4400.
func TestLegacyWebSocketBadInitIsClosed(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, e.URL, &websocket.DialOptions{Subprotocols: []string{"graphql-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Body != nil {
		_ = res.Body.Close()
	}
	defer func() { _ = conn.CloseNow() }()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init","payload":"x"}`)); err != nil {
		t.Fatal(err)
	}
	_, _, err = conn.Read(ctx)
	if code := websocket.CloseStatus(err); code != server.CloseBadRequest {
		t.Fatalf("closed with %v, want 4400", err)
	}
}

// A subscribe under an id the socket still runs an operation under closes
// the socket with 4409; an id whose operation ended (refused with an error,
// or completed by the client) may be used again.
func TestWebSocketDuplicateID(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
	c.ack()
	c.subscribe("a", eventsSubscription, map[string]any{"after": "tsk_123"})
	if f := c.failure("a", 10*time.Second); f.Extensions["code"] != "validation_failed" {
		t.Fatalf("a refused subscription: %v", f)
	}
	c.subscribe("a", `subscription { events { id } }`, nil) // the refused one ended
	waitForSubscriptions(t, e, 1)
	c.subscribe("b", `subscription { events { id } }`, nil)
	waitForSubscriptions(t, e, 2)
	c.send(wsMessage{ID: "b", Type: "complete"})
	if m := c.next(10 * time.Second); m.Type != "complete" || m.ID != "b" {
		t.Fatalf("after complete: %s %s %s", m.Type, m.ID, m.Payload)
	}
	for deadline := time.Now().Add(10 * time.Second); e.App.Live.Subscriptions() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the completed subscription still runs")
		}
	}
	c.subscribe("b", `subscription { events { id } }`, nil) // the completed one ended
	waitForSubscriptions(t, e, 2)
	c.subscribe("a", `subscription { events { id } }`, nil)
	if code, reason := c.closed(10 * time.Second); code != server.CloseDuplicateID || reason != "Subscriber for a already exists" {
		t.Fatalf("a duplicate id: closed with %d %q, want 4409", code, reason)
	}
	waitForSubscriptions0(t, e, "the closed socket's")
}

// dialRaw opens a socket without sending connection_init.
func dialRaw(t *testing.T, url string, header ...http.Header) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}}
	if len(header) > 0 {
		opts.HTTPHeader = header[0]
	}
	conn, res, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if res.Body != nil {
		_ = res.Body.Close()
	}
	c := &wsClient{t: t, conn: conn, msgs: make(chan wsMessage, 100), done: make(chan struct{})}
	go c.read()
	t.Cleanup(func() { _ = conn.CloseNow() })
	return c
}

// Through the real server: a client that stops reading falls behind (here
// past a limit of 50 events, so that a few hundred fill the socket's
// buffers); its subscription ends with an error message subscriber_too_slow
// after the events already sent, the socket stays open, and a subscription
// with after set to the last event received gets the rest, exactly.
func TestSlowSocketSubscriberIsCutOffAndResumes(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		// The client reads nothing while 600 tasks are created, however long
		// a loaded machine takes: the write timeout, which would drop it
		// first, is set past that (its own default is held elsewhere).
		e := newLiveEnv(t, db, apitest.Settings{Live: app.LiveOptions{MaxBehind: 50}, GraphQL: server.Options{WriteTimeout: 5 * time.Minute}},
			func(o *httpedge.Options) { o.RateLimit = 1_000_000 })
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Slow", "key": "SLO"})
		prj.ExpectStatus(t, http.StatusCreated)
		e.Get("/v1/events", e.Guest.Key).ExpectStatus(t, http.StatusOK)
		// Every event carries 100 titles of 200 characters: ~20 KB.
		heavy := `subscription($after: ID) { events(after: $after) { id task { project { tasks(first: 100) { nodes { title } } } } } }`
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		c.subscribe("s", heavy, nil)
		waitForSubscriptions(t, e, 1)
		c.pause()
		const n = 600
		createTitled(t, e, prj.Str("id"), n, strings.Repeat("x", 190))
		c.resume()
		var got []string
		for {
			m := c.next(30 * time.Second)
			if m.Type == "error" {
				if !strings.Contains(string(m.Payload), "subscriber_too_slow") || m.ID != "s" {
					t.Fatalf("error %s %s", m.ID, m.Payload)
				}
				break
			}
			if m.Type != "next" {
				t.Fatalf("got %s %s", m.Type, m.Payload)
			}
			var p struct {
				Data struct {
					Events struct{ ID string } `json:"events"`
				} `json:"data"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Data.Events.ID)
		}
		t.Logf("cut off after %d of %d events", len(got), n)
		if len(got) >= n {
			t.Fatalf("all %d events arrived before the cut", len(got))
		}
		if len(got) == 0 {
			t.Fatal("no event arrived before the cut")
		}
		c.subscribe("r", `subscription($after: ID) { events(after: $after) { id } }`, map[string]any{"after": got[len(got)-1]})
		for len(got) < n {
			got = append(got, c.event("r", 30*time.Second)["id"].(string))
		}
		log := allEventIDs(t, e, e.Guest.Key)
		if strings.Join(log[1:], ",") != strings.Join(got, ",") {
			t.Fatalf("the subscription and its resumption differ from the log (%d against %d events)", len(got), len(log)-1)
		}
	})
}

// createTitled is createTasks with long titles.
func createTitled(t *testing.T, e *liveEnv, projectID string, n int, title string) {
	t.Helper()
	for i := range n {
		res := e.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/projects/" + projectID + "/tasks", Key: e.Member.Key,
			Body: map[string]any{"title": fmt.Sprint(title, i)}})
		if res.Status != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, res.Status, res.Body)
		}
	}
}

// A subscribe while the workspace uses its whole share of the database is
// refused with an error message (too_many_requests), not a closed socket;
// another workspace subscribes meanwhile, and the same subscribe sent again
// once the share is free delivers events.
func TestSubscribeRefusedForTheDatabaseShareCanBeSentAgain(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Share", "key": "SHR"})
		prj.ExpectStatus(t, http.StatusCreated)
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		o := dialWS(t, e.URL, nil, bearer(e.Other.Key))
		o.ack()

		// Acme's one slot is held by a request whose statement stalls.
		var on atomic.Bool
		var stalled atomic.Int64
		release := make(chan struct{})
		apitest.StallWorkspace(t, db, e.Workspace.ID, &on, release, &stalled)
		db.SetBudget(store.Budget{StatementTimeout: time.Minute, WorkspaceShare: 1, WorkspaceQueue: 0})
		on.Store(true)
		held := make(chan int, 1)
		go func() { held <- e.Get("/v1/projects", e.Member.Key).Status }()
		for i := 0; stalled.Load() == 0; i++ {
			if i == 2000 {
				t.Fatal("the holding request never reached its statement")
			}
			time.Sleep(5 * time.Millisecond)
		}

		c.subscribe("1", eventsSubscription, nil)
		if f := c.failure("1", 10*time.Second); f.Extensions["code"] != "too_many_requests" {
			t.Fatalf("subscribe past the share: %v", f)
		}
		o.subscribe("o", eventsSubscription, nil)
		waitForSubscriptions(t, e, 1) // Globex's

		on.Store(false)
		close(release)
		if code := <-held; code != http.StatusOK {
			t.Fatalf("the holding request: %d", code)
		}
		// The share is free again, with a queue as in production (with
		// none, the socket's own periodic key check could take the one
		// slot at the moment of the subscribe).
		db.SetBudget(store.DefaultBudget(db.MaxOpenConns(), runtime.GOMAXPROCS(0)))
		c.subscribe("2", eventsSubscription, map[string]any{"types": []string{"TASK_CREATED"}})
		waitForSubscriptions(t, e, 2)
		e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "After"}).
			ExpectStatus(t, http.StatusCreated)
		if ev := c.event("2", 10*time.Second); ev["type"] != "TASK_CREATED" {
			t.Fatalf("event after the retried subscribe: %v", ev)
		}
		o.quiet(200 * time.Millisecond)
	})
}

// Events commit with nobody subscribed and nobody reading the log: the
// feed positions them all the same (within its poll), so a subscription
// made later without after starts at the log's end and is sent only what
// commits after it, not the events of the quiet spell (nor a bulk
// creation's, which would otherwise cut it off as too slow).
func TestASubscriptionWithoutAfterStartsAtTheLogsEnd(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{})
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Quiet", "key": "QUI"})
		prj.ExpectStatus(t, http.StatusCreated)
		batch := make([]map[string]any, 500)
		for i := range batch {
			batch[i] = map[string]any{"title": fmt.Sprint("Imported ", i)}
		}
		for range 3 {
			e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks/batch", e.Member.Key, map[string]any{"tasks": batch}).
				ExpectStatus(t, http.StatusCreated)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			var unpositioned int64
			if err := db.Gorm().Table("events").Where("seq IS NULL").Count(&unpositioned).Error; err != nil {
				t.Fatal(err)
			}
			if unpositioned == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d committed events still have no log position 10 s later, with nobody reading the log", unpositioned)
			}
			time.Sleep(20 * time.Millisecond)
		}
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		c.subscribe("new", eventsSubscription, nil)
		waitForSubscriptions(t, e, 1)
		tsk := e.Send(http.MethodPost, "/v1/projects/"+prj.Str("id")+"/tasks", e.Member.Key, map[string]any{"title": "After"})
		tsk.ExpectStatus(t, http.StatusCreated)
		if got := c.event("new", 10*time.Second); got["task"].(map[string]any)["id"] != tsk.Str("id") {
			t.Fatalf("the first event sent is %v %v, want the task created after the subscribe", got["type"], got["task"])
		}
	})
}
