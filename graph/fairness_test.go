package graph_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/graph/server"
)

// Every subscribe message is charged to the key's rate limit before it is
// parsed, valid or not: documents that do not parse cost what valid ones
// do.
func TestSubscribeIsChargedBeforeItIsParsed(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{}, func(o *httpedge.Options) { o.RateLimit = 4 })
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		for _, id := range []string{"bad1", "bad2"} {
			c.subscribe(id, `subscription { events { `, nil)
			if f := c.failure(id, 10*time.Second); f.Extensions["code"] != "validation_failed" {
				t.Fatalf("%s: %v", id, f)
			}
			if m := c.next(10 * time.Second); m.Type != "complete" || m.ID != id { // gqlgen ends it
				t.Fatalf("after %s's error: %s %s", id, m.Type, m.ID)
			}
		}
		c.subscribe("ok1", `subscription { events { id } }`, nil)
		c.subscribe("ok2", `subscription { events { id } }`, nil)
		waitForSubscriptions(t, e, 2)
		c.subscribe("over", `subscription { events { id } }`, nil)
		if f := c.failure("over", 10*time.Second); f.Extensions["code"] != "too_many_requests" {
			t.Fatalf("the fifth subscribe of a limit of 4: %v", f)
		}
		c.subscribe("bad3", `subscription { events { `, nil)
		if f := c.failure("bad3", 10*time.Second); f.Extensions["code"] != "too_many_requests" {
			t.Fatalf("an unparsable subscribe past the limit: %v", f)
		}
		e.Get("/v1/users/me", e.Guest.Key).ExpectError(t, http.StatusTooManyRequests, "too_many_requests", "")
	})
}

// With N requests left, subscribes sent back to back are answered one for
// one: N start, each of the others gets its own too_many_requests, and no
// subscribe goes unanswered.
func TestBackToBackSubscribesAreAnsweredOneForOne(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := newLiveEnv(t, db, apitest.Settings{}, func(o *httpedge.Options) { o.RateLimit = 5 })
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		e.Get("/v1/users/me", e.Guest.Key).ExpectStatus(t, http.StatusOK) // 4 left
		for i := range 6 {
			c.subscribe(fmt.Sprint(i), `subscription { events { id } }`, nil)
		}
		waitForSubscriptions(t, e, 4)
		refused := map[string]bool{}
		for range 2 {
			m := c.next(10 * time.Second)
			if m.Type != "error" {
				t.Fatalf("got %s (id %s) %s, want two refusals", m.Type, m.ID, m.Payload)
			}
			refused[m.ID] = true
		}
		if !refused["4"] || !refused["5"] {
			t.Fatalf("refused %v, want the 5th and 6th", refused)
		}
		c.quiet(200 * time.Millisecond)
		if n := e.App.Live.Subscriptions(); n != 4 {
			t.Fatalf("%d subscriptions, want 4", n)
		}
	})
}

// A key holds at most 20 open sockets: the next connection_init closes
// that socket with 4429, while another key connects; closing one makes
// room.
func TestSocketsPerKeyAreCapped(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	var open []*wsClient
	for range server.MaxSocketsPerKey {
		c := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
		c.ack()
		open = append(open, c)
	}
	over := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
	if code, reason := over.closed(10 * time.Second); code != server.CloseTooManyRequests {
		t.Fatalf("the 21st socket of a key closed with %d %q, want 4429", code, reason)
	}
	other := dialWS(t, e.URL, nil, bearer(e.Member.Key))
	other.ack()
	_ = open[0].conn.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for e.Sockets.Len() != server.MaxSocketsPerKey { // 19 of the key's and the other key's
		if time.Now().After(deadline) {
			t.Fatalf("%d sockets open after one closed", e.Sockets.Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
	again := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
	again.ack()
}

// A user's keys share the user's sockets: with five keys of one user, the
// user's 21st socket closes with 4429 whichever key it carries, while
// another user of the workspace connects.
func TestSocketsPerUserAreCapped(t *testing.T) {
	t.Parallel()
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	keys := make([]string, 5)
	for i := range keys {
		keys[i] = e.KeyFor(e.Guest.User, nil, nil)
	}
	for i := range server.MaxSocketsPerUser {
		c := dialWS(t, e.URL, nil, bearer(keys[i%len(keys)]))
		c.ack()
	}
	over := dialWS(t, e.URL, nil, bearer(e.KeyFor(e.Guest.User, nil, nil)))
	code, reason := over.closed(10 * time.Second)
	if code != server.CloseTooManyRequests || !strings.Contains(reason, "user") {
		t.Fatalf("the user's 21st socket closed with %d %q, want 4429 naming the user", code, reason)
	}
	other := dialWS(t, e.URL, nil, bearer(e.Member.Key))
	other.ack()
}

// A socket that sends no connection_init in time is closed with 4408.
func TestSocketWithoutInitIsClosed(t *testing.T) {
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{GraphQL: server.Options{InitTimeout: 200 * time.Millisecond}})
	c := dialRaw(t, e.URL)
	if code, reason := c.closed(10 * time.Second); code != server.CloseInitTimeout {
		t.Fatalf("closed with %d %q, want 4408", code, reason)
	}
	// One that sends it in time stays.
	d := dialWS(t, e.URL, nil, bearer(e.Guest.Key))
	d.ack()
	d.quiet(400 * time.Millisecond)
}

// expectUpgradeRefused fails t unless a WebSocket upgrade with header is
// refused with 429.
func expectUpgradeRefused(t *testing.T, url string, header http.Header, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err == nil {
		_ = conn.CloseNow()
		t.Fatalf("%s was accepted", what)
	}
	if res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("%s: want 429, got %v (%v)", what, res, err)
	}
	if res.Body != nil {
		_ = res.Body.Close()
	}
}

// One client address holds at most 20 sockets that have not sent
// connection_init: the next upgrade is refused with 429.
func TestPendingSocketsPerAddressAreCapped(t *testing.T) {
	e := newLiveEnv(t, storetest.SQLite(t), apitest.Settings{})
	for range server.MaxPendingSocketsPerAddress {
		dialRaw(t, e.URL)
	}
	expectUpgradeRefused(t, e.URL, nil, "the address's 21st socket waiting for connection_init")
	// A valid key is never refused for its address (many clients share one
	// behind a proxy): an upgrade that carries one is counted against the
	// key, and works.
	keyed := dialWS(t, e.URL, http.Header{"Authorization": {"Bearer " + e.Guest.Key}}, nil)
	keyed.ack()
	keyed.subscribe("1", `subscription { events { id } }`, nil)
	waitForSubscriptions(t, e, 1)
	// A key's own sockets waiting for connection_init are capped like an
	// address's.
	member := http.Header{"Authorization": {"Bearer " + e.Member.Key}}
	for range server.MaxPendingSocketsPerAddress {
		dialRaw(t, e.URL, member)
	}
	expectUpgradeRefused(t, e.URL, member, "the key's 21st socket waiting for connection_init")
}
