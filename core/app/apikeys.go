package app

import (
	"context"
	"slices"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// APIKeys is the self-service key use cases (docs/keys.md): every user
// manages their own keys, an admin every key of the workspace. A key never
// makes a key that may do more, or see more projects, than itself.
type APIKeys struct {
	d    keyDeps
	auth *Auth
}

// keyDeps are the ports the key use cases use, the operator's included.
type keyDeps struct {
	Tx       ports.Transactor
	Clock    ports.Clock
	IDs      ports.IDGenerator
	Keys     ports.APIKeyStore
	Users    ports.UserStore
	Projects ports.ProjectStore
	Answers  ports.AnswerStore
	Audit    auditLog
}

// NewAPIKeys makes the key use cases; auth is this process's key resolver,
// whose cache a revocation clears at once.
func NewAPIKeys(d keyDeps, auth *Auth) *APIKeys {
	mustHave(map[string]any{
		"Tx": d.Tx, "Clock": d.Clock, "IDs": d.IDs, "Keys": d.Keys, "Users": d.Users, "Projects": d.Projects,
		"Answers": d.Answers,
	})
	if auth == nil {
		panic("app: missing Auth")
	}
	return &APIKeys{d: d, auth: auth}
}

// owns reports whether the actor may manage key k: its own, or any key of
// its workspace for an admin, and only while the actor's key covers k.
func owns(a domain.Actor, k domain.APIKey) bool {
	return k.WorkspaceID == a.WorkspaceID && (k.UserID == a.UserID || a.Role == domain.RoleAdmin) && exceeds(a, k) == ""
}

// exceeds names what of key k the actor's own key does not cover ("" when
// it covers all of it): scopes beyond its own, projects beyond its own
// (every project, for an unrestricted k), or a life beyond its own expiry.
// A key lists, renames and revokes only the keys it covers, and makes none
// that it does not (docs/keys.md#what-a-key-may-manage).
func exceeds(a domain.Actor, k domain.APIKey) string {
	if a.Scopes != nil && !domain.CoversScopes(a.Scopes, k.Scopes) {
		return "scopes"
	}
	if a.Restricted() && (k.ProjectIDs == nil || slices.ContainsFunc(k.ProjectIDs, func(p string) bool { return !a.SeesProject(p) })) {
		return "project_ids"
	}
	if a.KeyExpiresAt != nil && (k.ExpiresAt == nil || k.ExpiresAt.After(*a.KeyExpiresAt)) {
		return "expires_at"
	}
	return ""
}

// Get returns a key the actor may manage, or resource_not_found.
func (s *APIKeys) Get(ctx context.Context, a domain.Actor, id string) (domain.APIKey, error) {
	if err := a.Require(domain.ScopeAPIKeysRead); err != nil {
		return domain.APIKey{}, err
	}
	return s.find(ctx, a, id)
}

func (s *APIKeys) find(ctx context.Context, a domain.Actor, id string) (domain.APIKey, error) {
	if !domain.IsID(id, domain.PrefixAPIKey) {
		return domain.APIKey{}, domain.NotFound("api_key", id)
	}
	k, err := s.d.Keys.FindAPIKeyByID(ctx, id)
	if err == nil && !owns(a, k) {
		return domain.APIKey{}, domain.NotFound("api_key", id)
	}
	return k, err
}

// maxCoverReads bounds the statements one page of a narrow key's list
// reads (see List).
const maxCoverReads = 10

// List pages through the keys the actor may manage, oldest first: an
// admin's of the workspace, anyone else's own; userID narrows them to one
// user's (another user's are none, for a non-admin).
func (s *APIKeys) List(ctx context.Context, a domain.Actor, userID *string, req domain.PageRequest) (domain.Page[domain.APIKey], error) {
	var none domain.Page[domain.APIKey]
	if err := a.Require(domain.ScopeAPIKeysRead); err != nil {
		return none, err
	}
	if userID != nil && !domain.IsID(*userID, domain.PrefixUser) {
		return none, domain.Invalid("user_id", "Must be the id of a user of this workspace.")
	}
	f := ports.APIKeyFilter{WorkspaceID: a.WorkspaceID, UserID: userID}
	k, err := req.Keyset(apiKeyListScope(a.WorkspaceID, userID))
	if err != nil {
		return none, err
	}
	if a.Role != domain.RoleAdmin {
		if userID != nil && *userID != a.UserID {
			return domain.NewPage([]domain.APIKey{}, k, domain.APIKey.Position), nil
		}
		f.UserID = &a.UserID
	}
	f.After, f.Limit = k.After, k.Rows()
	keys, err := s.d.Keys.FindAPIKeys(ctx, f)
	if err != nil {
		return none, err
	}
	if a.Scopes == nil && !a.Restricted() && a.KeyExpiresAt == nil {
		return domain.NewPage(keys, k, domain.APIKey.Position), nil
	}
	// A narrower key sees only the keys it covers: read on past those it
	// does not until the page is full or the list ends, at most
	// maxCoverReads statements (a page may then come short, with a cursor
	// that goes on).
	covered := make([]domain.APIKey, 0, len(keys))
	for reads := 1; ; reads++ {
		for _, key := range keys {
			if exceeds(a, key) == "" {
				covered = append(covered, key)
			}
		}
		if len(keys) < f.Limit || len(covered) >= f.Limit {
			return domain.NewPage(covered, k, domain.APIKey.Position), nil
		}
		if reads == maxCoverReads {
			// Short of a page: its cursor resumes after the last key read,
			// not the last one shown, so the next page reads on.
			page := domain.NewPage(covered, k, domain.APIKey.Position)
			page.HasMore = true
			page.NextCursor = domain.NewPage(keys[len(keys)-1:], k, domain.APIKey.Position).Cursor(0)
			return page, nil
		}
		last := keys[len(keys)-1].Position()
		f.After = &last
		if keys, err = s.d.Keys.FindAPIKeys(ctx, f); err != nil {
			return none, err
		}
	}
}

// Create makes a key and returns its secret, shown only here: for the
// actor's user, or, for an admin, the user named by UserID. Its scopes and
// projects may not exceed the actor's own key's (validation_failed, param
// scopes or project_ids); resource_limit_reached past MaxAPIKeysPerUser
// unrevoked keys.
func (s *APIKeys) Create(ctx context.Context, a domain.Actor, in domain.APIKeyFields) (domain.APIKey, string, error) {
	if err := a.Require(domain.ScopeAPIKeysWrite); err != nil {
		return domain.APIKey{}, "", err
	}
	owner := a.UserID
	if id, ok := in.UserID.Get(); ok && id != a.UserID {
		if a.Role != domain.RoleAdmin {
			return domain.APIKey{}, "", domain.Forbidden("Only an admin makes keys for another user.")
		}
		owner = id
	}
	if !domain.IsID(owner, domain.PrefixUser) {
		return domain.APIKey{}, "", domain.Invalid("user_id", "Must be the id of a user of this workspace.")
	}
	u, err := s.d.Users.FindUserByID(ctx, a.WorkspaceID, owner)
	if domain.IsCode(err, domain.CodeNotFound) {
		return domain.APIKey{}, "", domain.Invalid("user_id", "Must be the id of a user of this workspace.")
	}
	if err != nil {
		return domain.APIKey{}, "", err
	}
	return createKey(ctx, s.d, u, in, auditActor(ctx, a), func(k domain.APIKey) error { return noEscalation(a, k) })
}

// noEscalation refuses a key that may do more, see more projects or live
// longer than the actor's own.
func noEscalation(a domain.Actor, k domain.APIKey) error {
	switch exceeds(a, k) {
	case "scopes":
		return domain.Invalid("scopes", "Must be among this API key's own scopes.")
	case "project_ids":
		return domain.Invalid("project_ids", "Must be among this API key's own projects.")
	case "expires_at":
		return domain.Invalid("expires_at", "Must be no later than this API key's own expiry, %s: a key never outlives the key that made it.",
			a.KeyExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// createKey makes and stores a key of u: the rules of NewAPIKey, the
// projects existing in the workspace, check (when not nil), and the cap of
// unrevoked keys per user, counted under the user's lock. Its audit record
// names by as the actor.
func createKey(ctx context.Context, d keyDeps, u domain.User, in domain.APIKeyFields, by domain.AuditActor, check ...func(domain.APIKey) error) (domain.APIKey, string, error) {
	k, secret, err := domain.NewAPIKey(d.IDs.NewID(domain.PrefixAPIKey), u, in, d.Clock.Now())
	if err != nil {
		return domain.APIKey{}, "", err
	}
	for _, c := range check {
		if err := c(k); err != nil {
			return domain.APIKey{}, "", err
		}
	}
	if k.ProjectIDs != nil {
		found, err := d.Projects.FindProjectsByIDs(ctx, u.WorkspaceID, k.ProjectIDs)
		if err != nil {
			return domain.APIKey{}, "", err
		}
		if len(found) != len(k.ProjectIDs) {
			return domain.APIKey{}, "", domain.Invalid("project_ids", "Must hold project ids of this workspace.")
		}
	}
	err = d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := claimKey(ctx, d.Answers); err != nil {
			return err
		}
		n, err := d.Keys.CountUnrevokedAPIKeys(ctx, u.ID)
		if err != nil {
			return err
		}
		if n >= domain.MaxAPIKeysPerUser {
			return domain.Refusal(domain.CodeLimitReached, domain.LimitAPIKeys,
				"This user holds %d keys, the most they may. Revoke one before you create another.", domain.MaxAPIKeysPerUser)
		}
		if err := d.Keys.CreateAPIKey(ctx, k); err != nil {
			return err
		}
		// The answer kept for a replay shows the key without its secret:
		// only the secret's hash is stored.
		if err := commitAnswer(ctx, d.Answers, k); err != nil {
			return err
		}
		return d.Audit.record(ctx, u.WorkspaceID, domain.AuditAPIKeyCreated, by, keyTarget(k), domain.ChangesKeyCreated(k))
	})
	if err != nil {
		return domain.APIKey{}, "", err
	}
	return k, secret, nil
}

// Update renames a key the actor may manage (the name alone changes).
func (s *APIKeys) Update(ctx context.Context, a domain.Actor, id string, patch domain.APIKeyFields) (domain.APIKey, error) {
	if err := a.Require(domain.ScopeAPIKeysWrite); err != nil {
		return domain.APIKey{}, err
	}
	k, err := s.find(ctx, a, id)
	if err != nil {
		return domain.APIKey{}, err
	}
	next, changed, err := k.Apply(patch)
	if err != nil || !changed {
		return next, err
	}
	return next, s.d.Tx.InTx(ctx, func(ctx context.Context) error {
		if err := s.d.Keys.RenameAPIKey(ctx, k.ID, next.Name); err != nil {
			return err
		}
		return s.d.Audit.record(ctx, k.WorkspaceID, domain.AuditAPIKeyRenamed, auditActor(ctx, a), keyTarget(k), domain.ChangesKeyRenamed(k, next))
	})
}

// keyTarget names a key as an audit record's target.
func keyTarget(k domain.APIKey) domain.AuditTarget {
	return domain.AuditTarget{Type: domain.AuditTargetAPIKey, ID: k.ID}
}

// revokeKey revokes a key and records it, in one transaction. Revoking a
// key revoked already changes nothing and records nothing.
func revokeKey(ctx context.Context, d keyDeps, id string, by domain.AuditActor) (domain.APIKey, error) {
	var k domain.APIKey
	err := d.Tx.InTx(ctx, func(ctx context.Context) error {
		at := domain.Timestamp(d.Clock.Now())
		var err error
		if k, err = d.Keys.RevokeAPIKey(ctx, id, at); err != nil {
			return err
		}
		if k.RevokedAt == nil || !k.RevokedAt.Equal(at) {
			return nil
		}
		return d.Audit.record(ctx, k.WorkspaceID, domain.AuditAPIKeyRevoked, by, keyTarget(k), domain.ChangesKeyRevoked(k))
	})
	return k, err
}

// Revoke revokes a key the actor may manage; the key stays listed with
// revoked_at. It stops working at once in this process and within the key
// cache TTL in every other; its sockets close within 10 seconds.
func (s *APIKeys) Revoke(ctx context.Context, a domain.Actor, id string) (domain.APIKey, error) {
	if err := a.Require(domain.ScopeAPIKeysWrite); err != nil {
		return domain.APIKey{}, err
	}
	k, err := s.find(ctx, a, id)
	if err != nil {
		return domain.APIKey{}, err
	}
	k, err = revokeKey(ctx, s.d, k.ID, auditActor(ctx, a))
	if err != nil {
		return domain.APIKey{}, err
	}
	s.auth.forget(k.SecretHash)
	return k, nil
}
