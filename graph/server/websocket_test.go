package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// socketEnv is GraphQL alone on a real listener over SQLite, with the live
// feed running and one guest's key: enough for sockets to authenticate and
// subscribe. (Package wiring builds the same app, but it imports this
// package.)
type socketEnv struct {
	app     *app.App
	url     string // ws://…/graphql
	sockets *Sockets
	key     string
	actor   domain.Actor
	changes int // projects created by goodSocket
}

func newSocketEnv(t *testing.T) *socketEnv {
	t.Helper()
	db := storetest.SQLite(t)
	a := app.New(app.Deps{
		Tx: db, Workspaces: db.Workspaces(), Users: db.Users(), Keys: db.APIKeys(), Projects: db.Projects(),
		Tasks: db.Tasks(), Webhooks: db.Webhooks(), EventLog: db.Events(), Deliveries: db.Deliveries(),
		Payloads: wire.Payloads{}, Addresses: webhook.AddressChecker{}, EventWatch: db, Answers: db.Idempotency(), Audit: db.Audit(),
	}, app.Options{})
	edge := httpedge.New(a.Auth, httpedge.Options{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Limiter: ratelimit.NewMemory(), Ready: db.Ping,
	})
	sockets := Mount(edge, a, Options{KeyCheckInterval: 50 * time.Millisecond})
	ctx := context.Background()
	w, err := a.Admin.CreateWorkspace(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	u, err := a.Admin.CreateUser(ctx, w.ID, "ada@acme.test", "ada", domain.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, key, err := a.Admin.CreateKey(ctx, u.ID, domain.APIKeyFields{Name: domain.Set("test")})
	if err != nil {
		t.Fatal(err)
	}
	actor, err := a.Auth.Authenticate(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(edge.Engine())
	liveCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Live.Run(liveCtx)
	}()
	t.Cleanup(func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = sockets.Close(closeCtx)
		srv.Close()
		stop()
		<-done
	})
	return &socketEnv{app: a, url: "ws" + strings.TrimPrefix(srv.URL, "http") + Path, sockets: sockets, key: key, actor: actor}
}

// counts are how many sockets are open, waiting for their connection_init
// (over every address and key) and held (over every key, user and
// workspace).
func (ss *Sockets) counts() (open, pending, held int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, n := range ss.pending {
		pending += n
	}
	for _, n := range ss.held {
		held += n
	}
	return len(ss.open), pending, held
}

// dial opens a graphql-transport-ws socket, sending nothing.
func (e *socketEnv) dial(ctx context.Context) (*websocket.Conn, error) {
	conn, res, err := websocket.Dial(ctx, e.url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if res != nil && res.Body != nil {
		_ = res.Body.Close()
	}
	return conn, err
}

func write(ctx context.Context, conn *websocket.Conn, msg string) error {
	return conn.Write(ctx, websocket.MessageText, []byte(msg))
}

// closeStatus reads until the socket ends and returns the close code the
// server sent (-1 when it ended without one).
func closeStatus(ctx context.Context, conn *websocket.Conn) (websocket.StatusCode, error) {
	for {
		if _, _, err := conn.Read(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, nil
			}
			return -1, err
		}
	}
}

// read is the socket's next message.
func read(ctx context.Context, conn *websocket.Conn) (map[string]any, error) {
	_, data, err := conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

// settled waits, up to 10 s, until no socket is open, waiting or held and
// the process runs no more goroutines than before, failing the test if not.
func (e *socketEnv) settled(t *testing.T, goroutines int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		open, pending, held := e.sockets.counts()
		n := runtime.NumGoroutine()
		if open == 0 && pending == 0 && held == 0 && n <= goroutines {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the sockets closed: %d open, %d waiting for connection_init, %d held; %d goroutines, %d before",
				open, pending, held, n, goroutines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// goodSocket authenticates a socket, subscribes, and receives an event of
// a change, then closes it.
func (e *socketEnv) goodSocket(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := e.dial(ctx)
	if err != nil {
		t.Fatalf("a good socket: %v", err)
	}
	defer func() { _ = conn.CloseNow() }()
	if err := write(ctx, conn, `{"type":"connection_init","payload":{"authorization":"Bearer `+e.key+`"}}`); err != nil {
		t.Fatal(err)
	}
	if m, err := read(ctx, conn); err != nil || m["type"] != "connection_ack" {
		t.Fatalf("a good socket's connection_init: %v %v", m, err)
	}
	before := e.app.Live.Subscriptions()
	if err := write(ctx, conn, `{"type":"subscribe","id":"1","payload":{"query":"subscription { events { id type } }"}}`); err != nil {
		t.Fatal(err)
	}
	for e.app.Live.Subscriptions() == before {
		if ctx.Err() != nil {
			t.Fatal("a good socket's subscription did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.changes++
	if _, err := e.app.Projects.Create(ctx, e.actor, domain.ProjectFields{Name: domain.Set("P"), Key: domain.Set(fmt.Sprintf("P%d", e.changes))}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := read(ctx, conn)
		if err != nil {
			t.Fatalf("a good socket's event: %v", err)
		}
		if m["type"] == "ping" {
			continue
		}
		if m["type"] != "next" || m["id"] != "1" || !strings.Contains(fmt.Sprint(m["payload"]), "PROJECT_CREATED") {
			t.Fatalf("a good socket's event: %v", m)
		}
		break
	}
	if err := conn.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Fatalf("closing a good socket: %v", err)
	}
}

// badSockets is more sockets than one address may hold waiting for their
// connection_init.
const badSockets = MaxPendingSocketsPerAddress + 5

// badInits are connection_init messages whose payload is present but not an
// object.
var badInits = []string{
	`{"type":"connection_init","payload":"x"}`,
	`{"type":"connection_init","payload":[1,2]}`,
	`{"type":"connection_init","payload":5}`,
	`{"type":"connection_init","payload":true}`,
}

// Sockets whose connection_init payload is not an object are each closed
// with 4400 at once, however many one address opens: they give back their
// places, so that the address's next socket authenticates and subscribes,
// and their goroutines end.
func TestSocketsWithABadInitAreClosedAndFreed(t *testing.T) {
	e := newSocketEnv(t)
	e.goodSocket(t) // the server's own goroutines (the key watcher, …) are running
	e.settled(t, 1<<30)
	goroutines := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conns := make([]*websocket.Conn, badSockets)
	for i := range conns {
		conn, err := e.dial(ctx)
		if err != nil {
			t.Errorf("bad socket %d: %v", i+1, err)
			continue
		}
		conns[i] = conn
		if err := write(ctx, conn, badInits[i%len(badInits)]); err != nil {
			t.Errorf("bad socket %d: %v", i+1, err)
		}
	}
	// One deadline for all: a socket left open costs the wait once.
	closeCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for i, conn := range conns {
		if conn == nil {
			continue
		}
		code, err := closeStatus(closeCtx, conn)
		if code != CloseBadRequest {
			t.Errorf("bad socket %d (%s): closed with %d (%v), want %d", i+1, badInits[i%len(badInits)], code, err, CloseBadRequest)
		}
		_ = conn.CloseNow()
	}
	if t.Failed() {
		t.FailNow()
	}
	e.goodSocket(t)
	e.settled(t, goroutines)
}

// Clients that send a connection_init whose payload is not an object, or
// nothing, and drop the TCP connection without waiting for an answer, give
// back their places too, and their goroutines end.
func TestSocketsDroppedByTheClientAreFreed(t *testing.T) {
	e := newSocketEnv(t)
	e.goodSocket(t)
	e.settled(t, 1<<30)
	goroutines := runtime.NumGoroutine()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range badSockets {
		conn, err := e.dial(ctx)
		if err != nil {
			t.Fatalf("socket %d: %v", i+1, err)
		}
		if i%5 != 4 { // every fifth sends nothing
			if err := write(ctx, conn, badInits[i%len(badInits)]); err != nil {
				t.Fatalf("socket %d: %v", i+1, err)
			}
		}
		_ = conn.CloseNow()
	}
	e.goodSocket(t)
	e.settled(t, goroutines)
}
