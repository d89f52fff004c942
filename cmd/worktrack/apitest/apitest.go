// Package apitest is the test harness of both APIs: it builds the server
// `worktrack serve` builds (REST under /v1 and GraphQL at /graphql on one
// HTTP edge, through package wiring) over a real database, with fixtures
// for end-to-end tests: two workspaces, a user of each role with an API key,
// and a clock the test controls.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/httpedge"
	"github.com/worktrack/worktrack/adapters/ratelimit"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/cmd/worktrack/wiring"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/graph/server"
)

// Clock is a controllable clock, safe for concurrent use. It stands still
// until Run makes it follow the wall clock too.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	since time.Time // wall time of Run; zero while the clock stands still
}

// NewClock starts at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.since.IsZero() {
		return c.now.Add(time.Since(c.since))
	}
	return c.now
}

// Run makes the clock tick with the wall clock from now on (Advance still
// jumps it), for tests of things that wait, such as webhook retries.
func (c *Clock) Run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.since.IsZero() {
		c.since = time.Now()
	}
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Member is a user with its API key secret.
type Member struct {
	User domain.User
	Key  string
}

// Env is a server over a database with fixtures.
type Env struct {
	T      testing.TB
	DB     *store.DB
	App    *app.App
	Engine *gin.Engine
	// Edge is the HTTP edge both APIs are mounted on.
	Edge *httpedge.Edge
	// Sockets are GraphQL's open WebSockets.
	Sockets   *server.Sockets
	Clock     *Clock
	Workspace domain.Workspace
	Admin     Member
	Member    Member
	Guest     Member
	// Other is an admin of a second workspace, for tenancy tests.
	Other          Member
	OtherWorkspace domain.Workspace
	Logs           *LogBuffer
}

// Option adjusts the HTTP edge before it is built.
type Option func(*httpedge.Options)

// Settings adjust the core services of an environment.
type Settings struct {
	// AllowPrivateWebhooks is WORKTRACK_WEBHOOK_ALLOW_PRIVATE: webhook URLs
	// on loopback (httptest receivers) are accepted.
	AllowPrivateWebhooks bool
	// Live tunes the live feed of subscriptions (its Run is the test's to
	// start).
	Live app.LiveOptions
	// GraphQL configures the GraphQL transport.
	GraphQL server.Options
}

// New builds the environment on db.
func New(t testing.TB, db *store.DB, opts ...Option) *Env {
	t.Helper()
	return NewWith(t, db, Settings{}, opts...)
}

// NewWith is New with settings for the core services.
func NewWith(t testing.TB, db *store.DB, set Settings, opts ...Option) *Env {
	t.Helper()
	clock := NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	if set.GraphQL.KeyCheckInterval == 0 {
		// Sockets see a revoked key, an expiry or a role change within this,
		// not the production 2 s: the tests that wait for it wait less.
		set.GraphQL.KeyCheckInterval = 50 * time.Millisecond
	}
	a := wiring.App(db, wiring.Core{Clock: clock, AllowPrivateWebhooks: set.AllowPrivateWebhooks, Live: set.Live})
	logs := &LogBuffer{}
	o := httpedge.Options{
		Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
		Clock:   clock,
		Limiter: ratelimit.NewMemory(),
		Ready:   db.Ping,
	}
	for _, opt := range opts {
		opt(&o)
	}
	edge, sockets := wiring.HTTP(a, db, o, set.GraphQL)
	e := &Env{T: t, DB: db, App: a, Engine: edge.Engine(), Edge: edge, Sockets: sockets, Clock: clock, Logs: logs}
	ctx := context.Background()
	e.Workspace = e.workspace(ctx, "Acme")
	e.Admin = e.NewMember(e.Workspace.ID, "ada@acme.test", domain.RoleAdmin)
	e.Member = e.NewMember(e.Workspace.ID, "mel@acme.test", domain.RoleMember)
	e.Guest = e.NewMember(e.Workspace.ID, "gus@acme.test", domain.RoleGuest)
	e.OtherWorkspace = e.workspace(ctx, "Globex")
	e.Other = e.NewMember(e.OtherWorkspace.ID, "otto@globex.test", domain.RoleAdmin)
	return e
}

func (e *Env) workspace(ctx context.Context, name string) domain.Workspace {
	e.T.Helper()
	w, err := e.App.Admin.CreateWorkspace(ctx, name)
	if err != nil {
		e.T.Fatalf("create workspace: %v", err)
	}
	return w
}

