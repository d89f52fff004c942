package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// WebSocket close codes besides RFC 6455's, as graphql-ws names them.
const (
	// CloseForbidden: the key is missing, invalid, revoked or expired.
	CloseForbidden = 4403
	// CloseTooManyRequests: the client's address failed authentication too
	// often (graphql-ws's "too many initialisation requests").
	CloseTooManyRequests = 4429
)

// Timings of the WebSocket transport.
const (
	// wsInitTimeout is how long a new socket may take to send connection_init.
	wsInitTimeout = 10 * time.Second
	// wsPingInterval is how often the server pings; a client that has not
	// answered within two intervals is disconnected.
	wsPingInterval = 25 * time.Second
	// wsWriteTimeout bounds one message's write: a client that reads
	// nothing for this long is disconnected.
	wsWriteTimeout = 10 * time.Second
	// wsKeyCheck is how often an open socket's key is resolved again, so
	// that a revoked or expired key closes it within 10 seconds (with the
	// key cache's 5 seconds).
	wsKeyCheck = 2 * time.Second
	// wsLoaderWait is how long the dataloaders of one result over a socket
	// gather loads.
	wsLoaderWait = time.Millisecond
	// wsReadLimit bounds a client's message, like a request body.
	wsReadLimit = httpedge.MaxBodyBytes
)

// Sockets are the open GraphQL WebSockets of this process. Mount returns
// them, so that the server closes them on shutdown (Close).
type Sockets struct {
	auth     *app.Auth
	mu       sync.Mutex
	open     map[*socket]struct{}
	closed   bool
	done     sync.WaitGroup // one per socket, until its close handshake ended
	watching sync.Once
	stop     chan struct{}
}

func newSockets(auth *app.Auth) *Sockets {
	return &Sockets{auth: auth, open: map[*socket]struct{}{}, stop: make(chan struct{})}
}

// watchKeys resolves the keys of the open sockets again every wsKeyCheck,
// each distinct key once, and closes with 4403 the sockets whose key no
// longer resolves (revoked, expired), until Close.
func (ss *Sockets) watchKeys() {
	t := time.NewTicker(wsKeyCheck)
	defer t.Stop()
	for {
		select {
		case <-ss.stop:
			return
		case <-t.C:
		}
		bySecret := map[string][]*socket{}
		ss.mu.Lock()
		for s := range ss.open {
			if secret := s.authenticated(); secret != "" {
				bySecret[secret] = append(bySecret[secret], s)
			}
		}
		ss.mu.Unlock()
		for secret, sockets := range bySecret {
			_, err := ss.auth.Authenticate(context.Background(), secret)
			if c := domain.ErrorCode(err); err != nil && (c == domain.CodeInvalidAPIKey || c == domain.CodeMissingAPIKey) {
				for _, s := range sockets {
					s.closeWith(CloseForbidden, "invalid_api_key: The API key was revoked or has expired.")
				}
			}
		}
	}
}

// add registers s, or refuses it once Close has begun.
func (ss *Sockets) add(s *socket) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	ss.watching.Do(func() { go ss.watchKeys() })
	ss.open[s] = struct{}{}
	ss.done.Add(1)
	return true
}

func (ss *Sockets) remove(s *socket) {
	ss.mu.Lock()
	delete(ss.open, s)
	ss.mu.Unlock()
}

// Len is how many sockets are open.
func (ss *Sockets) Len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.open)
}

