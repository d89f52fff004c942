package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/core/domain"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// base is the fixtures' clock: a fixed instant with microseconds, so that
// round trips must keep them.
var base = time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)

func newWorkspace(t *testing.T, db *store.DB) domain.Workspace {
	t.Helper()
	w, err := domain.NewWorkspace(domain.NewID(domain.PrefixWorkspace), "Acme", base)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Workspaces().CreateWorkspace(context.Background(), w); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	return w
}

func newUser(t *testing.T, db *store.DB, ws domain.Workspace, email string, at time.Time) domain.User {
	t.Helper()
	u, err := domain.NewUser(domain.NewID(domain.PrefixUser), ws.ID, email, "Ada Lovelace", domain.RoleMember, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Users().CreateUser(context.Background(), u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

func makeProject(t testing.TB, ws domain.Workspace, key string, at time.Time) domain.Project {
	t.Helper()
	p, err := domain.NewProject(domain.NewID(domain.PrefixProject), ws.ID, domain.ProjectFields{Name: domain.Set("Project " + key), Key: domain.Set(key)}, at)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newProject(t *testing.T, db *store.DB, ws domain.Workspace, key string, at time.Time) domain.Project {
	t.Helper()
	p := makeProject(t, ws, key, at)
	if err := db.Projects().CreateProject(context.Background(), p); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	return p
}

func newKey(t *testing.T, db *store.DB, u domain.User, ttl time.Duration, at time.Time) domain.APIKey {
	t.Helper()
	f := domain.APIKeyFields{Name: domain.Set("ci")}
	if ttl > 0 {
		f.ExpiresAt = domain.Set(at.Add(ttl))
	}
	k, _, err := domain.NewAPIKey(domain.NewID(domain.PrefixAPIKey), u, f, at)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.APIKeys().CreateAPIKey(context.Background(), k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	return k
}

func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

// wantCode fails unless err is a *domain.Error with code and param.
func wantCode(t *testing.T, err error, code domain.Code, param string) {
	t.Helper()
	wantError(t, err, code, param, "")
}

// wantError is wantCode that also checks the message, unless it is "".
func wantError(t *testing.T, err error, code domain.Code, param, message string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("error = %v (%T), want a domain error %s", err, err, code)
	}
	if de.Code != code || de.Param != param {
		t.Fatalf("error = code %q param %q (%v), want code %q param %q", de.Code, de.Param, de, code, param)
	}
	if message != "" && de.Message != message {
		t.Fatalf("message = %q, want %q", de.Message, message)
	}
}
