package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

func attempt(url string) ports.WebhookAttempt {
	return ports.WebhookAttempt{
		URL: url, Secret: "whsec_test", EventID: "evt_1", EventType: domain.EventTaskUpdated, Attempt: 3,
		Body: []byte(`{"id":"evt_1","object":"event"}`),
	}
}

func TestSignIsHexHMACOfTheBodyKeyedWithTheWholeSecret(t *testing.T) {
	body := []byte(`{"a":1}`)
	m := hmac.New(sha256.New, []byte("whsec_abc"))
	m.Write(body)
	if got, want := webhook.Sign("whsec_abc", body), hex.EncodeToString(m.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if webhook.Sign("abc", body) == webhook.Sign("whsec_abc", body) {
		t.Fatal("the whsec_ prefix must be part of the key")
	}
}

func TestSendHeadersAndBody(t *testing.T) {
	type seen struct {
		header http.Header
		body   []byte
		method string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{header: r.Header, body: b, method: r.Method}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	s := webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	a := attempt(srv.URL + "/hook")
	res := s.Send(context.Background(), a)
	if !res.Succeeded() || res.StatusCode != http.StatusNoContent || res.Err != "" {
		t.Fatalf("result: %+v", res)
	}
	r := <-got
	if r.method != http.MethodPost || string(r.body) != string(a.Body) {
		t.Fatalf("request: %s %s", r.method, r.body)
	}
	for k, v := range map[string]string{
		"Content-Type":               "application/json",
		"User-Agent":                 "Worktrack-Webhooks/1",
		"X-service-Signature":        webhook.Sign("whsec_test", a.Body),
		"X-service-Event-Id":         "evt_1",
		"X-service-Event-Type":       "task.updated",
		"X-service-Delivery-Attempt": "3",
	} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
}

// The header names go on the wire exactly as docs/api.md#webhook-headers spells them.
func TestSendSpellsHeadersAsDocumented(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	head := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		head <- string(buf[:n])
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
	}()
	s := webhook.NewSender(webhook.SenderOptions{Timeout: 2 * time.Second, AllowPrivate: true})
	if res := s.Send(context.Background(), attempt("http://"+ln.Addr().String()+"/")); !res.Succeeded() {
		t.Fatalf("result: %+v", res)
	}
	h := <-head
	for _, name := range []string{"X-service-Signature: ", "X-service-Event-Id: ", "X-service-Event-Type: ", "X-service-Delivery-Attempt: 3"} {
		if !strings.Contains(h, "\r\n"+name) {
			t.Errorf("no %q line in:\n%s", name, h)
		}
	}
}

func TestSendOutcomes(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/target", http.StatusFound)
	})
	mux.HandleFunc("/target", func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client giving up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/503", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/429-date", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusInternalServerError)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		// A receiver that streams a huge body: the sender must not read it all.
		chunk := []byte(strings.Repeat("x", 1<<16))
		for range 1 << 10 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	s := webhook.NewSender(webhook.SenderOptions{Timeout: 300 * time.Millisecond, AllowPrivate: true})
	ctx := context.Background()

	if res := s.Send(ctx, attempt(srv.URL+"/redirect")); res.StatusCode != http.StatusFound || res.Succeeded() || res.Err == "" || hits.Load() != 0 {
		t.Fatalf("redirect: %+v (target hit %d times)", res, hits.Load())
	}
	start := time.Now()
	if res := s.Send(ctx, attempt(srv.URL+"/slow")); res.StatusCode != 0 || !strings.Contains(res.Err, "No response within 300ms") {
		t.Fatalf("timeout: %+v", res)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the timeout was not enforced: %v", d)
	}
	if res := s.Send(ctx, attempt(srv.URL+"/503")); res.StatusCode != http.StatusServiceUnavailable || res.RetryAfter != 120*time.Second {
		t.Fatalf("503: %+v", res)
	}
	if res := s.Send(ctx, attempt(srv.URL+"/429-date")); res.StatusCode != http.StatusTooManyRequests || res.RetryAfter < 80*time.Second || res.RetryAfter > 91*time.Second {
		t.Fatalf("429 with an HTTP-date: %+v", res)
	}
	if res := s.Send(ctx, attempt(srv.URL+"/500")); res.StatusCode != http.StatusInternalServerError || res.RetryAfter != 0 {
		t.Fatalf("Retry-After is only read on 429 and 503: %+v", res)
	}
	if res := s.Send(ctx, attempt(srv.URL+"/big")); res.StatusCode != http.StatusOK {
		t.Fatalf("big body: %+v", res)
	}
	// A closed port: connection refused, no status.
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	res := s.Send(ctx, attempt(url))
	if res.StatusCode != 0 || !strings.Contains(res.Err, "connection refused") || strings.HasPrefix(res.Err, "Post ") {
		t.Fatalf("refused: %+v", res)
	}
	// A receiver that accepts the connection and closes it unanswered:
	// the transport's own error, without Go's wrapping.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	if hungUp := s.Send(ctx, attempt("http://"+ln.Addr().String()+"/x")); hungUp.StatusCode != 0 || hungUp.Err == "" ||
		strings.HasPrefix(hungUp.Err, "Post ") || strings.Contains(hungUp.Err, ln.Addr().String()) {
		t.Fatalf("hung up: %+v", hungUp)
	}
	// One that resets the connection (an RST, not a FIN): the read's error
	// names both ends of the connection, which last_error leaves out.
	rst, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer rst.Close()
	go func() {
		for {
			c, err := rst.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1)
			_, _ = c.Read(buf) // the request has started
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close()
		}
	}()
	if reset := s.Send(ctx, attempt("http://"+rst.Addr().String()+"/x")); reset.StatusCode != 0 || reset.Err == "" ||
		strings.Contains(reset.Err, "127.0.0.1") {
		t.Fatalf("reset: %+v", reset)
	}
	// last_error names the cause, not the address dialled.
	if _, port, _ := net.SplitHostPort(strings.TrimPrefix(url, "http://")); strings.Contains(res.Err, "127.0.0.1") || strings.Contains(res.Err, ":"+port) {
		t.Fatalf("the error names the address dialled: %q", res.Err)
	}
}

