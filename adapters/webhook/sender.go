package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/worktrack/worktrack/adapters/telemetry"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// The headers of docs/api.md#webhook-headers, spelled exactly as it does.
// They are set in the header map directly (not through Header.Set, which
// would canonicalise them to X-Service-…), so they go on the wire as
// written; HTTP header names are case-insensitive to receivers either way.
const (
	HeaderSignature = "X-service-Signature"
	HeaderEventID   = "X-service-Event-Id"
	HeaderEventType = "X-service-Event-Type"
	HeaderAttempt   = "X-service-Delivery-Attempt"
	UserAgent       = "Worktrack-Webhooks/1"
)

// The Standard Webhooks headers (standardwebhooks.com), which its libraries
// read in lower case.
const (
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// maxResponseBytes is the most of a receiver's response body read: only
// the status matters, and the rest is drained so the connection can be
// reused, never buffered without bound.
const maxResponseBytes = 64 << 10

// maxErrorLen bounds the last_error text kept for an attempt.
const maxErrorLen = 500

// Sign is the X-service-Signature of body: lowercase hex HMAC-SHA256 keyed
// with the secret string's bytes, whsec_ prefix included.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// StandardSignature is one webhook-signature entry: "v1," and the standard
// base64 HMAC-SHA256 of "<id>.<timestamp>.<body>", keyed with the bytes
// the secret after its whsec_ prefix decodes to as standard base64. Every
// secret Worktrack makes decodes; a secret that somehow does not is keyed
// with its characters as they are, so that signing never fails.
func StandardSignature(secret, id string, timestamp int64, body []byte) string {
	enc := strings.TrimPrefix(secret, domain.WebhookSecretPrefix)
	key, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		key = []byte(enc)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, timestamp, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SenderOptions configure a Sender.
type SenderOptions struct {
	// Timeout bounds one attempt from dialling to the response status
	// (WORKTRACK_WEBHOOK_TIMEOUT); default 5s.
	Timeout time.Duration
	// AllowPrivate lets attempts connect to blocked addresses
	// (WORKTRACK_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
	// Now is the clock that stamps webhook-timestamp and turns a
	// Retry-After HTTP-date into a delay; default time.Now.
	Now func() time.Time
	// Tracing makes each attempt a client span of the trace of the request
	// that caused its event, and sends that span as traceparent; nil
	// traces nothing.
	Tracing trace.TracerProvider
}

// Sender makes delivery attempts over HTTP.
type Sender struct {
	client  *http.Client
	timeout time.Duration
	now     func() time.Time
	tracer  trace.Tracer // nil when tracing is off
}

var _ ports.WebhookSender = (*Sender)(nil)

// errBlocked reports a dialled address refused by the SSRF rule. Its text,
// which becomes a delivery's last_error, names the kind of address and
// never the address: the host is the customer's, but what it resolved to
// here is this network's business (DNS rebinding would otherwise make
// last_error a view of internal name resolution).
type errBlocked struct {
	why string
}

func (e *errBlocked) Error() string {
	return fmt.Sprintf("refused to connect to the host: it resolved to %s", e.why)
}

// NewSender builds a sender. Its dialler checks the address of every
// connection it opens, after DNS resolution, so that a host that resolved
// to a public address at registration and to a private one now (DNS
// rebinding) is still refused. It uses no proxy (a proxy would be dialled
// instead of the receiver, defeating that check) and follows no redirect.
func NewSender(o SenderOptions) *Sender {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dialer := &net.Dialer{
		Timeout:   o.Timeout,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			if o.AllowPrivate {
				return nil
			}
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &errBlocked{why: "not an IP address"}
			}
			if why, bad := Blocked(ap.Addr()); bad {
				return &errBlocked{why: why}
			}
			return nil
		},
	}
	transport := &http.Transport{
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		// One transport for every attempt, so that connections to a
		// receiver are kept alive and reused: enough idle ones per host for
		// the dispatcher's per-webhook concurrency (16 by default) with
		// room for several webhooks on one host.
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
	}
	var tracer trace.Tracer
	if o.Tracing != nil {
		tracer = o.Tracing.Tracer("github.com/worktrack/worktrack/adapters/webhook")
	}
	return &Sender{
		tracer: tracer,
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		timeout: o.Timeout,
		now:     o.Now,
	}
}

