package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/adapters/webhook"
	"github.com/worktrack/worktrack/cmd/worktrack/apitest"
	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
	"github.com/worktrack/worktrack/tools/nodetest"
)

// regexpSecret32 is a secret of the Standard Webhooks shape: whsec_ and
// exactly 32 base62 characters (valid standard base64).
var regexpSecret32 = regexp.MustCompile(`^whsec_[0-9A-Za-z]{32}$`)

// envRequireNodeWebhooks makes the standardwebhooks (npm) checks fail,
// rather than skip, when Node.js or the package is missing (CI sets it:
// .ci/run, after make webhook-verify).
const envRequireNodeWebhooks = "WORKTRACK_REQUIRE_NODE_WEBHOOKS"

// goVerify verifies a received request with the Standard Webhooks Go
// library, as a receiver written in Go would (five-minute tolerance).
func goVerify(t *testing.T, secret string, r received) error {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("the Go library refuses the secret %q: %v", secret, err)
	}
	return wh.Verify(r.Body, r.Header)
}

// nodeCase is one request for the standardwebhooks npm package to verify.
type nodeCase struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func nodeCaseOf(secret string, r received) nodeCase {
	c := nodeCase{Secret: secret, Headers: map[string]string{}, Body: string(r.Body)}
	for _, h := range []string{webhook.HeaderWebhookID, webhook.HeaderWebhookTimestamp, webhook.HeaderWebhookSignature} {
		c.Headers[h] = r.Header.Get(h)
	}
	return c
}

// nodeVerify verifies cases with the standardwebhooks npm package
// (tools/webhook-verify) and returns, per case, whether it verified. It
// skips the test when Node.js or the package is missing, unless
// WORKTRACK_REQUIRE_NODE_WEBHOOKS=1.
func nodeVerify(t *testing.T, cases ...nodeCase) []bool {
	t.Helper()
	tool := filepath.Join("..", "..", "tools", "webhook-verify")
	node := nodetest.Tool{
		Dir: tool, Package: "standardwebhooks", Install: "make webhook-verify", RequireEnv: envRequireNodeWebhooks,
	}.Require(t)
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(tool, "verify.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("verify.mjs: %v", err)
	}
	var res []struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(cases) {
		t.Fatalf("verify.mjs answered %s (%v)", out, err)
	}
	oks := make([]bool, len(res))
	for i, r := range res {
		oks[i] = r.OK
		t.Logf("standardwebhooks (npm) case %d: ok=%v %s", i, r.OK, r.Error)
	}
	return oks
}

// tampered is r with one byte of its body changed.
func tampered(r received) received {
	r.Body = bytes.Replace(r.Body, []byte(`"object":"event"`), []byte(`"object":"Event"`), 1)
	return r
}

// A real delivery carries the Standard Webhooks headers and verifies with
// the Go and the npm library; a tampered body, a wrong secret and a
// replay whose timestamp is more than five minutes old are refused by both.
func TestStandardWebhooksVerifyRealDeliveries(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})
		rc := newReceiver(t, nil)
		w := newWebhook(t, e, rc.URL(), "task.created")
		secret := w.Str("secret")
		if !regexpSecret32.MatchString(secret) {
			t.Fatalf("secret %q: want whsec_ and exactly 32 base62 characters", secret)
		}
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Apollo", "key": "APO"})
		prj.ExpectStatus(t, 201)
		newTask(t, e, prj.Str("id"), map[string]any{"title": "Launch"})
		r := rc.WaitFor(1)[0]

		p := decodePayload(t, r.Body)
		if r.Header.Get("webhook-id") != p.ID || r.EventID() != p.ID {
			t.Fatalf("webhook-id %q, event id %q, payload id %q", r.Header.Get("webhook-id"), r.EventID(), p.ID)
		}
		ts, err := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
		if err != nil || ts > time.Now().Unix() || ts < r.At.Add(-time.Minute).Unix() {
			t.Fatalf("webhook-timestamp %q is not the attempt's Unix seconds", r.Header.Get("webhook-timestamp"))
		}
		if sig := r.Header.Get("webhook-signature"); strings.Count(sig, " ") != 0 ||
			sig != webhook.StandardSignature(secret, p.ID, ts, r.Body) {
			t.Fatalf("webhook-signature %q: want one v1 entry of the secret", sig)
		}
		if !verify(r, secret) {
			t.Fatal("X-service-Signature must stay as it was")
		}

		wrong := domain.NewWebhookSecret()
		if err := goVerify(t, secret, r); err != nil {
			t.Fatalf("Go library: a genuine delivery must verify: %v", err)
		}
		if err := goVerify(t, secret, tampered(r)); err == nil {
			t.Fatal("Go library: a tampered body must be refused")
		}
		if err := goVerify(t, wrong, r); err == nil {
			t.Fatal("Go library: a wrong secret must be refused")
		}

		// A replay: a genuine request captured six minutes ago. Its
		// signature is right (the check ignoring the timestamp passes),
		// and the timestamp check alone refuses it.
		old := replayedDelivery(t, secret)
		wh, _ := standardwebhooks.NewWebhook(secret)
		if err := wh.VerifyIgnoringTimestamp(old.Body, old.Header); err != nil {
			t.Fatalf("Go library: the old request's signature must be genuine: %v", err)
		}
		if err := goVerify(t, secret, old); err == nil {
			t.Fatal("Go library: a timestamp older than five minutes must be refused")
		}

		got := nodeVerify(t, nodeCaseOf(secret, r), nodeCaseOf(secret, tampered(r)), nodeCaseOf(wrong, r), nodeCaseOf(secret, old))
		if want := []bool{true, false, false, false}; !equalBools(got, want) {
			t.Fatalf("standardwebhooks (npm): genuine, tampered, wrong secret, replay = %v, want %v", got, want)
		}
	})
}

