package httpedge

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/adapters/edgeport"
	"github.com/worktrack/worktrack/adapters/wire"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

const (
	// idempotencyRunningLease bounds how long a first request may hold its
	// key as "in use": longer than any request can run (the server's write
	// timeout is 60s), so only a process that died leaves one behind.
	idempotencyRunningLease = 2 * time.Minute
)

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

// captureWriter keeps a copy of the response body.
type captureWriter struct {
	gin.ResponseWriter
	buf bytes.Buffer
}

func (w *captureWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *captureWriter) WriteString(s string) (int, error) {
	w.buf.WriteString(s)
	return w.ResponseWriter.WriteString(s)
}

// Idempotent is the middleware that makes a POST with an Idempotency-Key
// safe to retry: within 24 hours the same key, method, path and body (byte
// for byte) from the same API key replays the first 2xx response and changes
// nothing; the key with another request is idempotency_key_reused; while the
// first request runs, idempotency_key_in_use. Responses other than 2xx are
// not stored. It goes after the API's Chain (it needs the actor); a nil
// store disables it (the header is then ignored).
func (a *API) Idempotent(store edgeport.IdempotencyStore) gin.HandlerFunc {
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

// idempotent runs the rest of the chain under the request's Idempotency-Key,
// or returns why it may not run.
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
	now := s.opts.Clock.Now()
	rec := edgeport.IdempotencyRecord{
		APIKeyID: actor.KeyID, Key: key[0], Method: c.Request.Method, Path: c.Request.URL.Path,
		BodyHash: hex.EncodeToString(sum[:]), Role: string(actor.Role), CreatedAt: domain.Timestamp(now),
	}
	held, err := store.BeginIdempotent(c.Request.Context(), rec, now.Add(-edgeport.IdempotencyWindow), now.Add(-idempotencyRunningLease))
	if err != nil {
		return err
	}
	if held != nil {
		switch {
		case held.Method != rec.Method || held.Path != rec.Path || held.BodyHash != rec.BodyHash:
			return domain.Errorf(wire.CodeIdempotencyKeyReused, "This Idempotency-Key was used with a different request; use a new key for a new request.")
		case !held.Done:
			return domain.Errorf(wire.CodeIdempotencyKeyInUse, "A request with this Idempotency-Key is still running; retry when it has finished.")
		case !actor.Role.AtLeast(domain.Role(held.Role)):
			// The stored response may show what the lower role may not see
			// (a webhook's secret): it is not replayed.
			return domain.Forbidden("Your key's user has a lower role (%s) than when this request first ran (%s): its response is not replayed. "+
				"Send the request again with a new Idempotency-Key.", actor.Role, held.Role)
		}
		c.Header("Idempotent-Replayed", "true")
		RawJSON(c, held.Status, held.Body)
		c.Abort()
		return nil
	}

	w := &captureWriter{ResponseWriter: c.Writer}
	c.Writer = w
	c.Next()
	c.Writer = w.ResponseWriter
	// The outcome is recorded even if the client went away meanwhile, and
	// outside the workspace's share of the database (with the statement
	// deadline still): a request refused for that share (429) must still
	// release its key, or every retry would find it "still running" until
	// the lease lapsed.
	ctx := ports.WithDBScope(context.WithoutCancel(c.Request.Context()), "")
	if st := w.Status(); st >= 200 && st < 300 {
		body := w.buf.Bytes()
		if b, ok := c.Get(replayBodyKey); ok {
			body = b.([]byte)
		}
		err = store.CompleteIdempotent(ctx, rec.APIKeyID, rec.Key, st, body)
	} else {
		err = store.ReleaseIdempotent(ctx, rec.APIKeyID, rec.Key)
	}
	if err != nil {
		Logger(c).Error("recording idempotent response", "request_id", RequestID(c), "error", err.Error())
	}
	return nil
}

// replayBodyKey holds, in a request's context, the body an idempotent
// replay answers instead of the one the handler wrote.
const replayBodyKey = "httpedge.replayBody"

// ReplayAs makes an idempotent replay of this request answer v rather than
// the response the handler wrote: for a response that shows a secret the
// service must not keep (a new API key's), so that no stored copy holds it.
func ReplayAs(c *gin.Context, v any) {
	b, err := wire.Marshal(v)
	if err != nil {
		Logger(c).Error("encoding a replay", "request_id", RequestID(c), "error", err.Error())
		return
	}
	c.Set(replayBodyKey, b)
}