// Close refuses new sockets and closes the open ones with 1001 (going
// away), then waits, until ctx ends, for their close handshakes.
func (ss *Sockets) Close(ctx context.Context) error {
	ss.mu.Lock()
	if !ss.closed {
		close(ss.stop)
	}
	ss.closed = true
	open := make([]*socket, 0, len(ss.open))
	for s := range ss.open {
		open = append(open, s)
	}
	ss.mu.Unlock()
	for _, s := range open {
		s.closeWith(websocket.StatusGoingAway, "The server is shutting down. Reconnect, and resume with after.")
	}
	done := make(chan struct{})
	go func() {
		ss.done.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// socket is one GraphQL WebSocket: the upgrade request's gin context (its
// request id and client address), the connection, and how it must close
// when the server closes it rather than gqlgen (gqlgen closes a socket
// whose context ended with 1000).
type socket struct {
	gin *gin.Context

	mu        sync.Mutex
	conn      *websocket.Conn
	secret    string             // its key, once initialised
	cancel    context.CancelFunc // of the socket's context, once initialised
	code      websocket.StatusCode
	reason    string
	handshake chan struct{} // closed when the close handshake ended
	deadline  *time.Timer
}

type socketKey struct{}

func socketOf(ctx context.Context) *socket {
	s, _ := ctx.Value(socketKey{}).(*socket)
	return s
}

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

// wsImplementation accepts the upgrade with coder/websocket (any origin:
// the key travels in the messages or the Authorization header, never in a
// cookie a foreign page could ride on) and hands gqlgen the socket as its
// connection.
type wsImplementation struct{}

func (wsImplementation) Accept(w http.ResponseWriter, r *http.Request, o transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	s := socketOf(r.Context())
	if s == nil {
		return nil, errors.New("graph: WebSocket upgrade outside Mount's handler")
	}
	for k, vs := range o.ResponseHeader {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	// The server's read and write timeouts are for requests, not for a
	// socket that lives for hours: lift them before the hijack.
	rc := http.NewResponseController(w)
	if err := errors.Join(rc.SetReadDeadline(time.Time{}), rc.SetWriteDeadline(time.Time{})); err != nil {
		return nil, fmt.Errorf("graph: lifting the request deadlines of a WebSocket: %w", err)
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: o.Subprotocols, InsecureSkipVerify: true})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	return s, nil
}

var (
	_ transport.WebsocketConn          = (*socket)(nil)
	_ transport.WebsocketReadLimiter   = (*socket)(nil)
	_ transport.WebsocketReadDeadliner = (*socket)(nil)
)

func (s *socket) NextReader() (int, io.Reader, error) {
	typ, data, err := s.conn.Read(context.Background())
	if err != nil {
		switch websocket.CloseStatus(err) {
		case websocket.StatusNormalClosure, websocket.StatusNoStatusRcvd, websocket.StatusGoingAway:
			return int(typ), nil, transport.ErrWebsocketClosed
		}
		return int(typ), nil, err
	}
	return int(typ), bytes.NewReader(data), nil
}

// WriteJSON writes one message, giving up (and closing the connection)
// after wsWriteTimeout.
func (s *socket) WriteJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wsWriteTimeout)
	defer cancel()
	return s.conn.Write(ctx, websocket.MessageText, data)
}

// WriteClose starts the close handshake, with the server's own code when
// it closed the socket (closeWith), else with gqlgen's. The handshake waits
// for the client's close frame, up to 5 seconds, so it runs on its own.
func (s *socket) WriteClose(code int, reason string) error {
	s.mu.Lock()
	if s.handshake != nil {
		s.mu.Unlock()
		return nil
	}
	s.stopDeadline()
	if s.code != 0 {
		code, reason = int(s.code), s.reason
	}
	done := make(chan struct{})
	s.handshake = done
	conn := s.conn
	s.mu.Unlock()
	go func() {
		defer close(done)
		_ = conn.Close(websocket.StatusCode(code), closeReason(reason))
	}()
	return nil
}

// Close drops the connection unless a close handshake owns it.
func (s *socket) Close() error {
	s.mu.Lock()
	s.stopDeadline()
	busy := s.handshake != nil
	s.mu.Unlock()
	if busy {
		return nil
	}
	return s.conn.CloseNow()
}

func (s *socket) Subprotocol() string { return s.conn.Subprotocol() }

func (s *socket) SetReadLimit(limit int64) { s.conn.SetReadLimit(limit) }

// SetReadDeadline drops the connection at t (gqlgen's missing-pong check).
func (s *socket) SetReadDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopDeadline()
	if t.IsZero() {
		return nil
	}
	conn := s.conn
	s.deadline = time.AfterFunc(time.Until(t), func() { _ = conn.CloseNow() })
	return nil
}

func (s *socket) stopDeadline() {
	if s.deadline != nil {
		s.deadline.Stop()
		s.deadline = nil
	}
}

// wait blocks until the close handshake, if one began, has ended.
func (s *socket) wait() {
	s.mu.Lock()
	h := s.handshake
	s.mu.Unlock()
	if h != nil {
		<-h
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

// isWebSocketUpgrade reports whether r asks to switch to WebSocket.
func isWebSocketUpgrade(r *http.Request) bool {
	return headerHas(r.Header, "Connection", "upgrade") && headerHas(r.Header, "Upgrade", "websocket")
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// wsHandler serves GraphQL over WebSocket (graphql-transport-ws; gqlgen
// also speaks the legacy graphql-ws subprotocol).
type wsHandler struct {
	gql     http.Handler
	edge    *httpedge.Edge
	api     *httpedge.API
	sockets *Sockets
}

func newWSHandler(edge *httpedge.Edge, api *httpedge.API, a *app.App, o Options, sockets *Sockets) *wsHandler {
	h := &wsHandler{edge: edge, api: api, sockets: sockets}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: &Resolver{App: a}, Complexity: complexity()}))
	limit := int64(wsReadLimit)
	srv.AddTransport(transport.Websocket{
		Implementation:   wsImplementation{},
		InitFunc:         h.init,
		InitTimeout:      wsInitTimeout,
		PingPongInterval: wsPingInterval,
		PayloadReadLimit: &limit,
	})
	configure(srv, o)
	// Each event of a subscription is resolved on its own, one after
	// another: its loaders gather the loads of that one result, which start
	// together, so they wait a millisecond rather than LoaderWait, which
	// would cap a subscription at about 100 events a second.
	srv.Use(wsOperations{edge: edge, app: a, wait: min(o.LoaderWait, wsLoaderWait)})
	h.gql = srv
	return h
}

