// Package secretbox seals the secrets Worktrack must store in a form it can
// read back (webhook signing secrets, idempotency replays that show them)
// with AES-256-GCM from the standard library, under a keyring read from
// WORKTRACK_SECRETS_KEY. The first key seals; any key of the ring opens,
// so keys rotate by prepending a new one (docs/operations.md#secrets-at-rest).
//
// A sealed value is text: "wtksealed:v1:" + the sealing key's id (8 hex
// characters of its SHA-256) + ":" + base64url(nonce ‖ ciphertext ‖ tag).
// Each is bound to a context (the webhook's id, say) given as additional
// data, so a sealed value copied to another row does not open there.
// Anything without the prefix is a value stored before sealing began, and
// opens as itself.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// EnvKey is the variable the keyring is read from.
const EnvKey = "WORKTRACK_SECRETS_KEY"

// KeySize is the size of a key: AES-256.
const KeySize = 32

const (
	prefix = "wtksealed:v1:"
	idLen  = 8
)

// ErrNoKey: a value is sealed under a key the ring does not hold (or the
// ring is empty).
var ErrNoKey = errors.New("secretbox: sealed under a key that " + EnvKey + " does not hold")

// ErrCorrupt: a sealed value does not open under its key: damaged, or moved
// from the row it was sealed for.
var ErrCorrupt = errors.New("secretbox: a sealed value does not open (damaged, or moved from its row)")

type key struct {
	id   string
	aead cipher.AEAD
}

// Keyring holds the keys. The zero value and nil hold none: they seal
// nothing (values are stored as they are) and open only unsealed values.
type Keyring struct {
	keys []key
}

// Parse reads a keyring: one or more comma-separated standard base64
// encodings of 32 random bytes, the sealing key first. An empty string is
// an empty keyring.
func Parse(s string) (*Keyring, error) {
	k := &Keyring{}
	if strings.TrimSpace(s) == "" {
		return k, nil
	}
	for i, part := range strings.Split(s, ",") {
		raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(part))
		if err != nil || len(raw) != KeySize {
			return nil, fmt.Errorf("key %d is not the base64 encoding of %d bytes (make one with: openssl rand -base64 32)", i+1, KeySize)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		sum := sha256.Sum256(raw)
		id := hex.EncodeToString(sum[:])[:idLen]
		for _, have := range k.keys {
			if have.id == id {
				return nil, fmt.Errorf("key %d is listed twice", i+1)
			}
		}
		k.keys = append(k.keys, key{id: id, aead: aead})
	}
	return k, nil
}

// Enabled reports whether the ring seals (holds at least one key).
func (k *Keyring) Enabled() bool { return k != nil && len(k.keys) > 0 }

// Seal seals plain for the context aad under the first key; with no key it
// returns plain as it is.
func (k *Keyring) Seal(plain []byte, aad string) []byte {
	if !k.Enabled() {
		return plain
	}
	first := k.keys[0]
	nonce := make([]byte, first.aead.NonceSize(), first.aead.NonceSize()+len(plain)+first.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("secretbox: no randomness: %v", err)) // crypto/rand never fails on a supported OS
	}
	sealed := first.aead.Seal(nonce, nonce, plain, []byte(aad))
	out := make([]byte, 0, len(prefix)+idLen+1+base64.RawURLEncoding.EncodedLen(len(sealed)))
	out = append(out, prefix...)
	out = append(out, first.id...)
	out = append(out, ':')
	return base64.RawURLEncoding.AppendEncode(out, sealed)
}

// SealString is Seal for text.
func (k *Keyring) SealString(plain, aad string) string {
	if plain == "" {
		return ""
	}
	return string(k.Seal([]byte(plain), aad))
}

// Open returns the plaintext of stored, sealed for the context aad; a value
// that is not sealed is returned as it is.
func (k *Keyring) Open(stored []byte, aad string) ([]byte, error) {
	rest, ok := strings.CutPrefix(string(stored), prefix)
	if !ok {
		return stored, nil
	}
	id, body, ok := strings.Cut(rest, ":")
	if !ok {
		return nil, ErrCorrupt
	}
	var found *key
	if k != nil {
		for i := range k.keys {
			if k.keys[i].id == id {
				found = &k.keys[i]
			}
		}
	}
	if found == nil {
		return nil, ErrNoKey
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	n := found.aead.NonceSize()
	if err != nil || len(raw) < n+found.aead.Overhead() {
		return nil, ErrCorrupt
	}
	plain, err := found.aead.Open(nil, raw[:n], raw[n:], []byte(aad))
	if err != nil {
		return nil, ErrCorrupt
	}
	return plain, nil
}

// OpenString is Open for text.
func (k *Keyring) OpenString(stored, aad string) (string, error) {
	plain, err := k.Open([]byte(stored), aad)
	return string(plain), err
}

// Current reports whether stored is as Seal would store it now: sealed
// under the first key, or, with no key, not sealed. reencrypt rewrites the
// values that are not.
func (k *Keyring) Current(stored []byte) bool {
	rest, sealed := strings.CutPrefix(string(stored), prefix)
	if !k.Enabled() {
		return !sealed
	}
	return sealed && strings.HasPrefix(rest, k.keys[0].id+":")
}

// HeadLength is how much of a stored value Holds needs: the prefix and the
// sealing key's id.
const HeadLength = len(prefix) + idLen

// Holds reports whether the ring opens values sealed as stored (of which
// the first HeadLength bytes suffice): not sealed, or sealed under a key of
// the ring. It does not prove the value intact; Open does.
func (k *Keyring) Holds(stored []byte) bool {
	rest, sealed := strings.CutPrefix(string(stored), prefix)
	if !sealed {
		return true
	}
	if k == nil || len(rest) < idLen {
		return false
	}
	for _, key := range k.keys {
		if key.id == rest[:idLen] {
			return true
		}
	}
	return false
}

// Sealed reports whether stored is a sealed value.
func Sealed(stored []byte) bool { return strings.HasPrefix(string(stored), prefix) }
