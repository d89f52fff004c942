package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"
	"github.com/vektah/gqlparser/v2/ast"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
	"github.com/worktrack/worktrack/graph"
)

// WebSocket close codes besides RFC 6455's, as graphql-ws names them.
const (
	// CloseForbidden: the key is missing, invalid, revoked or expired.
	CloseForbidden = 4403
	// CloseTooManyRequests: the client's address failed authentication too
	// often, or the key holds its most sockets, or the address its most
	// sockets waiting for connection_init (graphql-ws's "too many
	// initialisation requests").
	CloseTooManyRequests = 4429
	// CloseInitTimeout: no connection_init within Options.InitTimeout
	// (graphql-ws's "connection initialisation timeout").
	CloseInitTimeout = 4408
	// CloseBadRequest: a message that is not one graphql-transport-ws
	// allows at that point: not a JSON object, of no type a client sends, a
	// connection_init whose payload is neither absent, null nor an object,
	// a second connection_init, or a subscribe before it.
	CloseBadRequest = 4400
	// CloseDuplicateID: a subscribe whose id one of the socket's operations
	// still runs under (graphql-ws's "subscriber already exists").
	CloseDuplicateID = 4409
)

// Caps of the WebSocket transport (docs/api.md#sharing-fairly).
const (
	// MaxSocketsPerKey is the most open sockets one API key holds; the next
	// connection_init closes its socket with 4429.
	MaxSocketsPerKey = 20
	// MaxSocketsPerUser is the most open sockets one user's keys hold
	// together, MaxSocketsPerWorkspace one workspace's; the next
	// connection_init closes its socket with 4429.
	MaxSocketsPerUser      = 20
	MaxSocketsPerWorkspace = 1000
	// MaxPendingSocketsPerAddress is the most sockets one client address
	// holds before their connection_init; the next upgrade is refused 429.
	MaxPendingSocketsPerAddress = 20
)

// Timings of the WebSocket transport.
const (
	// wsPingInterval is how often the server pings; a client that has not
	// answered within two intervals is disconnected.
	wsPingInterval = 25 * time.Second
	// wsLoaderWait is how long the dataloaders of one result over a socket
	// gather loads.
	wsLoaderWait = time.Millisecond
	// wsReadLimit bounds a client's message, like a request body.
	wsReadLimit = httpedge.MaxBodyBytes
)

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
	gql         http.Handler
	edge        *httpedge.Edge
	api         *httpedge.API
	app         *app.App
	sockets     *Sockets
	initTimeout time.Duration
	// writeTimeout bounds one message's write (Options.WriteTimeout).
	writeTimeout time.Duration
	// tracer traces the subscription messages sent; nil when tracing is off.
	tracer trace.Tracer
}

func newWSHandler(edge *httpedge.Edge, api *httpedge.API, a *app.App, o Options, sockets *Sockets) *wsHandler {
	h := &wsHandler{edge: edge, api: api, app: a, sockets: sockets, initTimeout: o.InitTimeout, writeTimeout: o.WriteTimeout}
	if o.Tracing != nil {
		h.tracer = o.Tracing.Tracer(tracerName)
	}
	srv := handler.New(graph.NewSchema(a))
	limit := int64(wsReadLimit)
	// No InitTimeout: the socket closes itself with 4408 after
	// o.InitTimeout (gqlgen's own would close with 1002).
	srv.AddTransport(transport.Websocket{
		Implementation:   newSocketImplementation(),
		InitFunc:         h.init,
		PingPongInterval: wsPingInterval,
		PayloadReadLimit: &limit,
	})
	configure(srv, o)
	// Each event of a subscription is resolved on its own, one after
	// another: its loaders gather the loads of that one result, which start
	// together, so they wait a millisecond rather than LoaderWait, which
	// would cap a subscription at about 100 events a second.
	srv.Use(wsOperations{app: a, wait: min(o.LoaderWait, wsLoaderWait)})
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
	s := newSocket(c, h.edge, h.initTimeout, h.writeTimeout)
	s.tracer = h.tracer
	// A valid key in the upgrade request: until connection_init the socket
	// counts against the key, not the address. The key is checked without
	// counting a failure against the address: connection_init does that.
	if secret := httpedge.Bearer(c.GetHeader("Authorization")); secret != "" {
		if who, err := h.sockets.auth.Authenticate(c.Request.Context(), secret); err == nil {
			s.pendingAs = "key " + who.KeyID
		}
	}
	if err := h.sockets.add(s); err != nil {
		h.api.Abort(c, err)
		return
	}
	defer func() {
		s.mu.Lock()
		s.stopInitTimer()
		s.mu.Unlock()
		// gqlgen is done with the socket: it has closed it, or is closing
		// it. Its places are free at once; shutdown still waits for its
		// close handshake (at most coder/websocket's 5 s for each step).
		h.sockets.release(s)
		s.wait()
		h.sockets.remove(s)
	}()
	h.gql.ServeHTTP(c.Writer, c.Request.WithContext(context.WithValue(c.Request.Context(), socketKey{}, s)))
}

// init authenticates connection_init: the payload's "authorization" member
// (any case), else the upgrade request's Authorization header. A refused key
// closes the socket with 4403, a key, user or workspace that holds its
// most sockets already (MaxSocketsPerKey, …PerUser, …PerWorkspace) with
// 4429; then, while the socket is open, the key is resolved
// again every Options.KeyCheckInterval and the socket closed with 4403 once it no longer
// resolves (revoked, expired): Sockets.watchKeys.
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
	// What the audit log keeps of the socket's requests: its address, user
	// agent and the upgrade's request id.
	ctx = ports.WithRequestInfo(ctx, ports.RequestInfo{IP: s.gin.ClientIP(), UserAgent: s.gin.Request.UserAgent(), RequestID: httpedge.RequestID(s.gin)})
	who, err := h.edge.Authenticate(ctx, s.gin.ClientIP(), secret)
	if err == nil {
		err = h.sockets.initialised(s, who)
	}
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
	s.cancel, s.secret, s.who, s.role = cancel, secret, who, who.Role
	s.stopInitTimer()
	s.mu.Unlock()
	return graph.WithCaller(ctx, h.app, caller(s.gin, who), wsLoaderWait), nil, nil
}

// wsOperations checks every operation over a WebSocket (its subscribe
// message was charged to the key's rate limit by the socket before gqlgen
// parsed it), and gives each result (each event of a subscription) fresh
// dataloaders, so that the nested fields of an event show the current
// state, not what an earlier event loaded.
type wsOperations struct {
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
		transport.AddSubscriptionError(ctx, graph.PresentError(ctx, err))
		return func(context.Context) *graphql.Response { return nil }
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
	if c, ok := graph.CallerOf(ctx); ok {
		ctx = graph.WithCaller(ctx, x.app, c, x.wait)
	}
	return next(ctx)
}
