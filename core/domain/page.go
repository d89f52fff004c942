package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"time"
)

// Page limits of every list (docs/api.md#pagination).
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// InvalidLimit is the error of a page size outside 1..MaxPageLimit. An edge
// whose transport value is not even an integer (REST's ?limit=abc) answers
// with it too, so the rule has one message.
func InvalidLimit() *Error {
	return Invalid("limit", "Must be an integer from 1 to %d.", MaxPageLimit)
}

// Position is a place in a list: the sort key of an item and its id, which
// breaks ties. Every list is ordered by (created_at, id) but the task lists,
// which may also sort by updated_at or due_at; Null marks a task without
// due_at, which such a list puts after every dated one.
type Position struct {
	At   time.Time
	Null bool
	ID   string
}

// PageRequest asks for the page after Cursor (the first page when empty).
// Limit is the page size as the request carried it: absent or null means
// DefaultPageLimit.
type PageRequest struct {
	Limit  Field[int]
	Cursor string
}

// Size is the page size asked for, validated: DefaultPageLimit when absent
// or null, else 1..MaxPageLimit.
func (r PageRequest) Size() (int, error) {
	n, ok := r.Limit.Get()
	if !ok {
		return DefaultPageLimit, nil
	}
	if n < 1 || n > MaxPageLimit {
		return 0, InvalidLimit()
	}
	return n, nil
}

// Keyset is a validated page request of one list: the position after which
// to read and the page size.
type Keyset struct {
	After *Position // nil for the first page
	Size  int
	scope string
}

// Keyset validates r for the list named scope: its size, then its cursor
// (validation_failed, param limit or cursor).
func (r PageRequest) Keyset(scope string) (Keyset, error) {
	n, err := r.Size()
	if err != nil {
		return Keyset{}, err
	}
	k := Keyset{Size: n, scope: scope}
	if r.Cursor != "" {
		pos, err := DecodeCursor("cursor", scope, r.Cursor)
		if err != nil {
			return Keyset{}, err
		}
		k.After = &pos
	}
	return k, nil
}

// Rows is how many rows a store should read: one more than the page, to
// learn whether more exist.
func (k Keyset) Rows() int { return k.Size + 1 }

// Page is one page of a list. NextCursor is empty when HasMore is false.
// Cursor gives any item's cursor, computed only when asked for, so an edge
// that needs only NextCursor pays nothing for the others.
type Page[T any] struct {
	Items      []T
	HasMore    bool
	NextCursor string

	scope string
	pos   func(T) Position
}

// Cursor is the cursor of Items[i]: the NextCursor a page ending at that
// item would have, so cursors of either API are accepted by both.
func (p Page[T]) Cursor(i int) string {
	return EncodeCursor(p.scope, p.pos(p.Items[i]))
}

// Cursors are opaque to clients: base64url of a version byte, the position,
// a fingerprint of the list (workspace, list kind, filters and order) they
// were issued for, and a checksum. The checksum only detects tampering; a
// forged cursor can do no harm because it only names a position and every
// query stays scoped to the caller's workspace. Version 2 adds a flags byte
// (bit 0: the sort key is null) after the version; cursors of version 1,
// issued before, are still read.
const (
	cursorV1      = 1
	cursorVersion = 2
	flagNullKey   = 1
)

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
	var flags byte
	if p.Null {
		flags |= flagNullKey
	}
	body.WriteByte(flags)
	_ = binary.Write(&body, binary.BigEndian, p.At.UnixMicro())
	body.Write(scopeFingerprint(scope))
	body.WriteString(p.ID)
	body.Write(cursorChecksum(body.Bytes()))
	return base64.RawURLEncoding.EncodeToString(body.Bytes())
}

// DecodeCursor parses a cursor issued for scope. A malformed or tampered
// cursor, or one issued for another list or filter, is validation_failed on
// param.
func DecodeCursor(param, scope, s string) (Position, error) {
	bad := Invalid(param, "Is not a cursor issued for this list; pass the next cursor of a previous page.")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) < 1 {
		return Position{}, bad
	}
	var flags byte
	rest := raw[1:]
	switch raw[0] {
	case cursorV1:
	case cursorVersion:
		if len(rest) < 1 {
			return Position{}, bad
		}
		flags, rest = rest[0], rest[1:]
	default:
		return Position{}, bad
	}
	if len(rest) < 8+8+1+8 || flags&^flagNullKey != 0 {
		return Position{}, bad
	}
	body, sum := raw[:len(raw)-8], raw[len(raw)-8:]
	if !bytes.Equal(sum, cursorChecksum(body)) {
		return Position{}, bad
	}
	rest = rest[:len(rest)-8]
	if !bytes.Equal(rest[8:16], scopeFingerprint(scope)) {
		return Position{}, bad
	}
	// The checksum is not a secret, so a client can forge a cursor: what it
	// names must still be a position a store can compare with, an instant
	// in range and a well-formed id.
	micros := int64(binary.BigEndian.Uint64(rest[:8]))
	pos := Position{At: time.UnixMicro(micros).UTC(), Null: flags&flagNullKey != 0, ID: string(rest[16:])}
	if pos.Null {
		pos.At = time.Time{}
	}
	if (!pos.Null && !InTimeRange(pos.At)) || !IsAnyID(pos.ID) {
		return Position{}, bad
	}
	return pos, nil
}

// NewPage builds a page from up to k.Rows() items fetched for keyset k: the
// extra item only tells that more exist.
func NewPage[T any](items []T, k Keyset, pos func(T) Position) Page[T] {
	p := Page[T]{Items: items, scope: k.scope, pos: pos}
	if len(items) > k.Size {
		p.Items = items[:k.Size]
		p.HasMore = true
		p.NextCursor = p.Cursor(k.Size - 1)
	}
	if p.Items == nil {
		p.Items = []T{}
	}
	return p
}

// Position of each listed entity: every list is ordered by (created_at, id).

// Position is the user's place in a list.
func (u User) Position() Position { return Position{At: u.CreatedAt, ID: u.ID} }

// Position is the project's place in a list.
func (p Project) Position() Position { return Position{At: p.CreatedAt, ID: p.ID} }

// Position is the task's place in a list.
func (t Task) Position() Position { return Position{At: t.CreatedAt, ID: t.ID} }

// Position is the webhook's place in a list.
func (w Webhook) Position() Position { return Position{At: w.CreatedAt, ID: w.ID} }

// Position is the delivery's place in a list.
func (d Delivery) Position() Position { return Position{At: d.CreatedAt, ID: d.ID} }

// Position is the API key's place in a list.
func (k APIKey) Position() Position { return Position{At: k.CreatedAt, ID: k.ID} }