// The delivery-time check judges the address actually dialled, whatever
// name led there: a URL that passed registration and now resolves to
// loopback (DNS rebinding) is refused before any byte is sent.
func TestSendRefusesPrivateAddressesWhenDialling(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	s := webhook.NewSender(webhook.SenderOptions{Timeout: time.Second})
	for _, u := range []string{srv.URL, "http://localhost:" + port + "/x"} {
		res := s.Send(context.Background(), attempt(u))
		if res.StatusCode != 0 || !strings.Contains(res.Err, "refused to connect to") || !strings.Contains(res.Err, "loopback") {
			t.Fatalf("%s: %+v", u, res)
		}
		// It says what kind of address, never which: what a name resolves
		// to here is no business of the webhook's owner.
		if strings.Contains(res.Err, "127.0.0.1") || strings.Contains(res.Err, "::1") || strings.Contains(res.Err, port) {
			t.Fatalf("%s: the error names the address dialled: %q", u, res.Err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver was reached %d times", hits.Load())
	}
	// Allowed, the same receiver is reached.
	allowed := webhook.NewSender(webhook.SenderOptions{Timeout: time.Second, AllowPrivate: true})
	if res := allowed.Send(context.Background(), attempt(srv.URL)); !res.Succeeded() || hits.Load() != 1 {
		t.Fatalf("allowed: %+v", res)
	}
}

func TestBlocked(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "0.0.0.0", "0.1.2.3",
		"100.64.0.1", "255.255.255.255", "224.0.0.1", "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "fec0::1",
		"::ffff:127.0.0.1", "::ffff:10.1.1.1", "64:ff9b::a00:1", "2002:a00:1::1", "ff02::1",
	} {
		if _, bad := webhook.Blocked(netip.MustParseAddr(s)); !bad {
			t.Errorf("%s is not blocked", s)
		}
	}
	for _, s := range []string{"93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"} {
		if why, bad := webhook.Blocked(netip.MustParseAddr(s)); bad {
			t.Errorf("%s is blocked (%s)", s, why)
		}
	}
}

// fakeResolver answers from a table, standing in for DNS (which the test
// machine does not have) in front of the real checker.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestAddressChecker(t *testing.T) {
	ctx := context.Background()
	c := webhook.AddressChecker{Resolver: fakeResolver{
		"hooks.example.com": {netip.MustParseAddr("93.184.215.14")},
		"mixed.example.com": {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.7")},
	}}
	for _, ok := range []string{"https://hooks.example.com/x", "http://93.184.215.14:8080/", "https://[2606:4700::1111]/"} {
		if err := c.CheckWebhookURL(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		"http://127.0.0.1/x", "http://[::1]/", "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data",
		"https://mixed.example.com/", "https://nowhere.example.com/", "http://[::ffff:192.168.0.1]/",
		// Not globally reachable by the IANA special-purpose registries.
		"http://[64:ff9b:1::a00:1]/", "http://[::7f00:1]/", "http://240.0.0.1/", "http://198.51.100.7/",
		"http://203.0.113.9/", "http://192.0.2.1/", "http://[2001:db8::1]/", "http://[100::1]/",
		"http://[2001::1]/", "http://[3fff::1]/",
	} {
		err := c.CheckWebhookURL(ctx, bad)
		if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeValidationFailed || e.Param != "url" {
			t.Errorf("%s: %v", bad, err)
		}
	}
	// The real resolver: localhost resolves to loopback from /etc/hosts.
	// The refusal says how to allow it for local development.
	system := webhook.AddressChecker{}
	err := system.CheckWebhookURL(ctx, "http://localhost:8080/hook")
	if e, ok := domain.AsError(err); !ok || e.Param != "url" || !strings.Contains(e.Message, "loopback") ||
		!strings.Contains(e.Message, "WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true") {
		t.Fatalf("localhost: %v", err)
	}
	// A name's refusal never shows what it resolved to.
	err = c.CheckWebhookURL(ctx, "https://mixed.example.com/")
	if e, ok := domain.AsError(err); !ok || strings.Contains(e.Message, "10.0.0.7") {
		t.Fatalf("the refusal of an internal name shows its address: %v", err)
	}
	if err := (webhook.AddressChecker{AllowPrivate: true}).CheckWebhookURL(ctx, "http://127.0.0.1/"); err != nil {
		t.Fatalf("allowed: %v", err)
	}
}
