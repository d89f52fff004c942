package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph"
)

// socketImplementation accepts the upgrade with gqlgen's own coder/websocket
// adapter (transport.CoderWebsocketImplementation), from any origin: the key
// travels in the messages or the Authorization header, never in a cookie a
// foreign page could ride on. It hands gqlgen the socket, which adds to
// gqlgen's connection only what this server needs and gqlgen lacks (see
// socket).
type socketImplementation struct {
	coder transport.CoderWebsocketImplementation
}

func newSocketImplementation() socketImplementation {
	return socketImplementation{coder: transport.CoderWebsocketImplementation{
		AcceptOptions: websocket.AcceptOptions{InsecureSkipVerify: true},
	}}
}

func (i socketImplementation) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	s := socketOf(r.Context())
	gw, ok := w.(gin.ResponseWriter)
	if s == nil || !ok {
		return nil, errors.New("graph/server: WebSocket upgrade outside Mount's handler")
	}
	// The server's read and write timeouts are for requests, not for a
	// socket that lives for hours: lift them before the hijack.
	rc := http.NewResponseController(w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		return nil, fmt.Errorf("graph/server: lifting the request deadlines of a WebSocket: %w", err)
	}
	conn, err := i.coder.Accept(watchedWriter{ResponseWriter: gw, s: s}, r, o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.conn = conn
	s.initTimer = time.AfterFunc(s.initTimeout, s.initTimedOut)
	s.mu.Unlock()
	return s, nil
}

// socket is one GraphQL WebSocket: gqlgen's connection over coder/websocket,
// with three things this server adds to it.
//
//   - The server's close codes. gqlgen closes a socket whose context ended
//     with 1000; a socket the server closes (closeWith: 4403 for a revoked
//     key, 1001 on shutdown, 4400 and 4409 for a message the protocol does
//     not allow) closes with the server's code and reason.
//   - A write deadline. gqlgen writes with no deadline, so a client that
//     reads nothing would hold its subscription's writer forever; past
//     its writeTimeout (Options.WriteTimeout) the connection is dropped.
//   - The end of the connection (gone), which shutdown waits for: gqlgen
//     runs the close handshake on its own goroutine and says nothing of its
//     end.
//
// It also carries the upgrade request's gin context (its request id and
// client address) and, once connection_init succeeded, the key. It closes
// itself with 4408 when no connection_init came within its initTimeout.
// Every message of the client passes its NextReader before gqlgen reads
// it: one the protocol does not allow there closes the socket (4400, 4409
// for a duplicate id), and a subscribe is charged to the key's rate limit.
type socket struct {
	gin         *gin.Context
	edge        *httpedge.Edge
	initTimeout time.Duration
	// writeTimeout bounds one message's write (Options.WriteTimeout).
	writeTimeout time.Duration
	// pendingAs is what the socket counts against until connection_init:
	// its client address, or the key its upgrade request's Authorization
	// header carried, when that key is valid (a valid key is never refused
	// for its address: many clients share one behind a proxy).
	pendingAs string
	gone      chan struct{} // closed when the TCP connection has closed
	// counted are the key, user and workspace the socket counts against
	// once initialised (set under Sockets' lock).
	counted []string
	// released: the socket gave back its places (set under Sockets' lock).
	released bool

	mu        sync.Mutex
	conn      transport.WebsocketConn // gqlgen's, once accepted
	secret    string                  // its key, once initialised
	who       domain.Actor            // its caller, once initialised
	role      domain.Role             // its key's user's role at connection_init
	cancel    context.CancelFunc      // of the socket's context, once initialised
	code      websocket.StatusCode    // set by closeWith
	reason    string
	initTimer *time.Timer
	initSent  bool                // the client sent its connection_init
	running   map[string]struct{} // graphql-transport-ws: the ids of the operations running
}

func newSocket(c *gin.Context, edge *httpedge.Edge, initTimeout, writeTimeout time.Duration) *socket {
	return &socket{gin: c, edge: edge, initTimeout: initTimeout, writeTimeout: writeTimeout, pendingAs: "address " + c.ClientIP(), gone: make(chan struct{})}
}

// initTimedOut closes a socket that sent no connection_init in time.
func (s *socket) initTimedOut() {
	s.mu.Lock()
	initialised := s.who.KeyID != ""
	s.mu.Unlock()
	if initialised {
		return
	}
	e := httpedge.PublicError(s.gin, domain.Refusal(domain.CodeTooManyRequests, domain.LimitSocketInit,
		"No connection_init within %s.", s.initTimeout))
	s.closeWith(CloseInitTimeout, "connection_init_timeout: "+e.Message)
}

// stopInitTimer stops the connection_init timer; s.mu is held.
func (s *socket) stopInitTimer() {
	if s.initTimer != nil {
		s.initTimer.Stop()
	}
}

type socketKey struct{}

func socketOf(ctx context.Context) *socket {
	s, _ := ctx.Value(socketKey{}).(*socket)
	return s
}

