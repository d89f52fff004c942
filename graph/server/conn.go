package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/core/domain"
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
	// tracer makes each message sent for a subscription a span; nil when
	// tracing is off.
	tracer trace.Tracer
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
	if s.tracer != nil {
		if typ, id := sentMessage(v); typ == "next" || typ == "data" {
			span := s.messageSpan(id)
			defer span.End()
		}
	}
	t := time.AfterFunc(s.writeTimeout, func() { _ = s.conn.Close() })
	defer t.Stop()
	return s.conn.WriteJSON(v)
}

// messageSpan starts the span of a subscription message sent, in the trace
// of the socket's upgrade request: the operation id the client gave it,
// its workspace and request id, never its data.
func (s *socket) messageSpan(id string) trace.Span {
	s.mu.Lock()
	workspace := s.who.WorkspaceID
	s.mu.Unlock()
	attrs := []attribute.KeyValue{
		semconv.GraphQLOperationTypeSubscription,
		attribute.String("worktrack.subscription.id", id),
		telemetry.RequestID.String(httpedge.RequestID(s.gin)),
	}
	if workspace != "" {
		attrs = append(attrs, telemetry.WorkspaceID.String(workspace))
	}
	_, span := s.tracer.Start(s.gin.Request.Context(), "subscription message", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return span
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
