package server

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
)

// Sockets are the open GraphQL WebSockets of this process. Mount returns
// them, so that the server closes them on shutdown (Close).
type Sockets struct {
	auth     *app.Auth
	keyCheck time.Duration // how often open sockets' keys are resolved again
	mu       sync.Mutex
	open     map[*socket]struct{}
	held     map[string]int // initialised sockets by key, user and workspace (socketHolders)
	pending  map[string]int // sockets before connection_init by socket.pendingAs
	closed   bool
	done     sync.WaitGroup // one per socket, until its TCP connection closed
	watching sync.Once
	stop     chan struct{}
}

func newSockets(auth *app.Auth, keyCheck time.Duration) *Sockets {
	return &Sockets{
		auth: auth, keyCheck: keyCheck, open: map[*socket]struct{}{}, held: map[string]int{}, pending: map[string]int{},
		stop: make(chan struct{}),
	}
}

// watchKeys resolves the keys of the open sockets again every keyCheck,
// each distinct key once, and closes with 4403 the sockets whose key no
// longer resolves (revoked, expired), and those whose user's role changed
// since connection_init (a socket's operations act with the role it
// authenticated with: a demoted user must connect again), until Close.
func (ss *Sockets) watchKeys() {
	t := time.NewTicker(ss.keyCheck)
	defer t.Stop()
	for {
		select {
		case <-ss.stop:
			return
		case <-t.C:
		}
		bySecret := map[string][]*socket{}
		ss.mu.Lock()
		for s := range ss.open {
			if secret := s.authenticated(); secret != "" {
				bySecret[secret] = append(bySecret[secret], s)
			}
		}
		ss.mu.Unlock()
		for secret, sockets := range bySecret {
			who, err := ss.auth.Authenticate(context.Background(), secret)
			if c := domain.ErrorCode(err); err != nil && (c == domain.CodeInvalidAPIKey || c == domain.CodeMissingAPIKey) {
				for _, s := range sockets {
					s.closeWith(CloseForbidden, "invalid_api_key: The API key was revoked or has expired.")
				}
				continue
			}
			for _, s := range sockets {
				if err == nil && who.Role != s.initRole() {
					s.closeWith(CloseForbidden, "permission_denied: The key's user changed role; connect again.")
				}
			}
		}
	}
}

// add registers s, waiting for its connection_init. It is refused once
// Close has begun (service_unavailable), and when what it counts against
// until then (its client address, or the valid key of its upgrade request)
// holds MaxPendingSocketsPerAddress sockets waiting already
// (too_many_requests).
func (ss *Sockets) add(s *socket) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return domain.Errorf(domain.CodeUnavailable, "The server is shutting down; connect again in a moment.")
	}
	if ss.pending[s.pendingAs] >= MaxPendingSocketsPerAddress {
		return domain.Refusal(domain.CodeTooManyRequests, domain.LimitPendingSockets,
			"Your %s holds %d WebSockets that have not sent connection_init yet, the most it may.",
			strings.Fields(s.pendingAs)[0], MaxPendingSocketsPerAddress)
	}
	ss.watching.Do(func() { go ss.watchKeys() })
	ss.open[s] = struct{}{}
	ss.pending[s.pendingAs]++
	ss.done.Add(1)
	return nil
}

// socketHolder is what an initialised socket counts against, and the most
// sockets it may hold.
type socketHolder struct {
	name  string // "key:…", "user:…" or "workspace:…"
	max   int
	limit string // the refusal's limit
	what  string // in the refusal's message
}

// socketHolders are a's: its key, its user and its workspace, so that
// minting keys buys no more sockets.
func socketHolders(a domain.Actor) [3]socketHolder {
	return [3]socketHolder{
		{"key:" + a.KeyID, MaxSocketsPerKey, domain.LimitSockets, "This API key"},
		{"user:" + a.UserID, MaxSocketsPerUser, domain.LimitSocketsPerUser, "This API key's user"},
		{"workspace:" + a.WorkspaceID, MaxSocketsPerWorkspace, domain.LimitSocketsPerWorkspace, "This workspace"},
	}
}

// initialised counts s, whose connection_init authenticated a, against
// a's key, user and workspace rather than its address; too_many_requests
// naming the first of them that holds its most sockets already.
func (ss *Sockets) initialised(s *socket, a domain.Actor) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	holders := socketHolders(a)
	for _, h := range holders {
		if ss.held[h.name] >= h.max {
			return domain.Refusal(domain.CodeTooManyRequests, h.limit,
				"%s holds %d open WebSockets already, the most it may. Close one before you open another.", h.what, h.max)
		}
	}
	for _, h := range holders {
		ss.held[h.name]++
		s.counted = append(s.counted, h.name)
	}
	ss.forgetPending(s.pendingAs)
	return nil
}

func (ss *Sockets) forgetPending(as string) {
	if ss.pending[as]--; ss.pending[as] <= 0 {
		delete(ss.pending, as)
	}
}

// release gives back the places s holds (its address's or key's while it
// waits for connection_init, its key's, user's and workspace's once
// initialised) as soon as it is closed, before its close handshake ends.
// Only its first call counts.
func (ss *Sockets) release(s *socket) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.released {
		return
	}
	s.released = true
	if len(s.counted) > 0 {
		for _, name := range s.counted {
			if ss.held[name]--; ss.held[name] <= 0 {
				delete(ss.held, name)
			}
		}
	} else {
		ss.forgetPending(s.pendingAs)
	}
}

// remove forgets s once its connection has closed, and gives back its
// places if release has not.
func (ss *Sockets) remove(s *socket) {
	ss.release(s)
	ss.mu.Lock()
	delete(ss.open, s)
	ss.mu.Unlock()
	ss.done.Done()
}

// Len is how many sockets are open.
func (ss *Sockets) Len() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.open)
}

// Close refuses new sockets and closes the open ones with 1001 (going
// away), then waits, until ctx ends, for their close handshakes.
func (ss *Sockets) Close(ctx context.Context) error {
	ss.mu.Lock()
	if !ss.closed {
		close(ss.stop)
	}
	ss.closed = true
	open := make([]*socket, 0, len(ss.open))
	for s := range ss.open {
		open = append(open, s)
	}
	ss.mu.Unlock()
	for _, s := range open {
		s.closeWith(websocket.StatusGoingAway, "The server is shutting down. Reconnect, and resume with after.")
	}
	done := make(chan struct{})
	go func() {
		ss.done.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
