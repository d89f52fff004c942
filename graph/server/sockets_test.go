package server

import (
	"strconv"
	"testing"

	"github.com/worktrack/worktrack/core/domain"
)

// A workspace's users share the workspace's sockets: past
// MaxSocketsPerWorkspace, a new user's socket is refused naming the
// workspace, and another workspace's is counted apart. Closing one frees
// its place under each of the three counts.
func TestSocketsPerWorkspaceAreCapped(t *testing.T) {
	ss := newSockets(nil, 0)
	var sockets []*socket
	for i := range MaxSocketsPerWorkspace {
		s := &socket{pendingAs: "addr"}
		ss.pending["addr"]++
		n := strconv.Itoa(i / MaxSocketsPerUser)
		a := domain.Actor{KeyID: "key_" + n, UserID: "usr_" + n, WorkspaceID: "wsp_A"}
		if err := ss.initialised(s, a); err != nil {
			t.Fatalf("socket %d: %v", i+1, err)
		}
		sockets = append(sockets, s)
	}
	ss.pending["addr"]++
	err := ss.initialised(&socket{pendingAs: "addr"}, domain.Actor{KeyID: "key_new", UserID: "usr_new", WorkspaceID: "wsp_A"})
	if e, ok := domain.AsError(err); !ok || e.Limit != domain.LimitSocketsPerWorkspace || e.Code != domain.CodeTooManyRequests {
		t.Fatalf("the workspace's socket %d: %v, want too_many_requests naming sockets_per_workspace", MaxSocketsPerWorkspace+1, err)
	}
	if err := ss.initialised(&socket{pendingAs: "addr"}, domain.Actor{KeyID: "key_other", UserID: "usr_other", WorkspaceID: "wsp_B"}); err != nil {
		t.Fatalf("another workspace's socket: %v", err)
	}
	ss.open[sockets[0]] = struct{}{}
	ss.done.Add(1)
	ss.remove(sockets[0])
	ss.pending["addr"]++
	if err := ss.initialised(&socket{pendingAs: "addr"}, domain.Actor{KeyID: "key_new", UserID: "usr_new", WorkspaceID: "wsp_A"}); err != nil {
		t.Fatalf("after one closed: %v", err)
	}
}
