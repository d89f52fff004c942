package app

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// slowTouchKeys is a key store whose TouchAPIKey waits until released, as
// a write on SQLite waits for the writer behind another workspace's
// transaction.
type slowTouchKeys struct {
	ports.APIKeyStore
	key     domain.APIKey
	user    domain.User
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	touches int
}

func (s *slowTouchKeys) FindAPIKeyByHash(context.Context, string) (domain.APIKey, domain.User, error) {
	return s.key, s.user, nil
}

// TouchAPIKey waits for release on its first call only, so that a second
// write is counted rather than hanging the test.
func (s *slowTouchKeys) TouchAPIKey(context.Context, string, time.Time) error {
	s.mu.Lock()
	s.touches++
	n := s.touches
	s.mu.Unlock()
	if n == 1 {
		s.entered <- struct{}{}
		<-s.release
	}
	return nil
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// While one request of a key writes its last_used_at, the key's other
// requests are answered without waiting for that write, and write it no
// second time.
func TestOtherRequestsOfAKeyDoNotWaitForItsTouch(t *testing.T) {
	secret := "wtk_cmkfEt74IvPEqUIjTawMLtFQMHHzvuGbhceqnwzp"
	if !domain.WellFormedSecret(secret) {
		t.Fatal("the test's secret is not well formed")
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	keys := &slowTouchKeys{
		key:     domain.APIKey{ID: "key_1", WorkspaceID: "wsp_1", UserID: "usr_1", Scopes: nil},
		user:    domain.User{ID: "usr_1", WorkspaceID: "wsp_1", Role: domain.RoleMember},
		entered: make(chan struct{}, 1), release: make(chan struct{}),
	}
	a := NewAuth(AuthDeps{Keys: keys, Clock: fixedClock{now}}, AuthOptions{})

	first := make(chan error, 1)
	go func() {
		_, err := a.Authenticate(context.Background(), secret)
		first <- err
	}()
	<-keys.entered // the first request is writing last_used_at
	for range 3 {
		if _, err := a.Authenticate(context.Background(), secret); err != nil {
			t.Fatalf("a request beside the key's touch: %v", err)
		}
	}
	close(keys.release)
	if err := <-first; err != nil {
		t.Fatalf("the request that touched the key: %v", err)
	}
	keys.mu.Lock()
	defer keys.mu.Unlock()
	if keys.touches != 1 {
		t.Fatalf("last_used_at written %d times, want once", keys.touches)
	}
}
