package app

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// AuthOptions tune API key resolution.
type AuthOptions struct {
	// CacheTTL bounds how long a resolved key is trusted without asking the
	// database again. A key revoked by another process stops working here
	// within this time. Default 5s (docs/api.md#tenancy-keys-and-roles allows 10s).
	CacheTTL time.Duration
	// CacheSize is the number of keys kept. Default 10,000.
	CacheSize int
	// TouchInterval is the least time between two writes of a key's
	// last_used_at. Default 1 minute.
	TouchInterval time.Duration
}

// Auth resolves API key secrets into actors. Resolving a key must not cost a
// database round trip on every request, so resolved keys are cached for a
// short TTL; revocation takes effect everywhere within that TTL, and at once
// in the process that revoked.
type Auth struct {
	d     AuthDeps
	opts  AuthOptions
	cache *lru.Cache[string, cachedKey]
	// failures is when this process last recorded a failed
	// authentication of each key in the audit log (at most once a minute
	// a key: docs/audit.md).
	failures *lru.Cache[string, time.Time]
	// touching holds the ids of keys whose last_used_at is being written:
	// the other requests of such a key go on without waiting for it.
	touching sync.Map
}

type cachedKey struct {
	key       domain.APIKey
	user      domain.User
	fetchedAt time.Time
}

// AuthDeps are the ports Auth uses. Tx and Audit record the failed
// authentications of known keys; without them none are recorded.
type AuthDeps struct {
	Keys  ports.APIKeyStore
	Clock ports.Clock
	Tx    ports.Transactor
	Audit auditLog
}

// NewAuth makes the key resolver.
func NewAuth(d AuthDeps, o AuthOptions) *Auth {
	mustHave(map[string]any{"Keys": d.Keys, "Clock": d.Clock})
	if o.CacheTTL <= 0 {
		o.CacheTTL = 5 * time.Second
	}
	if o.CacheSize <= 0 {
		o.CacheSize = 10_000
	}
	if o.TouchInterval <= 0 {
		o.TouchInterval = time.Minute
	}
	c, err := lru.New[string, cachedKey](o.CacheSize)
	if err != nil {
		panic(err) // only for a non-positive size, excluded above
	}
	f, err := lru.New[string, time.Time](o.CacheSize)
	if err != nil {
		panic(err)
	}
	return &Auth{d: d, opts: o, cache: c, failures: f}
}

// Authenticate returns the actor behind a bearer token. An empty token is
// missing_api_key; an unknown, malformed, revoked or expired one is
// invalid_api_key, whose message says when an expired key expired (and
// nothing more for the others).
func (a *Auth) Authenticate(ctx context.Context, secret string) (domain.Actor, error) {
	if secret == "" {
		return domain.Actor{}, domain.Errorf(domain.CodeMissingAPIKey,
			"No API key provided. Send 'Authorization: Bearer <API_KEY>'.")
	}
	invalid := domain.Errorf(domain.CodeInvalidAPIKey, "Invalid API key provided.")
	if !domain.WellFormedSecret(secret) {
		return domain.Actor{}, invalid
	}
	now := a.d.Clock.Now()
	hash := domain.HashSecret(secret)
	entry, ok := a.cache.Get(hash)
	if !ok || now.Sub(entry.fetchedAt) >= a.opts.CacheTTL || now.Before(entry.fetchedAt) {
		key, user, err := a.d.Keys.FindAPIKeyByHash(ctx, hash)
		if domain.IsCode(err, domain.CodeNotFound) {
			a.cache.Remove(hash)
			// A secret that names a real key by its prefix, with the rest
			// wrong: someone holds a damaged or guessed copy of that key.
			if k, err := a.d.Keys.FindAPIKeyByPrefix(ctx, domain.KeyPrefix(secret)); err == nil {
				a.recordFailure(ctx, k, now)
			}
			return domain.Actor{}, invalid
		}
		if err != nil {
			return domain.Actor{}, err
		}
		entry = cachedKey{key: key, user: user, fetchedAt: now}
		a.cache.Add(hash, entry)
	}
	if !entry.key.Usable(now) {
		a.recordFailure(ctx, entry.key, now)
		if exp := entry.key.ExpiresAt; exp != nil && !now.Before(*exp) && (entry.key.RevokedAt == nil || now.Before(*entry.key.RevokedAt)) {
			// Only the key's holder reads this: tell them to make a new
			// key rather than hunt for a typo.
			return domain.Actor{}, domain.Errorf(domain.CodeInvalidAPIKey,
				"This API key expired at %s. Create a new key (POST /v1/api_keys, or ask an admin) and use it instead.",
				domain.FormatTime(*exp))
		}
		return domain.Actor{}, invalid
	}
	if err := a.touch(ctx, hash, entry, now); err != nil {
		return domain.Actor{}, err
	}
	return entry.key.Actor(entry.user), nil
}