// replayedDelivery is a genuine delivery, signed with secret, made by a
// sender whose clock is six minutes behind: what an attacker replaying a
// captured request six minutes later would send.
func replayedDelivery(t *testing.T, secret string) received {
	t.Helper()
	rc := newReceiver(t, nil)
	s := webhook.NewSender(webhook.SenderOptions{
		Timeout: 2 * time.Second, AllowPrivate: true,
		Now: func() time.Time { return time.Now().Add(-6 * time.Minute) },
	})
	body := []byte(`{"id":"evt_replayed","object":"event","type":"task.created"}`)
	res := s.Send(t.Context(), ports.WebhookAttempt{
		URL: rc.URL(), Secret: secret, EventID: "evt_replayed", EventType: domain.EventTaskCreated, Attempt: 1, Body: body,
	})
	if !res.Succeeded() {
		t.Fatalf("replayed send: %+v", res)
	}
	return rc.WaitFor(1)[0]
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// During a rotation's grace period webhook-signature carries two entries,
// the new secret's first, and both secrets verify with both libraries;
// once it has expired only the new secret does. X-service-Signature uses
// the new secret throughout.
func TestStandardWebhooksRotationGrace(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		e := apitest.NewWith(t, db, apitest.Settings{AllowPrivateWebhooks: true})
		e.RunDispatcher(t, app.DispatcherOptions{Policy: testPolicy(5 * time.Second)})
		rc := newReceiver(t, nil)
		w := newWebhook(t, e, rc.URL(), "task.created")
		oldSecret := w.Str("secret")
		rot := e.Send(http.MethodPost, "/v1/webhooks/"+w.Str("id")+"/rotate_secret", e.Admin.Key,
			map[string]any{"previous_secret_expires_in": 3600})
		rot.ExpectStatus(t, http.StatusOK)
		newSecret := rot.Str("secret")
		if newSecret == oldSecret || !regexpSecret32.MatchString(newSecret) || strings.Contains(string(rot.Body), oldSecret) {
			t.Fatalf("rotated: %s", rot.Body)
		}
		prj := e.Send(http.MethodPost, "/v1/projects", e.Member.Key, map[string]any{"name": "Apollo", "key": "APO"})
		prj.ExpectStatus(t, 201)

		newTask(t, e, prj.Str("id"), map[string]any{"title": "During the grace"})
		during := rc.WaitFor(1)[0]
		entries := strings.Split(during.Header.Get("webhook-signature"), " ")
		ts, _ := strconv.ParseInt(during.Header.Get("webhook-timestamp"), 10, 64)
		id := during.Header.Get("webhook-id")
		if len(entries) != 2 || entries[0] != webhook.StandardSignature(newSecret, id, ts, during.Body) ||
			entries[1] != webhook.StandardSignature(oldSecret, id, ts, during.Body) {
			t.Fatalf("webhook-signature during the grace: %q; want the new secret's entry, then the old one's", entries)
		}
		if !verify(during, newSecret) {
			t.Fatal("X-service-Signature must use the new secret")
		}
		for _, s := range []string{newSecret, oldSecret} {
			if err := goVerify(t, s, during); err != nil {
				t.Fatalf("Go library, during the grace: %v", err)
			}
		}

		e.Clock.Advance(time.Hour + time.Second)
		newTask(t, e, prj.Str("id"), map[string]any{"title": "After the grace"})
		after := rc.WaitFor(2)[1]
		if n := strings.Count(after.Header.Get("webhook-signature"), "v1,"); n != 1 {
			t.Fatalf("webhook-signature after the grace: %q; want one entry", after.Header.Get("webhook-signature"))
		}
		if err := goVerify(t, newSecret, after); err != nil {
			t.Fatalf("Go library, after the grace, new secret: %v", err)
		}
		if err := goVerify(t, oldSecret, after); err == nil {
			t.Fatal("Go library, after the grace: the old secret must be refused")
		}
		if !verify(after, newSecret) {
			t.Fatal("X-service-Signature must use the new secret")
		}

		got := nodeVerify(t, nodeCaseOf(newSecret, during), nodeCaseOf(oldSecret, during),
			nodeCaseOf(newSecret, after), nodeCaseOf(oldSecret, after))
		if want := []bool{true, true, true, false}; !equalBools(got, want) {
			t.Fatalf("standardwebhooks (npm): new/old during, new/old after = %v, want %v", got, want)
		}
	})
}
