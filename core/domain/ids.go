package domain

import (
	"crypto/rand"
	"strings"
)

// Id prefixes, one per kind of resource (spec section 2, contract section 3).
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

// idRandomChars gives 22*log2(62) ≈ 131 random bits, above the contract's 96.
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
			// itself); keep the contract explicit.
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

// HasPrefix reports whether id is of the given kind. An id of the wrong kind
// for a route is simply not found, so callers answer it like an absent one.
func HasPrefix(id, prefix string) bool {
	return len(id) > len(prefix)+1 && strings.HasPrefix(id, prefix) && id[len(prefix)] == '_'
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
