package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// SecretPrefix starts every API key secret.
const SecretPrefix = "wtk_"

// secretRandomChars is the length of the random part of a key secret
// (40 base62 characters ≈ 238 bits; docs/api.md asks for at least 32).
const secretRandomChars = 40

// PrefixLength is how much of a secret a key shows (docs/keys.md): wtk_ and
// 8 characters, enough to recognise a key, never to use it.
const PrefixLength = len(SecretPrefix) + 8

// Limits of API keys (docs/keys.md).
const (
	MaxAPIKeysPerUser  = 100 // unrevoked keys of one user
	MaxKeyProjects     = 50  // projects a restricted key names
	MaxKeyNameLength   = 100
	MaxKeyLifetimeDays = 3650 // expires_at at most ten years ahead
)

// APIKey is a credential of one user. Only the SHA-256 of its secret is
// kept, and its Prefix to recognise it by. What it may do is its Scopes
// intersected with its user's role at each request; ProjectIDs, when not
// nil, are the only projects it sees.
type APIKey struct {
	ID          string
	WorkspaceID string
	UserID      string
	Name        string
	Prefix      string
	SecretHash  string
	Scopes      []Scope
	ProjectIDs  []string
	CreatedAt   time.Time
	ExpiresAt   *time.Time
	RevokedAt   *time.Time
	LastUsedAt  *time.Time
}

// APIKeyFields are a key's fields as a request carries them, unvalidated:
// NewAPIKey takes them for a creation, APIKey.Apply for a merge patch (the
// name alone changes after creation). UserID names the key's user; the
// service decides who may name another.
type APIKeyFields struct {
	Name       Field[string]
	Scopes     Field[[]string]
	ProjectIDs Field[[]string]
	ExpiresAt  Field[time.Time]
	UserID     Field[string]
}

// NewAPIKey makes a key for user with a fresh secret, which is returned
// once and never stored: name required (1 to 100 characters after
// trimming), scopes default ["*"], project_ids 1 to 50 project ids or
// absent (every project), expires_at in the future and at most ten years
// ahead, or absent. That the projects exist is checked by the caller, which
// can see them.
func NewAPIKey(id string, user User, in APIKeyFields, now time.Time) (APIKey, string, error) {
	name, err := mandatory("name", in.Name)
	if err != nil {
		return APIKey{}, "", err
	}
	if name, err = keyName(name); err != nil {
		return APIKey{}, "", err
	}
	k := APIKey{ID: id, WorkspaceID: user.WorkspaceID, UserID: user.ID, Name: name, CreatedAt: Timestamp(now)}
	if k.Scopes, err = keyScopes(in.Scopes); err != nil {
		return APIKey{}, "", err
	}
	if k.ProjectIDs, err = keyProjects(in.ProjectIDs); err != nil {
		return APIKey{}, "", err
	}
	if exp, ok := in.ExpiresAt.Get(); ok {
		if err := CheckTime("expires_at", exp); err != nil {
			return APIKey{}, "", err
		}
		exp = Timestamp(exp)
		if !exp.After(now) || exp.After(now.AddDate(0, 0, MaxKeyLifetimeDays)) {
			return APIKey{}, "", Invalid("expires_at", "Must be in the future, and at most ten years ahead.")
		}
		k.ExpiresAt = &exp
	}
	secret := SecretPrefix + RandomBase62(secretRandomChars)
	k.SecretHash, k.Prefix = HashSecret(secret), secret[:PrefixLength]
	return k, secret, nil
}

func keyName(name string) (string, error) { return cleanName("name", name, MaxKeyNameLength) }

func keyScopes(f Field[[]string]) ([]Scope, error) {
	if !f.Present {
		return []Scope{ScopeAll}, nil
	}
	names, ok := f.Get()
	if !ok {
		return nil, Invalid("scopes", "Must not be null; leave it out for every scope.")
	}
	return ParseScopes(names)
}

func keyProjects(f Field[[]string]) ([]string, error) {
	if !f.Present {
		return nil, nil
	}
	ids, ok := f.Get()
	if !ok {
		return nil, Invalid("project_ids", "Must not be null; leave it out for every project.")
	}
	if len(ids) == 0 || len(ids) > MaxKeyProjects {
		return nil, Invalid("project_ids", "Must name 1 to %d projects.", MaxKeyProjects)
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !IsID(id, PrefixProject) {
			return nil, Invalid("project_ids", "Must hold project ids of this workspace.")
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// Apply returns the key with patch applied and whether it changed: the
// name alone may change; scopes, projects, expiry and user are fixed after
// creation (validation_failed naming them).
func (k APIKey) Apply(patch APIKeyFields) (APIKey, bool, error) {
	fixed := []struct {
		param   string
		present bool
	}{
		{"scopes", patch.Scopes.Present}, {"project_ids", patch.ProjectIDs.Present},
		{"expires_at", patch.ExpiresAt.Present}, {"user_id", patch.UserID.Present},
	}
	for _, f := range fixed {
		if f.present {
			return k, false, Invalid(f.param, "Is fixed after creation; create a new key instead.")
		}
	}
	if !patch.Name.Present {
		return k, false, nil
	}
	v, err := required("name", patch.Name)
	if err != nil {
		return k, false, err
	}
	name, err := keyName(v)
	if err != nil || name == k.Name {
		return k, false, err
	}
	k.Name = name
	return k, true, nil
}

// ScopeNames are the key's scopes as the APIs name them.
func (k APIKey) ScopeNames() []string { return scopeNames(k.Scopes) }

// Actor is the caller a request with this key, of user u, acts as.
func (k APIKey) Actor(u User) Actor {
	return Actor{UserID: u.ID, WorkspaceID: u.WorkspaceID, Role: u.Role, KeyID: k.ID, Scopes: k.Scopes, ProjectIDs: k.ProjectIDs,
		KeyExpiresAt: k.ExpiresAt}
}

// HashSecret is the stored form of a secret: hex SHA-256. Secrets carry enough
// entropy that a slow password hash would add cost and nothing else.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// KeyPrefix is the prefix a secret shows (APIKey.Prefix): its first
// PrefixLength characters.
func KeyPrefix(secret string) string {
	if len(secret) < PrefixLength {
		return secret
	}
	return secret[:PrefixLength]
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