// failureEvery is the least time between two audit records of one key's
// failed authentications.
const failureEvery = time.Minute

// recordFailure records in the audit log that a request failed to
// authenticate with key k (a wrong secret of its prefix, or the key
// revoked or expired), at most once a minute a key: this process skips
// what it recorded within the minute, and the record checks the log
// under its workspace's chain lock, so that several processes record one.
// A failure to record is not the request's: it is answered 401 all the
// same.
func (a *Auth) recordFailure(ctx context.Context, k domain.APIKey, now time.Time) {
	if a.d.Tx == nil || a.d.Audit.store == nil {
		return
	}
	if last, ok := a.failures.Get(k.ID); ok && now.Sub(last) < failureEvery && !now.Before(last) {
		return
	}
	a.failures.Add(k.ID, now)
	info := ports.RequestInfoFrom(ctx)
	actor := domain.AuditActor{Type: domain.AuditByAPIKey, UserID: k.UserID, APIKeyID: k.ID, IP: info.IP, UserAgent: info.UserAgent}
	_ = a.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if _, err := a.d.Audit.store.LockAuditHead(ctx, k.WorkspaceID); err != nil {
			return err
		}
		last, err := a.d.Audit.store.LastAuditFor(ctx, k.WorkspaceID, domain.AuditAPIKeyAuthFailed, k.ID)
		if err != nil || (!last.IsZero() && now.Sub(last) < failureEvery) {
			return err
		}
		return a.d.Audit.record(ctx, k.WorkspaceID, domain.AuditAPIKeyAuthFailed, actor, keyTarget(k), map[string]domain.AuditChange{})
	})
}

// touch records the key's use at most once per TouchInterval. The store's
// conditional update keeps that bound across processes too. One request
// of a key writes it; the key's other requests meanwhile do not wait for
// that write (on SQLite it waits for the one writer, behind whatever
// transaction holds it).
func (a *Auth) touch(ctx context.Context, hash string, e cachedKey, now time.Time) error {
	if e.key.LastUsedAt != nil && now.Sub(*e.key.LastUsedAt) < a.opts.TouchInterval {
		return nil
	}
	if _, busy := a.touching.LoadOrStore(e.key.ID, struct{}{}); busy {
		return nil
	}
	defer a.touching.Delete(e.key.ID)
	at := domain.Timestamp(now)
	if err := a.d.Keys.TouchAPIKey(ctx, e.key.ID, at); err != nil {
		return err
	}
	e.key.LastUsedAt = &at
	a.cache.Add(hash, e)
	return nil
}

// forget drops a key from this process's cache, so that a revocation made
// here takes effect at once.
func (a *Auth) forget(hash string) { a.cache.Remove(hash) }

// forgetUser drops every key of a user from this process's cache, so that
// a change of the user's role takes effect at once.
func (a *Auth) forgetUser(userID string) {
	for _, hash := range a.cache.Keys() {
		if e, ok := a.cache.Peek(hash); ok && e.user.ID == userID {
			a.cache.Remove(hash)
		}
	}
}
