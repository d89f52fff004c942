package domain

import (
	"crypto/rand"
	"strings"
)

// Id prefixes, one per kind of resource (docs/api.md#identifiers-and-time).
const (
	PrefixWorkspace = "wsp"
	PrefixUser      = "usr"
	PrefixAPIKey    = "key"
	PrefixProject   = "prj"
	PrefixTask      = "tsk"
	PrefixWebhook   = "whk"
	PrefixEvent     = "evt"
	PrefixDelivery  = "whd"
	PrefixRequest   = "req"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idRandomChars gives 22*log2(62) ≈ 131 random bits, above the 96 docs/api.md promises.
const idRandomChars = 22

// RandomBase62 returns n characters drawn uniformly from [0-9A-Za-z] with
// crypto/rand. Bytes at or above 248 are rejected so that every character is
// equally likely (248 = 4*62).
func RandomBase62(n int) string {
	var b strings.Builder
	b.Grow(n)
	buf := make([]byte, n+n/4+8)
	for b.Len() < n {
		if _, err := rand.Read(buf); err != nil {
			// crypto/rand.Read never fails on supported platforms (Go 1.24+ panics
			// itself); keep the rule explicit.
			panic("crypto/rand failed: " + err.Error())
		}
		for _, c := range buf {
			if c >= 248 {
				continue
			}
			b.WriteByte(base62[c%62])
			if b.Len() == n {
				break
			}
		}
	}
	return b.String()
}

// NewID returns a random id of the given kind, e.g. "prj_3kTMd…".
func NewID(prefix string) string {
	return prefix + "_" + RandomBase62(idRandomChars)
}

// HasPrefix reports whether id starts with the given kind's prefix and an
// underscore. It says nothing of the rest: callers deciding whether a
// client's id can name a resource use IsID.
func HasPrefix(id, prefix string) bool {
	return len(id) > len(prefix)+1 && strings.HasPrefix(id, prefix) && id[len(prefix)] == '_'
}

// maxIDRandomChars bounds what may follow an id's prefix: far more than the
// idRandomChars every id is issued with, so the rule never refuses a real id.
const maxIDRandomChars = 64

// IsID reports whether id is a well-formed id of the given kind: the prefix,
// an underscore, then 1 to 64 characters of [0-9A-Za-z]. Anything else (an id
// of another kind, other characters, a NUL byte, invalid UTF-8) cannot name a
// stored resource, so callers answer it exactly like an absent id, without
// asking the database: PostgreSQL would refuse a NUL byte or invalid UTF-8
// with an error rather than find nothing. Every id a client sends is checked
// with IsID before it reaches a store.
func IsID(id, prefix string) bool {
	if !HasPrefix(id, prefix) {
		return false
	}
	rest := id[len(prefix)+1:]
	return len(rest) <= maxIDRandomChars && IsBase62(rest)
}

// IsAnyID reports whether id is a well-formed id of some kind: 1 to 8
// lowercase letters, an underscore, then what IsID allows.
func IsAnyID(id string) bool {
	prefix, _, ok := strings.Cut(id, "_")
	if !ok || len(prefix) == 0 || len(prefix) > 8 {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if prefix[i] < 'a' || prefix[i] > 'z' {
			return false
		}
	}
	return IsID(id, prefix)
}

// WellFormedIDs returns the ids among ids that IsID accepts for prefix, in
// order: a lookup of many ids answers the others as absent, like ids of
// nobody.
func WellFormedIDs(ids []string, prefix string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if IsID(id, prefix) {
			out = append(out, id)
		}
	}
	return out
}

// IsBase62 reports whether s is made only of [0-9A-Za-z].
func IsBase62(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(base62, s[i]) < 0 {
			return false
		}
	}
	return true
}
