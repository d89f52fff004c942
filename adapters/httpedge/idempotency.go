package httpedge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// KeyedRequestDeadline bounds a request sent with an Idempotency-Key: its
// context ends then, and with it every statement it runs, so nothing it
// does commits later and its key is in use for no longer
// (docs/api.md#idempotent-requests). It matches the server's write
// timeout, past which no answer could reach the client anyway.
const KeyedRequestDeadline = 60 * time.Second

// validIdempotencyKey: 1-255 printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// runningKeys are the idempotency keys of this process's requests that are
// still executing: a key is "in use" only while its request runs, and only
// this process's memory knows that, so no state outlives a process that
// died. A request of another process with the same key waits at its
// commit for the first's (PostgreSQL) and replays its answer.
type runningKeys struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// hold marks id running; false when it already is.
func (r *runningKeys) hold(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.keys[id]; ok {
		return false
	}
	if r.keys == nil {
		r.keys = map[string]struct{}{}
	}
	r.keys[id] = struct{}{}
	return true
}

func (r *runningKeys) release(id string) {
	r.mu.Lock()
	delete(r.keys, id)
	r.mu.Unlock()
}

// keyedKey holds a request's *ports.KeyedRequest in its gin context.
const keyedKey = "httpedge.keyed"

// Idempotent is the middleware that makes a POST with an Idempotency-Key
// safe to retry: within 24 hours the same key, method, path and body (byte
// for byte) from the same API key replays the first 2xx answer and changes
// nothing; the key with another request is idempotency_key_reused; while the
// first request runs, idempotency_key_in_use. The answer is committed by
// the core in the transaction of the change (ports.KeyedRequest), so only
// 2xx answers are kept and no answer outlives a change that did not commit.
// It goes after the API's Chain (it needs the actor); a nil store disables
// it (the header is then ignored).
func (a *API) Idempotent(store edgeport.IdempotencyStore) gin.HandlerFunc {
	a.answers = store
	return func(c *gin.Context) {
		if store == nil {
			c.Next()
			return
		}
		if err := a.edge.idempotent(c, store); err != nil {
			a.render.Abort(c, err)
		}
	}
}

// idempotent runs the rest of the chain as a keyed request, or returns why
// it may not run.
func (s *Edge) idempotent(c *gin.Context, store edgeport.IdempotencyStore) error {
	key, sent := c.Request.Header["Idempotency-Key"]
	if c.Request.Method != http.MethodPost || !sent {
		c.Next()
		return nil
	}
	if len(key) != 1 || !validIdempotencyKey(key[0]) {
		return domain.Invalid("Idempotency-Key", "The Idempotency-Key header must be 1-255 printable ASCII characters.")
	}
	body, err := ReadBody(c)
	if err != nil {
		return err
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	actor := Actor(c)
	k := &ports.KeyedRequest{
		APIKeyID: actor.KeyID, Key: key[0], Method: c.Request.Method, Path: c.Request.URL.Path,
		BodyHash: hex.EncodeToString(sum[:]), Role: string(actor.Role), At: domain.Timestamp(s.opts.Clock.Now()),
	}
	running := k.APIKeyID + "\x00" + k.Key
	if !s.running.hold(running) {
		c.Header("Retry-After", "1")
		return domain.Errorf(wire.CodeIdempotencyKeyInUse, "A request with this Idempotency-Key is still running; retry when it has finished.")
	}
	defer s.running.release(running)
	held, err := store.FindIdempotent(c.Request.Context(), k.APIKeyID, k.Key, k.At.Add(-edgeport.IdempotencyWindow))
	if err != nil {
		return err
	}
	if held != nil {
		return replay(c, held, k)
	}
	ctx, cancel := context.WithTimeout(ports.WithKeyedRequest(c.Request.Context(), k), KeyedRequestDeadline)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Set(keyedKey, k)
	c.Next()
	return nil
}

// replay answers k with the answer held committed for its key: that answer
// when k is the same request, else why not.
func replay(c *gin.Context, held *edgeport.IdempotencyRecord, k *ports.KeyedRequest) error {
	switch {
	case held.Method != k.Method || held.Path != k.Path || held.BodyHash != k.BodyHash:
		return domain.Errorf(wire.CodeIdempotencyKeyReused, "This Idempotency-Key was used with a different request; use a new key for a new request.")
	case !domain.Role(k.Role).AtLeast(domain.Role(held.Role)):
		// The stored answer may show what the lower role may not see (a
		// webhook's secret): it is not replayed.
		return domain.Forbidden("Your key's user has a lower role (%s) than when this request first ran (%s): its response is not replayed. "+
			"Send the request again with a new Idempotency-Key.", k.Role, held.Role)
	}
	c.Header("Idempotent-Replayed", "true")
	RawJSON(c, held.Status, held.Body)
	c.Abort()
	return nil
}

// replayTaken answers, instead of err, a keyed request whose change was
// rolled back because another request with its key committed first (on
// another process): with that request's answer, as a retry would get it.
// It reports whether it answered.
func (a *API) replayTaken(c *gin.Context) bool {
	v, ok := c.Get(keyedKey)
	if !ok || a.answers == nil {
		return false
	}
	k := v.(*ports.KeyedRequest)
	if !k.Taken() {
		return false
	}
	held, err := a.answers.FindIdempotent(context.WithoutCancel(c.Request.Context()), k.APIKeyID, k.Key, k.At.Add(-edgeport.IdempotencyWindow))
	if err != nil || held == nil {
		return false
	}
	if err := replay(c, held, k); err != nil {
		a.render.Abort(c, err)
	}
	return true
}

// KeepAnswer says how this request's 2xx answer is kept when it carries an
// Idempotency-Key: status, and the body render makes of what the use case
// returns, encoded as JSON writes it. The core commits that answer with
// the request's change (ports.KeyedRequest). A POST handler calls it before
// it calls the core; without the header it does nothing.
func KeepAnswer[T, R any](c *gin.Context, status int, render func(T) R) {
	k := ports.KeyedRequestFrom(c.Request.Context())
	if k == nil {
		return
	}
	k.Render = func(result any) (ports.Answer, error) {
		v, ok := result.(T)
		if !ok {
			var want T
			return ports.Answer{}, fmt.Errorf("httpedge: the answer of %s %s renders a %T, not a %T", k.Method, k.Path, want, result)
		}
		b, err := encodeJSON(render(v))
		return ports.Answer{Status: status, Body: b}, err
	}
}

// Answers is KeepAnswer for a handler that answers what it keeps: it
// returns the function that writes the answer once the core has made it.
func Answers[T, R any](c *gin.Context, status int, render func(T) R) func(T) {
	KeepAnswer(c, status, render)
	return func(v T) { JSON(c, status, render(v)) }
}

// encodeJSON is a body as JSON writes it.
func encodeJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