var (
	_ transport.WebsocketConn          = (*socket)(nil)
	_ transport.WebsocketReadLimiter   = (*socket)(nil)
	_ transport.WebsocketReadDeadliner = (*socket)(nil)
)

// authenticated is the socket's key, "" before connection_init succeeded
// and once it is closing.
func (s *socket) authenticated() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code != 0 {
		return ""
	}
	return s.secret
}

// initRole is the role the socket's operations act with: its user's at
// connection_init.
func (s *socket) initRole() domain.Role {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.role
}

// closeWith closes the socket with code and reason: through its context
// once gqlgen runs it (so that its subscriptions end first), directly
// before.
func (s *socket) closeWith(code websocket.StatusCode, reason string) {
	s.mu.Lock()
	if s.code == 0 {
		s.code, s.reason = code, reason
	}
	cancel, conn := s.cancel, s.conn
	s.mu.Unlock()
	switch {
	case cancel != nil:
		cancel()
	case conn != nil:
		_ = s.WriteClose(int(code), reason)
	}
}

// errRefused ends gqlgen's read of a socket that NextReader closed for a
// message the protocol does not allow.
var errRefused = fmt.Errorf("graph/server: a message the protocol does not allow closed the socket: %w", transport.ErrWebsocketClosed)

// NextReader reads the client's next message, and gives it to gqlgen only
// once admit let it through. A message admit refuses has closed the socket
// (closeWith): gqlgen is told the socket is closed, and ends. gqlgen must
// never see such a message: it takes some in silence (a connection_init
// whose payload is not an object ends its connection without an answer nor
// a close, and nothing reads the socket again: neither the client's close
// nor the init timeout would ever end it, and it would hold its places and
// goroutines for good), and ends others with the wrong code.
func (s *socket) NextReader() (int, io.Reader, error) {
	for {
		typ, r, err := s.conn.NextReader()
		if err != nil {
			return typ, r, err
		}
		data, err := io.ReadAll(r)
		if err != nil {
			return typ, nil, err
		}
		switch s.admit(data) {
		case admitted:
			return typ, bytes.NewReader(data), nil
		case refused:
			return typ, nil, errRefused
		}
	}
}

type admission int

const (
	admitted admission = iota // gqlgen reads it
	answered                  // answered here; gqlgen never sees it
	refused                   // the socket is closing
)

// clientMessage is a message of the client, of either subprotocol.
type clientMessage struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
}

// objectOrNone reports whether a message's payload is absent, null or a
// JSON object, as the protocol wants every payload but subscribe's.
func objectOrNone(p json.RawMessage) bool {
	p = bytes.TrimSpace(p)
	return len(p) == 0 || bytes.Equal(p, []byte("null")) || p[0] == '{'
}

// admit decides what becomes of one message of the client. Over
// graphql-transport-ws, a message the protocol does not allow at that
// point closes the socket with 4400: one that is not a JSON object with a
// type a client sends, a connection_init whose payload is present but not
// an object, a second connection_init, anything but connection_init, ping
// and pong before it, a subscribe without an id or an object payload, a
// complete without an id. A subscribe whose id an operation of the socket
// still runs under closes it with 4409. A ping before connection_init is
// answered here (gqlgen answers pings only after it). The legacy graphql-ws
// subprotocol is left to gqlgen, but for a connection_init's payload,
// which must be an object there too. Finally a subscribe (or the legacy
// start) is charged to the key's rate limit (charge).
func (s *socket) admit(data []byte) admission {
	var m clientMessage
	valid := json.Unmarshal(data, &m) == nil
	if s.Subprotocol() != "graphql-transport-ws" {
		if valid && m.Type == "connection_init" && !objectOrNone(m.Payload) {
			return s.refuse(CloseBadRequest, "The payload of connection_init must be an object.")
		}
		if valid && m.Type == "start" && !s.charge(m.ID) {
			return answered
		}
		return admitted
	}
	if !valid || m.Type == "" {
		return s.refuse(CloseBadRequest, "A message must be a JSON object with a type.")
	}
	s.mu.Lock()
	initSent := s.initSent
	_, duplicate := s.running[m.ID]
	s.mu.Unlock()
	switch m.Type {
	case "connection_init":
		switch {
		case initSent:
			return s.refuse(CloseBadRequest, "Too many initialisation requests: connection_init was sent already.")
		case !objectOrNone(m.Payload):
			return s.refuse(CloseBadRequest, "The payload of connection_init must be an object.")
		}
		s.mu.Lock()
		s.initSent = true
		s.mu.Unlock()
		return admitted
	case "ping", "pong":
		switch {
		case !objectOrNone(m.Payload):
			return s.refuse(CloseBadRequest, "The payload of "+m.Type+" must be an object.")
		case initSent:
			return admitted
		case m.Type == "ping":
			_ = s.WriteJSON(map[string]any{"type": "pong"})
		}
		return answered
	}
	if !initSent {
		return s.refuse(CloseBadRequest, "Send connection_init, and wait for connection_ack, first.")
	}
	switch m.Type {
	case "subscribe":
		switch p := bytes.TrimSpace(m.Payload); {
		case m.ID == "":
			return s.refuse(CloseBadRequest, "A subscribe needs an id.")
		case len(p) == 0 || p[0] != '{':
			return s.refuse(CloseBadRequest, "The payload of subscribe must be an object.")
		case duplicate:
			return s.refuse(CloseDuplicateID, "Subscriber for "+m.ID+" already exists")
		}
		if !s.charge(m.ID) {
			return answered
		}
		s.mu.Lock()
		if s.running == nil {
			s.running = map[string]struct{}{}
		}
		s.running[m.ID] = struct{}{}
		s.mu.Unlock()
		return admitted
	case "complete":
		if m.ID == "" {
			return s.refuse(CloseBadRequest, "A complete needs an id.")
		}
		s.ended(m.ID)
		return admitted
	}
	return s.refuse(CloseBadRequest, "A client sends no message of type "+m.Type+".")
}

