package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

const (
	// IdempotencyWindow is how long a key's first response is replayed.
	IdempotencyWindow = 24 * time.Hour
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

// idempotency makes a POST with an Idempotency-Key safe to retry: within 24
// hours the same key, method, path and body (byte for byte) from the same API
// key replays the first 2xx response and changes nothing; the key with
// another request is idempotency_key_reused; while the first request runs,
// idempotency_key_in_use. Responses other than 2xx are not stored.
func (s *Server) idempotency(c *gin.Context) {
	key, sent := c.Request.Header["Idempotency-Key"]
	if c.Request.Method != http.MethodPost || !sent || s.opts.Idempotency == nil {
		c.Next()
		return
	}
	if len(key) != 1 || !validIdempotencyKey(key[0]) {
		abort(c, domain.Invalid("Idempotency-Key", "The Idempotency-Key header must be 1-255 printable ASCII characters."))
		return
	}
	body, err := io.ReadAll(c.Request.Body)
	if err != nil {
		if tooLarge(err) {
			abort(c, domain.Errorf(domain.CodeRequestTooLarge, "The request body must be at most %d bytes.", MaxBodyBytes))
			return
		}
		abort(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	sum := sha256.Sum256(body)
	actor := Actor(c)
	now := s.opts.Clock.Now()
	rec := ports.IdempotencyRecord{
		APIKeyID: actor.KeyID, Key: key[0], Method: c.Request.Method, Path: c.Request.URL.Path,
		BodyHash: hex.EncodeToString(sum[:]), CreatedAt: domain.Timestamp(now),
	}
	held, err := s.opts.Idempotency.BeginIdempotent(c.Request.Context(), rec, now.Add(-IdempotencyWindow), now.Add(-idempotencyRunningLease))
	if err != nil {
		abort(c, err)
		return
	}
	if held != nil {
		switch {
		case held.Method != rec.Method || held.Path != rec.Path || held.BodyHash != rec.BodyHash:
			abort(c, domain.Errorf(domain.CodeIdempotencyKeyReused, "This Idempotency-Key was used with a different request; use a new key for a new request."))
		case !held.Done:
			abort(c, domain.Errorf(domain.CodeIdempotencyKeyInUse, "A request with this Idempotency-Key is still running; retry when it has finished."))
		default:
			c.Header("Idempotent-Replayed", "true")
			c.Data(held.Status, "application/json; charset=utf-8", held.Body)
			c.Abort()
		}
		return
	}

	w := &captureWriter{ResponseWriter: c.Writer}
	c.Writer = w
	c.Next()
	c.Writer = w.ResponseWriter
	// The outcome is recorded even if the client went away meanwhile.
	ctx := context.WithoutCancel(c.Request.Context())
	if st := w.Status(); st >= 200 && st < 300 {
		err = s.opts.Idempotency.CompleteIdempotent(ctx, rec.APIKeyID, rec.Key, st, w.buf.Bytes())
	} else {
		err = s.opts.Idempotency.ReleaseIdempotent(ctx, rec.APIKeyID, rec.Key)
	}
	if err != nil {
		logger(c).Error("recording idempotent response", "request_id", RequestID(c), "error", err.Error())
	}
}