// Send makes one attempt. Success is a 2xx status received within the
// timeout; the response body is drained (bounded) and ignored.
func (s *Sender) Send(ctx context.Context, a ports.WebhookAttempt) domain.AttemptResult {
	if s.tracer == nil {
		return s.send(ctx, a, nil)
	}
	ctx, span := s.tracer.Start(telemetry.ContextWithTraceParent(ctx, a.TraceParent), http.MethodPost,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attemptAttributes(a)...))
	defer span.End()
	res := s.send(ctx, a, span)
	if res.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(res.StatusCode))
	}
	if !res.Succeeded() {
		errType := "http_status"
		if res.StatusCode == 0 {
			errType = "transport"
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, res.Err)
	}
	return res
}

// attemptAttributes name an attempt's span by the HTTP client conventions
// and the service's own keys: the receiver's URL without its query or
// credentials, never a header value or the body.
func attemptAttributes(a ports.WebhookAttempt) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodPost,
		telemetry.WorkspaceID.String(a.WorkspaceID),
		attribute.String("worktrack.webhook.id", a.WebhookID),
		attribute.String("worktrack.delivery.id", a.DeliveryID),
		attribute.String("worktrack.event.id", a.EventID),
		attribute.Int("worktrack.delivery.attempt", a.Attempt),
	}
	if a.Attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCount(a.Attempt-1))
	}
	if u, err := url.Parse(a.URL); err == nil {
		attrs = append(attrs, semconv.URLFull((&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()),
			semconv.ServerAddress(u.Hostname()))
		if port, err := strconv.Atoi(u.Port()); err == nil {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	return attrs
}

// send makes the attempt; a span (nil when tracing is off) is sent as
// traceparent.
func (s *Sender) send(ctx context.Context, a ports.WebhookAttempt, span trace.Span) domain.AttemptResult {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
	if err != nil {
		return domain.AttemptResult{Err: clip("invalid webhook URL: " + err.Error())}
	}
	for name, value := range a.Headers {
		req.Header.Set(name, value) // the service's own below cannot be among them
	}
	req.Header["Content-Type"] = []string{"application/json"}
	req.Header["User-Agent"] = []string{UserAgent}
	req.Header[HeaderSignature] = []string{Sign(a.Secret, a.Body)}
	req.Header[HeaderEventID] = []string{a.EventID}
	req.Header[HeaderEventType] = []string{string(a.EventType)}
	req.Header[HeaderAttempt] = []string{strconv.Itoa(a.Attempt)}
	// Standard Webhooks: the timestamp is this attempt's, so that receivers
	// can refuse a replay of an old request; the new secret's entry first.
	ts := s.now().Unix()
	sig := StandardSignature(a.Secret, a.EventID, ts, a.Body)
	if a.PreviousSecret != "" {
		sig += " " + StandardSignature(a.PreviousSecret, a.EventID, ts, a.Body)
	}
	req.Header[HeaderWebhookID] = []string{a.EventID}
	req.Header[HeaderWebhookTimestamp] = []string{strconv.FormatInt(ts, 10)}
	req.Header[HeaderWebhookSignature] = []string{sig}
	if span != nil {
		telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}

	resp, err := s.client.Do(req)
	if err != nil {
		return domain.AttemptResult{Err: s.describe(err)}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))

	res := domain.AttemptResult{StatusCode: resp.StatusCode}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		res.Err = "The receiver answered with a redirect; redirects are not followed."
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable:
		res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), s.now())
	}
	return res
}

// retryAfter parses Retry-After as delay-seconds or an HTTP-date (RFC 9110
// 10.2.3); 0 when absent, malformed or already past.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		// Anything beyond a year is past every retry window anyway.
		return time.Duration(min(n, 366*24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// describe turns a transport failure into a last_error text that names the
// cause without Go's wrapping ("Post \"…\": dial tcp …").
func (s *Sender) describe(err error) string {
	var blocked *errBlocked
	switch {
	case errors.As(err, &blocked):
		return clip(blocked.Error())
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return fmt.Sprintf("No response within %s.", s.timeout)
	}
	// A failed dial, read or write names the addresses of the connection
	// ("dial tcp 10.1.2.3:443: connect: connection refused", "read tcp
	// 10.0.0.5:51234->10.1.2.3:443: read: connection reset by peer"): keep
	// only the cause.
	var operr *net.OpError
	if errors.As(err, &operr) && operr.Err != nil {
		if operr.Op == "dial" {
			return clip("could not connect to the host: " + operr.Err.Error())
		}
		return clip("the connection failed: " + operr.Err.Error())
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return clip(err.Error())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// clip bounds s and keeps it valid UTF-8 (PostgreSQL text refuses
// anything else, and a cut may fall inside a character).
func clip(s string) string {
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen]
	}
	return strings.ToValidUTF8(s, "")
}
