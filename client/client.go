// Package client is the Go client of the Worktrack REST API.
//
//	c := client.New("https://worktrack.example.com", os.Getenv("WORKTRACK_KEY"))
//	p, err := c.Projects.Create(ctx, client.ProjectCreate{Name: "Launch", Key: "LCH"})
//	t, err := c.Tasks.Create(ctx, p.ID, client.TaskCreate{Title: "Write the announcement"})
//	for t, err := range c.Tasks.List(ctx, client.TaskListParams{ProjectIDs: []string{p.ID}}) {
//		…
//	}
//
// The request and response types (Project, Task, TaskCreate, …) are
// generated from the API's OpenAPI description; fields that may be null
// are nullable.Nullable. Lists are iterators over every page. Errors the
// API answers are *Error. Requests refused for now (429, 503) and requests
// whose connection failed are retried with backoff, and every POST carries
// an Idempotency-Key that its retries reuse, so a retried create creates
// once. VerifyWebhook checks the signature of a webhook delivery.
//
// docs/client.md in the repository has a worked example.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Version is this client's version, sent in its User-Agent.
const Version = "1.0.0"

// Client calls one Worktrack server with one API key. It is safe for
// concurrent use.
type Client struct {
	base      string
	key       string
	http      *http.Client
	retries   int
	userAgent string
	wait      func(attempt int) time.Duration // backoff before retry attempt (1, 2, …)
	// untilDeadline retries a refused request (429, 503, a dropped
	// connection) past retries while its context's deadline allows.
	untilDeadline bool

	Users    *UsersService
	Projects *ProjectsService
	Tasks    *TasksService
	Webhooks *WebhooksService
	APIKeys  *APIKeysService
	Events   *EventsService
	Audit    *AuditService
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends the requests with h (its Transport, Timeout, …)
// instead of a client of its own with a 60 s timeout.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithMaxRetries retries a request at most n times (default 3; 0 never
// retries).
func WithMaxRetries(n int) Option { return func(c *Client) { c.retries = max(n, 0) } }

// WithBackoff sets the wait before a retry whose answer named none
// (Retry-After): between half and all of base × 2^(retry−1), at most max.
// The defaults are 500 ms and 8 s.
func WithBackoff(base, maxWait time.Duration) Option {
	return func(c *Client) { c.wait = backoff(base, maxWait) }
}

// WithRetryUntilDeadline retries a request that can be retried (a 429, a
// 503, a dropped connection, a key still in use) as often as its context's
// deadline allows, instead of WithMaxRetries times: a retry is made only
// when its wait ends before the deadline. Without a deadline on the
// context, WithMaxRetries applies. Many callers sharing a small rate limit
// then all get through, each by its own deadline.
func WithRetryUntilDeadline() Option { return func(c *Client) { c.untilDeadline = true } }

// WithUserAgent puts ua before this client's own User-Agent
// ("worktrack-go/1.0.0"), naming your integration in the server's logs.
func WithUserAgent(ua string) Option {
	return func(c *Client) { c.userAgent = strings.TrimSpace(ua + " " + c.userAgent) }
}

// New returns a client of the server at baseURL (e.g.
// "https://worktrack.example.com", without /v1) that authenticates with
// apiKey.
func New(baseURL, apiKey string, opts ...Option) *Client {
	c := &Client{
		base:      strings.TrimRight(baseURL, "/"),
		key:       apiKey,
		http:      &http.Client{Timeout: 60 * time.Second},
		retries:   3,
		userAgent: "worktrack-go/" + Version,
		wait:      backoff(500*time.Millisecond, 8*time.Second),
	}
	for _, o := range opts {
		o(c)
	}
	c.Users = &UsersService{c}
	c.Projects = &ProjectsService{c}
	c.Tasks = &TasksService{c}
	c.Webhooks = &WebhooksService{c}
	c.APIKeys = &APIKeysService{c}
	c.Events = &EventsService{c}
	c.Audit = &AuditService{c}
	return c
}

// Error is an error the API answered: its status and its Error object.
// Use errors.As to read it:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "resource_not_found" { … }
type Error struct {
	StatusCode int
	// Type is the class of error (invalid_request_error,
	// authentication_error, rate_limit_error, api_error, …).
	Type string
	// Code is the machine-readable code (validation_failed,
	// resource_not_found, too_many_requests, …): docs/api.md lists them.
	Code string
	// Param names the field or parameter at fault, for validation_failed.
	Param string
	// Message is for people.
	Message string
	// RequestID is the request's id: quote it when asking for help.
	RequestID string
	// RetryAfter is the wait the server asked for (429, 503), or 0.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("worktrack: %d %s: %s", e.StatusCode, e.Code, e.Message)
	if e.Param != "" {
		s += " (param " + e.Param + ")"
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

type idempotencyKey struct{}

// WithIdempotencyKey makes the POST made with ctx carry key as its
// Idempotency-Key instead of a random one: the same create sent again, even
// from another process, creates once (the server keeps keys for 24 hours).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKey{}, key)
}

// maxBody bounds what the client reads of one answer.
const maxBody = 64 << 20

// do sends one API call, retrying it as the package says, and decodes a
// 2xx answer's body into out (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("worktrack: encoding the request: %w", err)
		}
	}
	target := c.base + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	idem := ""
	if method == http.MethodPost {
		idem, _ = ctx.Value(idempotencyKey{}).(string)
		if idem == "" {
			idem = newIdempotencyKey()
		}
	}
	lostOne := false    // an earlier attempt's outcome is unknown (its connection failed)
	var inUse time.Time // when the key was first answered in use
	for attempt := 0; ; attempt++ {
		var r io.Reader
		if payload != nil {
			r = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, target, r)
		if err != nil {
			return fmt.Errorf("worktrack: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", c.userAgent)
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		res, err := c.http.Do(req)
		var raw []byte
		if err == nil {
			raw, err = io.ReadAll(io.LimitReader(res.Body, maxBody))
			_ = res.Body.Close()
			if err != nil {
				err = fmt.Errorf("reading the answer: %w", err)
			}
		}
		if err != nil {
			wait := c.wait(attempt + 1)
			if ctx.Err() != nil || !c.mayRetry(ctx, attempt, wait) {
				return fmt.Errorf("worktrack: %s %s: %w", method, path, err)
			}
			lostOne = true
			if err := sleep(ctx, wait); err != nil {
				return err
			}
			continue
		}
		record(ctx, res)
		if res.StatusCode >= 200 && res.StatusCode < 300 {
			if out == nil || len(raw) == 0 {
				return nil
			}
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("worktrack: %s %s: decoding the answer: %w", method, path, err)
			}
			return nil
		}
		apiErr := errorOf(res, raw)
		if method == http.MethodDelete && lostOne && res.StatusCode == http.StatusNotFound {
			// The attempt whose connection failed deleted it.
			return nil
		}
		wait := jitter(apiErr.RetryAfter)
		if wait <= 0 {
			wait = c.wait(attempt + 1)
		}
		switch {
		case res.StatusCode == http.StatusConflict && apiErr.Code == CodeIdempotencyKeyInUse:
			// An earlier attempt of this very request still runs on the
			// server: it ends within the server's bound on a keyed
			// request (InUseBound), whatever the retry count says.
			if inUse.IsZero() {
				inUse = time.Now()
			}
			if time.Since(inUse)+wait > InUseBound || !c.beforeDeadline(ctx, wait) {
				return apiErr
			}
		case res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable:
			if !c.mayRetry(ctx, attempt, wait) {
				return apiErr
			}
		default:
			return apiErr
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// InUseBound is how long the server may answer a key in use
// (docs/api.md#idempotent-requests: a keyed request runs under a 60 s
// deadline): the client retries idempotency_key_in_use for that long.
const InUseBound = 60 * time.Second

// mayRetry reports whether the request may be made again after its
// attempt-th retry and a wait: WithMaxRetries times, or, with
// WithRetryUntilDeadline and a deadline on ctx, while the wait ends before
// it.
func (c *Client) mayRetry(ctx context.Context, attempt int, wait time.Duration) bool {
	if _, ok := ctx.Deadline(); ok && c.untilDeadline {
		return c.beforeDeadline(ctx, wait)
	}
	return attempt < c.retries && c.beforeDeadline(ctx, wait)
}

// beforeDeadline reports whether a wait ends before ctx's deadline (always,
// without one): a retry that could not be sent in time is not waited for.
func (c *Client) beforeDeadline(ctx context.Context, wait time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Now().Add(wait).Before(deadline)
}

// jitter spreads a server's Retry-After over [d, 1.5 d], so that callers
// refused together (a rate limit's window) do not all come back at the
// same instant and collide again.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d + time.Duration(mrand.Int64N(int64(d/2)+1)) //nolint:gosec // jitter, not a secret
}

// errorOf reads an error answer: the API's Error object, or, for an answer
// that is not one (a proxy's), its status.
func errorOf(res *http.Response, raw []byte) *Error {
	e := &Error{StatusCode: res.StatusCode, RequestID: res.Header.Get("X-Request-Id")}
	var body struct {
		Error struct {
			Type      string `json:"type"`
			Code      string `json:"code"`
			Param     string `json:"param"`
			Message   string `json:"message"`
			RequestID string `json:"request_id"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		e.Type, e.Code, e.Param, e.Message = body.Error.Type, body.Error.Code, body.Error.Param, body.Error.Message
		if body.Error.RequestID != "" {
			e.RequestID = body.Error.RequestID
		}
	} else {
		e.Code = "http_" + strconv.Itoa(res.StatusCode)
		e.Message = http.StatusText(res.StatusCode)
	}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s >= 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("worktrack: %w", context.Cause(ctx))
	case <-t.C:
		return nil
	}
}

// backoff waits between half and all of base × 2^(attempt−1), at most
// maxWait: "equal jitter", so that clients refused together do not come
// back together.
func backoff(base, maxWait time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		d := float64(base) * math.Pow(2, float64(attempt-1))
		d = min(d, float64(maxWait))
		if d <= 1 {
			return 0
		}
		half := d / 2
		return time.Duration(half + mrand.Float64()*half) //nolint:gosec // jitter, not a secret
	}
}

// newIdempotencyKey is a random key: 128 bits, hex.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", b[:])
}

// Ptr returns a pointer to v, for the optional fields of the request types:
// client.TaskUpdate{Title: client.Ptr("Ship it")}.
func Ptr[T any](v T) *T { return &v }

// errNoID is the error of a call whose id argument is empty: it would name
// another route.
var errNoID = errors.New("worktrack: an id argument is empty")

func pathOf(format string, ids ...string) (string, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		if id == "" {
			return "", errNoID
		}
		args[i] = url.PathEscape(id)
	}
	return fmt.Sprintf(format, args...), nil
}
