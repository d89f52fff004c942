package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/tools/loadkit"
)

// attacks are tenant A's, running until stop.
type attacks struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	badKeys  counter      // answers to bad keys sent from B's address
	graphql  counter      // answers to A's expensive GraphQL
	searches counter      // answers to A's searches and counts, by attack
	sockets  counter      // how A's sockets ended, or "open"
	done     atomic.Int64 // A's searches, counts and bulk creations answered 2xx
	conns    []*websocket.Conn
}

// expensiveQuery is the costliest GraphQL the default limits admit, near
// 25,000: twelve aliases of 10 projects × 20 tasks with their assignee and
// project, each 1 + 10 × (1 + (1 + 20 × 9)) = 1,821, so 21,852 in all.
var expensiveQuery = func() string {
	var b strings.Builder
	b.WriteString("{")
	for i := range 12 {
		fmt.Fprintf(&b, " a%d: projects(first: 10) { nodes { tasks(first: 20) { nodes { id title status dueAt assignee { id } project { key } } } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}()

// startAttacks starts A's attacks: bad keys at 50 a second from B's
// address (every client here is 127.0.0.1), the expensive GraphQL at a
// key's rate limit through each of A's keys in turn (open loop, up to 8 in
// flight), the webhook backlog (set up already), sockets opened until
// refused, and aSearchers loops of costly searches and counts through A's
// keys.
func startAttacks(ctx context.Context, base string, a loadkit.Client, keys []loadkit.Client, bulkProject string) *attacks {
	ctx, cancel := context.WithCancel(ctx)
	x := &attacks{cancel: cancel}
	bad := loadkit.Client{Base: base, Key: "wtk_" + strings.Repeat("x", 40), HTTP: a.HTTP}
	x.wg.Go(func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			status, _, err := bad.Do(ctx, http.MethodGet, "/v1/users/me", nil)
			if err == nil {
				x.badKeys.add(fmt.Sprint(status))
			}
		}
	})
	x.wg.Go(func() {
		inFlight := make(chan struct{}, 8)
		next := 0
		t := time.NewTicker(time.Second / time.Duration(*flagALimit))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			select {
			case inFlight <- struct{}{}:
			default:
				x.graphql.add("skipped: 8 in flight")
				continue
			}
			key := keys[next%len(keys)]
			next++
			x.wg.Go(func() {
				defer func() { <-inFlight }()
				status, _, err := key.Do(ctx, http.MethodPost, "/graphql", map[string]any{"query": expensiveQuery})
				if err == nil {
					x.graphql.add(fmt.Sprint(status))
				}
			})
		}
	})
	x.openSockets(ctx, strings.Replace(base, "http", "ws", 1)+"/graphql", keys)
	x.startSearches(ctx, keys, bulkProject)
	return x
}

// openSockets opens sockets with A's keys in turn until one is refused (at
// most 40).
func (x *attacks) openSockets(ctx context.Context, url string, keys []loadkit.Client) {
	for i := range 40 {
		key := keys[i%len(keys)].Key
		conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
		if res != nil && res.Body != nil {
			_ = res.Body.Close()
		}
		if err != nil {
			x.sockets.add("upgrade refused")
			return
		}
		init, _ := json.Marshal(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + key}})
		if err := conn.Write(ctx, websocket.MessageText, init); err != nil {
			x.sockets.add("write failed")
			return
		}
		if !x.acked(ctx, conn) {
			return
		}
		x.sockets.add("open")
		x.conns = append(x.conns, conn)
		// The server pings; reading answers them while the socket is held.
		go func() {
			for {
				if _, _, err := conn.Read(ctx); err != nil {
					return
				}
			}
		}()
	}
}

// acked reads conn until connection_ack (true) or its end, counted (false).
func (x *attacks) acked(ctx context.Context, conn *websocket.Conn) bool {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, msg, err := conn.Read(rctx)
		var ce websocket.CloseError
		switch {
		case errors.As(err, &ce):
			x.sockets.add(fmt.Sprintf("closed %d", ce.Code))
			return false
		case err != nil:
			x.sockets.add("dropped")
			return false
		case strings.Contains(string(msg), "connection_ack"):
			return true
		}
	}
}

func (x *attacks) stop() {
	x.cancel()
	x.wg.Wait()
	for _, c := range x.conns {
		_ = c.CloseNow()
	}
}