// refuse closes the socket with code and reason.
func (s *socket) refuse(code websocket.StatusCode, reason string) admission {
	s.closeWith(code, reason)
	return refused
}

// ended forgets the operation id: the client or the server completed it,
// and it may be used again.
func (s *socket) ended(id string) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// charge takes one request of the key's rate limit for the subscribe
// message id, and reports whether the message may go on to gqlgen: past the
// limit, it is answered with an error message here. Before connection_init
// succeeded (the legacy protocol, which gqlgen refuses then), it goes on
// uncharged.
func (s *socket) charge(id string) bool {
	s.mu.Lock()
	who := s.who
	s.mu.Unlock()
	if who.KeyID == "" {
		return true
	}
	err := s.edge.TakeRequest(context.Background(), who)
	if err == nil {
		return true
	}
	e := httpedge.PublicError(s.gin, err)
	item := map[string]any{"message": e.Message, "extensions": graph.Extensions(e, httpedge.RequestID(s.gin))}
	var payload any = []any{item}
	if s.Subprotocol() != "graphql-transport-ws" {
		payload = item // the legacy protocol's error payload is one error
	}
	_ = s.WriteJSON(map[string]any{"id": id, "type": "error", "payload": payload})
	return false
}

func (s *socket) Subprotocol() string { return s.conn.Subprotocol() }

func (s *socket) Close() error { return s.conn.Close() }

// WriteJSON writes one message, dropping the connection when the write has
// not ended within its writeTimeout. A complete or an error ends the
// operation of its id (admit then lets a subscribe use it again).
func (s *socket) WriteJSON(v any) error {
	s.mu.Lock()
	tracking := len(s.running) > 0
	s.mu.Unlock()
	if tracking {
		if typ, id := sentMessage(v); typ == "complete" || typ == "error" {
			s.ended(id)
		}
	}
	t := time.AfterFunc(s.writeTimeout, func() { _ = s.conn.Close() })
	defer t.Stop()
	return s.conn.WriteJSON(v)
}

// sentMessage is the type and id of a message the server writes. gqlgen's
// messages are structs with the fields Type and ID, read by reflection
// (encoding every event twice would cost more); any other value is read
// from its JSON.
func sentMessage(v any) (typ, id string) {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if rv.Kind() == reflect.Struct {
		t, i := rv.FieldByName("Type"), rv.FieldByName("ID")
		if t.Kind() == reflect.String && i.Kind() == reflect.String {
			return t.String(), i.String()
		}
	}
	var m struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	if raw, err := json.Marshal(v); err == nil {
		_ = json.Unmarshal(raw, &m)
	}
	return m.Type, m.ID
}

// WriteClose starts the close handshake, with the server's own code when it
// closed the socket (closeWith), else with gqlgen's.
func (s *socket) WriteClose(code int, reason string) error {
	s.mu.Lock()
	if s.code != 0 {
		code, reason = int(s.code), s.reason
	}
	s.mu.Unlock()
	return s.conn.WriteClose(code, closeReason(reason))
}

func (s *socket) SetReadLimit(limit int64) {
	if l, ok := s.conn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

func (s *socket) SetReadDeadline(t time.Time) error {
	if d, ok := s.conn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// wait blocks, once the socket was accepted, until its TCP connection has
// closed: the close handshake has ended.
func (s *socket) wait() {
	s.mu.Lock()
	accepted := s.conn != nil
	s.mu.Unlock()
	if accepted {
		<-s.gone
	}
}

// closeReason fits reason in a close frame (123 bytes), on a rune boundary.
func closeReason(reason string) string {
	if len(reason) <= 123 {
		return reason
	}
	cut := 120
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut] + "…"
}

// watchedWriter is the upgrade's response writer, whose hijacked connection
// tells its socket when it closes.
type watchedWriter struct {
	gin.ResponseWriter
	s *socket
}

func (w watchedWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := w.ResponseWriter.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &watchedConn{Conn: conn, closed: sync.OnceFunc(func() { close(w.s.gone) })}, rw, nil
}

type watchedConn struct {
	net.Conn
	closed func()
}

func (c *watchedConn) Close() error {
	defer c.closed()
	return c.Conn.Close()
}
