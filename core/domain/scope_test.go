package domain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

func TestParseScopes(t *testing.T) {
	got, err := domain.ParseScopes([]string{"tasks:read", "*", "tasks:read"})
	if err != nil || len(got) != 2 || got[0] != domain.ScopeTasksRead || got[1] != domain.ScopeAll {
		t.Fatalf("duplicates collapse, order kept: %v %v", got, err)
	}
	for _, bad := range [][]string{nil, {}, {"tasks:delete"}, {"TASKS:READ"}, {""}, {"tasks:read", "admin"}} {
		_, err := domain.ParseScopes(bad)
		if e, ok := domain.AsError(err); !ok || e.Code != domain.CodeValidationFailed || e.Param != "scopes" {
			t.Errorf("%q: want validation_failed on scopes, got %v", bad, err)
		}
	}
}

func TestGrantsAndCoversScopes(t *testing.T) {
	s := func(names ...domain.Scope) []domain.Scope { return names }
	for _, c := range []struct {
		held  []domain.Scope
		need  domain.Scope
		grant bool
	}{
		{s(domain.ScopeAll), domain.ScopeWebhooksWrite, true},
		{s(domain.ScopeTasksWrite), domain.ScopeTasksRead, true},
		{s(domain.ScopeTasksRead), domain.ScopeTasksWrite, false},
		{s(domain.ScopeProjectsWrite), domain.ScopeTasksRead, false},
		{s(domain.ScopeAPIKeysWrite), domain.ScopeAPIKeysRead, true},
		{s(), domain.ScopeUsersRead, false},
	} {
		if got := domain.GrantsScope(c.held, c.need); got != c.grant {
			t.Errorf("%v grants %s: got %v", c.held, c.need, got)
		}
	}
	if !domain.CoversScopes(s(domain.ScopeTasksWrite), s(domain.ScopeTasksRead, domain.ScopeTasksWrite)) {
		t.Error("tasks:write covers tasks:read and itself")
	}
	if domain.CoversScopes(domain.Scopes, s(domain.ScopeAll)) {
		t.Error("every named scope does not cover *: * grows with every scope added later")
	}
	if !domain.CoversScopes(s(domain.ScopeAll), domain.Scopes) {
		t.Error("* covers every scope")
	}
}

// Require checks the role first, then the key's scopes, and names the
// scope it needed.
func TestActorRequire(t *testing.T) {
	guest := domain.Actor{Role: domain.RoleGuest, Scopes: []domain.Scope{domain.ScopeTasksWrite}}
	if err := guest.Require(domain.ScopeTasksWrite); !domain.IsCode(err, domain.CodePermissionDenied) {
		t.Fatalf("a guest's key with tasks:write may not write tasks: %v", err)
	}
	if err := guest.Require(domain.ScopeTasksRead); err != nil {
		t.Fatalf("tasks:write includes tasks:read: %v", err)
	}
	err := guest.Require(domain.ScopeProjectsRead)
	if !domain.IsCode(err, domain.CodeInsufficientScope) || !strings.Contains(err.Error(), "projects:read") {
		t.Fatalf("want insufficient_scope naming projects:read, got %v", err)
	}
	all := domain.Actor{Role: domain.RoleAdmin}
	for _, s := range domain.Scopes {
		if err := all.Require(s); err != nil {
			t.Errorf("an admin's unscoped key needs nothing more for %s: %v", s, err)
		}
	}
	if (domain.Actor{}).Require(domain.ScopeUsersRead) == nil {
		t.Error("an actor without a role may do nothing")
	}
	restricted := domain.Actor{Role: domain.RoleAdmin, ProjectIDs: []string{"prj_a"}}
	if !restricted.SeesProject("prj_a") || restricted.SeesProject("prj_b") || !all.SeesProject("prj_b") {
		t.Error("SeesProject")
	}
	if !domain.IsCode(restricted.RequireUnrestricted("create projects"), domain.CodeInsufficientScope) || all.RequireUnrestricted("x") != nil {
		t.Error("RequireUnrestricted")
	}
}

func TestNewAPIKey(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	u := domain.User{ID: "usr_a", WorkspaceID: "wsp_a", Role: domain.RoleMember}
	k, secret, err := domain.NewAPIKey("key_a", u, domain.APIKeyFields{Name: domain.Set(" ci ")}, now)
	if err != nil || k.Name != "ci" || k.Prefix != secret[:12] || k.SecretHash != domain.HashSecret(secret) ||
		len(k.Scopes) != 1 || k.Scopes[0] != domain.ScopeAll || k.ProjectIDs != nil || k.ExpiresAt != nil {
		t.Fatalf("NewAPIKey: %+v %v", k, err)
	}
	if a := k.Actor(u); a.KeyID != "key_a" || a.Role != domain.RoleMember || a.Restricted() {
		t.Fatalf("Actor: %+v", a)
	}
	_, _, err = domain.NewAPIKey("key_b", u, domain.APIKeyFields{Name: domain.Set("x"), ProjectIDs: domain.Set([]string{"prj_a", "prj_a"})}, now)
	if err != nil {
		t.Fatalf("a repeated project: %v", err)
	}
}
