package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Page limits of every list (spec section 8).
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// ValidateLimit checks a page size; param names the parameter at fault
// ("limit" over REST, "first" over GraphQL).
func ValidateLimit(param string, n int) error {
	if n < 1 || n > MaxPageLimit {
		return Invalid(param, "%s must be an integer from 1 to %d", param, MaxPageLimit)
	}
	return nil
}

// Position is a place in a list ordered by (created_at, id) ascending.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// PageRequest asks for the page after Cursor (the first page when empty).
type PageRequest struct {
	Limit  int
	Cursor string
}

// Page is one page of a list. NextCursor is empty when HasMore is false.
type Page[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string
}

// Cursors are opaque to clients: base64url of a version byte, the position,
// a fingerprint of the list (workspace, list kind and filter) they were issued
// for, and a checksum. The checksum only detects tampering; a forged cursor
// can do no harm because it only names a position and every query stays
// scoped to the caller's workspace.
const cursorVersion = 1

func scopeFingerprint(scope string) []byte {
	sum := sha256.Sum256([]byte("worktrack/list/" + scope))
	return sum[:8]
}

func cursorChecksum(body []byte) []byte {
	sum := sha256.Sum256(append([]byte("worktrack/cursor/v1\x00"), body...))
	return sum[:8]
}

// EncodeCursor returns the cursor of position p in the list named scope.
func EncodeCursor(scope string, p Position) string {
	var body bytes.Buffer
	body.WriteByte(cursorVersion)
	_ = binary.Write(&body, binary.BigEndian, p.CreatedAt.UnixMicro())
	body.Write(scopeFingerprint(scope))
	body.WriteString(p.ID)
	body.Write(cursorChecksum(body.Bytes()))
	return base64.RawURLEncoding.EncodeToString(body.Bytes())
}

// DecodeCursor parses a cursor issued for scope. A malformed or tampered
// cursor, or one issued for another list or filter, is validation_failed on
// param.
func DecodeCursor(param, scope, s string) (Position, error) {
	bad := Invalid(param, "%s is not a cursor issued for this list; pass the next_cursor of a previous page", param)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 1+8+8+1+8 || raw[0] != cursorVersion {
		return Position{}, bad
	}
	body, sum := raw[:len(raw)-8], raw[len(raw)-8:]
	if !bytes.Equal(sum, cursorChecksum(body)) {
		return Position{}, bad
	}
	if !bytes.Equal(body[9:17], scopeFingerprint(scope)) {
		return Position{}, bad
	}
	micros := int64(binary.BigEndian.Uint64(body[1:9]))
	return Position{CreatedAt: time.UnixMicro(micros).UTC(), ID: string(body[17:])}, nil
}

// NewPage builds a page from up to limit+1 items fetched after the cursor: the
// extra item only tells that more exist.
func NewPage[T any](items []T, limit int, scope string, pos func(T) Position) Page[T] {
	p := Page[T]{Items: items}
	if len(items) > limit {
		p.Items = items[:limit]
		p.HasMore = true
		p.NextCursor = EncodeCursor(scope, pos(p.Items[limit-1]))
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

// Position of each listed entity: every list is ordered by (created_at, id).

// Position is the user's place in a list.
func (u User) Position() Position { return Position{CreatedAt: u.CreatedAt, ID: u.ID} }

// Position is the project's place in a list.
func (p Project) Position() Position { return Position{CreatedAt: p.CreatedAt, ID: p.ID} }

// Position is the task's place in a list.
func (t Task) Position() Position { return Position{CreatedAt: t.CreatedAt, ID: t.ID} }

// Position is the webhook's place in a list.
func (w Webhook) Position() Position { return Position{CreatedAt: w.CreatedAt, ID: w.ID} }

// Position is the delivery's place in a list.
func (d Delivery) Position() Position { return Position{CreatedAt: d.CreatedAt, ID: d.ID} }