// NewMember adds a user with a key to a workspace. The clock advances a
// microsecond so that creation times are distinct and ordered.
func (e *Env) NewMember(workspaceID, email string, role domain.Role) Member {
	e.T.Helper()
	ctx := context.Background()
	e.Clock.Advance(time.Microsecond)
	u, err := e.App.Admin.CreateUser(ctx, workspaceID, email, strings.Split(email, "@")[0], role)
	if err != nil {
		e.T.Fatalf("create user: %v", err)
	}
	_, secret, err := e.App.Admin.CreateKey(ctx, u.ID, domain.APIKeyFields{Name: domain.Set("test")})
	if err != nil {
		e.T.Fatalf("create key: %v", err)
	}
	return Member{User: u, Key: secret}
}

// KeyFor makes another key of user u with the scopes and projects given
// (nil: every scope, every project) and returns its secret.
func (e *Env) KeyFor(u domain.User, scopes, projects []string) string {
	e.T.Helper()
	f := domain.APIKeyFields{Name: domain.Set("scoped")}
	if scopes != nil {
		f.Scopes = domain.Set(scopes)
	}
	if projects != nil {
		f.ProjectIDs = domain.Set(projects)
	}
	_, secret, err := e.App.Admin.CreateKey(context.Background(), u.ID, f)
	if err != nil {
		e.T.Fatalf("create key: %v", err)
	}
	return secret
}

// Response is a recorded response with its body decoded when it is JSON.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	JSON   map[string]any
}

// Request describes one call.
type Request struct {
	Method      string
	Path        string
	Key         string // bearer secret; empty sends no Authorization header
	Body        any    // string and []byte are sent as they are; else JSON-encoded
	ContentType string // default application/json when a body is sent
	Header      map[string]string
	RemoteAddr  string
}

// Do sends r through the real router.
func (e *Env) Do(r Request) *Response {
	e.T.Helper()
	var body io.Reader
	if r.Body != nil {
		switch b := r.Body.(type) {
		case string:
			body = strings.NewReader(b)
		case []byte:
			body = bytes.NewReader(b)
		default:
			raw, err := json.Marshal(b)
			if err != nil {
				e.T.Fatalf("encode body: %v", err)
			}
			body = bytes.NewReader(raw)
		}
	}
	req := httptest.NewRequest(r.Method, r.Path, body)
	if r.Body != nil {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.Key != "" {
		req.Header.Set("Authorization", "Bearer "+r.Key)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	if r.RemoteAddr != "" {
		req.RemoteAddr = r.RemoteAddr
	}
	rec := httptest.NewRecorder()
	e.Engine.ServeHTTP(rec, req)
	res := &Response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	CheckOpenAPI(e.T, req, res.Status, res.Header, res.Body)
	if len(res.Body) > 0 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(res.Body, &res.JSON)
	}
	return res
}

// Get is Do for a GET.
func (e *Env) Get(path, key string) *Response {
	e.T.Helper()
	return e.Do(Request{Method: http.MethodGet, Path: path, Key: key})
}

// Send is Do for a method with a JSON body.
func (e *Env) Send(method, path, key string, body any) *Response {
	e.T.Helper()
	return e.Do(Request{Method: method, Path: path, Key: key, Body: body})
}

// Str returns a string field of the JSON body ("" when absent or not a string).
func (r *Response) Str(field string) string {
	s, _ := r.JSON[field].(string)
	return s
}

// ErrorField returns error.<field> of an error body.
func (r *Response) ErrorField(field string) string {
	m, _ := r.JSON["error"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

// ExpectError fails unless r is an error with the status, code and (when not
// empty) param given, whose request_id matches X-Request-Id.
func (r *Response) ExpectError(t testing.TB, status int, code, param string) {
	t.Helper()
	if r.Status != status || r.ErrorField("code") != code || r.ErrorField("param") != param {
		t.Fatalf("want %d %s param=%q, got %d %s", status, code, param, r.Status, r.Body)
	}
	if wantType := wire.TypeOf(domain.Code(code)); r.ErrorField("type") != wantType {
		t.Fatalf("want error.type %s, got %s", wantType, r.Body)
	}
	if id := r.ErrorField("request_id"); id == "" || id != r.Header.Get("X-Request-Id") || !strings.HasPrefix(id, "req_") {
		t.Fatalf("error.request_id %q must equal X-Request-Id %q", id, r.Header.Get("X-Request-Id"))
	}
	if r.ErrorField("message") == "" {
		t.Fatalf("error.message is empty: %s", r.Body)
	}
}

// ExpectStatus fails unless r has the status.
func (r *Response) ExpectStatus(t testing.TB, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("want status %d, got %d: %s", status, r.Status, r.Body)
	}
}

// LogBuffer is the server's log, written by its goroutines and read by the
// test at any time.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is the log so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Bytes is a copy of the log so far.
func (l *LogBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}
