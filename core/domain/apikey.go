package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "wtk_"

// secretRandomChars is the length of the random part of a key secret
// (40 base62 characters ≈ 238 bits; docs/api.md asks for at least 32).
const secretRandomChars = 40

// APIKey is a credential of one user. Only the SHA-256 of its secret is kept.
type APIKey struct {
	ID          string
	WorkspaceID string
	UserID      string
	Name        string
	SecretHash  string
	CreatedAt   time.Time
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	LastUsedAt  *time.Time
}

// NewAPIKey makes a key for user with a fresh secret. The secret is returned
// once and never stored.
func NewAPIKey(id string, user User, name string, ttl time.Duration, now time.Time) (APIKey, string, error) {
	name = strings.TrimSpace(name)
	if len(name) > 200 {
		return APIKey{}, "", Invalid("name", "Must be at most 200 characters.")
	}
	if ttl < 0 {
		return APIKey{}, "", Invalid("expires-in", "Must be positive.")
	}
	secret := SecretPrefix + RandomBase62(secretRandomChars)
	k := APIKey{
		ID: id, WorkspaceID: user.WorkspaceID, UserID: user.ID, Name: name,
		SecretHash: HashSecret(secret), CreatedAt: Timestamp(now),
	}
	if ttl > 0 {
		exp := Timestamp(now.Add(ttl))
		k.ExpiresAt = &exp
	}
	return k, secret, nil
}

// HashSecret is the stored form of a secret: hex SHA-256. Secrets carry enough
// entropy that a slow password hash would add cost and nothing else.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// WellFormedSecret reports whether s has the shape of a key secret, so that
// malformed tokens are refused without a database round trip.
func WellFormedSecret(s string) bool {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	return ok && len(rest) >= 32 && len(rest) <= 128 && IsBase62(rest)
}

// Usable reports whether the key may authenticate at now: neither revoked
// nor expired.
func (k APIKey) Usable(now time.Time) bool {
	if k.RevokedAt != nil && !now.Before(*k.RevokedAt) {
		return false
	}
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return false
	}
	return true
}