// upgrade serves a WebSocket upgrade of GET /graphql; other requests go on
// down the route's chain.
func (h *wsHandler) upgrade(c *gin.Context) {
	if !isWebSocketUpgrade(c.Request) {
		return
	}
	c.Abort()
	s := &socket{gin: c}
	if !h.sockets.add(s) {
		h.api.Abort(c, domain.Errorf(domain.CodeUnavailable, "The server is shutting down; connect again in a moment."))
		return
	}
	defer func() {
		h.sockets.remove(s)
		s.wait()
		h.sockets.done.Done()
	}()
	h.gql.ServeHTTP(c.Writer, c.Request.WithContext(context.WithValue(c.Request.Context(), socketKey{}, s)))
}

// init authenticates connection_init: the payload's "authorization" member
// (any case), else the upgrade request's Authorization header. A refused key
// closes the socket with 4403; then, while the socket is open, the key is
// resolved again every wsKeyCheck and the socket closed with 4403 once it
// no longer resolves (revoked, expired): Sockets.watchKeys.
func (h *wsHandler) init(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	s := socketOf(ctx)
	header := s.gin.GetHeader("Authorization")
	for k, v := range p {
		if strings.EqualFold(k, "authorization") {
			header, _ = v.(string)
			break
		}
	}
	secret := httpedge.Bearer(header)
	who, err := h.edge.Authenticate(ctx, s.gin.ClientIP(), secret)
	if err != nil {
		e := httpedge.PublicError(s.gin, err)
		code := CloseForbidden
		switch e.Code {
		case domain.CodeTooManyRequests:
			code = CloseTooManyRequests
		case domain.CodeUnavailable:
			code = int(websocket.StatusTryAgainLater)
		case domain.CodeInternal:
			code = int(websocket.StatusInternalError)
		}
		ctx = transport.WithWebsocketCloseCode(ctx, code)
		return transport.AppendCloseReason(ctx, closeReason(string(e.Code)+": "+e.Message)), nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancel, s.secret = cancel, secret
	s.mu.Unlock()
	return withRequest(ctx, &request{actor: who, gin: s.gin}), nil, nil
}

// wsOperations applies to every operation over a WebSocket what the HTTP
// chain applies to a request: it counts against the key's rate limit, and a
// refused one gets an error message (not a result). Each result (each event
// of a subscription) gets fresh dataloaders, so that the nested fields of
// an event show the current state, not what an earlier event loaded.
type wsOperations struct {
	edge *httpedge.Edge
	app  *app.App
	wait time.Duration
}

var (
	_ graphql.OperationInterceptor = wsOperations{}
	_ graphql.ResponseInterceptor  = wsOperations{}
)

func (wsOperations) ExtensionName() string                   { return "WebSocketOperations" }
func (wsOperations) Validate(graphql.ExecutableSchema) error { return nil }

func (x wsOperations) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	refuse := func(err error) graphql.ResponseHandler {
		transport.AddSubscriptionError(ctx, presentError(ctx, err))
		return func(context.Context) *graphql.Response { return nil }
	}
	if err := x.edge.TakeRequest(ctx, actor(ctx).KeyID); err != nil {
		return refuse(err)
	}
	// GraphQL's rule "subscriptions select a single root field", which
	// gqlgen would otherwise report as an internal failure at run time.
	if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Operation == ast.Subscription &&
		len(graphql.CollectFields(oc, oc.Operation.SelectionSet, []string{"Subscription"})) != 1 {
		return refuse(domain.Invalid("query", "A subscription selects exactly one root field."))
	}
	return next(ctx)
}

func (x wsOperations) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	if r := requestOf(ctx); r != nil {
		fresh := *r
		fresh.loaders = newLoaders(x.app, r.actor, x.wait)
		ctx = withRequest(ctx, &fresh)
	}
	return next(ctx)
}

// noSubscriptionsOverPOST refuses a subscription sent with POST: it needs
// a WebSocket.
type noSubscriptionsOverPOST struct{}

var _ graphql.OperationInterceptor = noSubscriptionsOverPOST{}

func (noSubscriptionsOverPOST) ExtensionName() string                   { return "NoSubscriptionsOverPOST" }
func (noSubscriptionsOverPOST) Validate(graphql.ExecutableSchema) error { return nil }

func (noSubscriptionsOverPOST) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc := graphql.GetOperationContext(ctx); oc.Operation != nil && oc.Operation.Operation == ast.Subscription {
		err := domain.Invalid("query", "Subscriptions are served over WebSocket: connect to ws(s)://<host>%s with the graphql-transport-ws subprotocol (the graphql-ws library).", Path)
		return graphql.OneShot(&graphql.Response{Errors: []*gqlerror.Error{presentError(ctx, err)}})
	}
	return next(ctx)
}
