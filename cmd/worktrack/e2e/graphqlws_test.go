package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
	"github.com/worktrack/worktrack/tools/nodetest"
)

// graphqlWS is the graphql-ws npm client, installed by make graphql-ws-client.
var graphqlWS = nodetest.Tool{
	Dir:        filepath.Join("..", "..", "..", "tools", "graphql-ws-client"),
	Package:    "graphql-ws",
	Install:    "make graphql-ws-client",
	RequireEnv: "WORKTRACK_REQUIRE_NODE_GRAPHQL_WS",
}

// wsClient is one run of tools/graphql-ws-client/client.mjs: its JSON lines,
// as they come, and its stdin.
type wsClient struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any
	done  chan struct{}
}

func runGraphQLWS(t *testing.T, node string, opts map[string]any) *wsClient {
	t.Helper()
	raw, _ := json.Marshal(opts)
	cmd := exec.Command(node, filepath.Join(graphqlWS.Dir, "client.mjs"), string(raw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr proctest.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &wsClient{t: t, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 100_000), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				c.lines <- map[string]any{"bad": sc.Text()}
				continue
			}
			c.lines <- m
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() && stderr.String() != "" {
			t.Logf("graphql-ws client stderr:\n%s", stderr.String())
		}
	})
	return c
}

// next is the client's next line, failing the test after wait.
func (c *wsClient) next(wait time.Duration) map[string]any {
	c.t.Helper()
	select {
	case m, ok := <-c.lines:
		if ok {
			return m
		}
	case <-time.After(wait):
		c.t.Fatalf("graphql-ws client: nothing within %s", wait)
	}
	c.t.Fatal("graphql-ws client exited")
	return nil
}

// quiet fails when the client prints anything within wait.
func (c *wsClient) quiet(wait time.Duration) {
	c.t.Helper()
	select {
	case m := <-c.lines:
		c.t.Fatalf("graphql-ws client: unexpected %v", m)
	case <-time.After(wait):
	}
}

// closedWith waits for the client to report the socket closed.
func (c *wsClient) closedWith(wait time.Duration) (code float64, reason string) {
	c.t.Helper()
	for {
		m := c.next(wait)
		if closed, ok := m["closed"].(map[string]any); ok {
			return closed["code"].(float64), fmt.Sprint(closed["reason"])
		}
	}
}

// cli runs an admin command of the binary on the server's database and
// decodes its JSON answer.
func cli(t *testing.T, bin, dir string, env []string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("worktrack %s: %v %s", strings.Join(args, " "), err, out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("worktrack %s: %s", strings.Join(args, " "), out)
	}
	return m
}

func wsURL(base string) string { return "ws" + strings.TrimPrefix(base, "http") + "/graphql" }

const dashboardQuery = `subscription($types: [WebhookEventType!], $projectId: ID, $after: ID) {
	events(types: $types, projectId: $projectId, after: $after) {
		id type projectId payload task { id title assignee { email } project { key } } project { key } } }`

// The graphql-ws client, as a dashboard runs it, against `worktrack serve`
// on each database: a REST change reaches it within a second; its filters
// hold; another workspace's events never reach it; a bad key and a revoked
// one are closed with 4403; the 21st subscription and a subscribe past the
// rate limit are refused; and on SIGTERM the socket closes with 1001.
func TestGraphQLWSClient(t *testing.T) {
	node := graphqlWS.Require(t)
	bin := buildBinary(t)
	for _, database := range []string{"sqlite", "postgres"} {
		t.Run(database, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"WORKTRACK_RATE_LIMIT=60"}
			if database == "postgres" {
				env = append(env, "DATABASE_URL="+storetest.PostgresURL(t))
			} else {
				env = append(env, "DATABASE_URL=sqlite://"+filepath.Join(dir, "worktrack.db"))
			}
			srv := proctest.Serve(t, bin, dir, env...)
			admin := proctest.SecretRe.FindString(srv.Stderr.String())
			prj := post(t, srv.Base+"/v1/projects", admin, map[string]any{"name": "Live", "key": "LIV"})["id"].(string)
			other := post(t, srv.Base+"/v1/projects", admin, map[string]any{"name": "Other", "key": "OTH"})["id"].(string)
			ws := cli(t, bin, dir, env, "workspace", "create", "--name", "Globex")["id"].(string)
			cli(t, bin, dir, env, "user", "create", "--workspace", ws, "--email", "otto@globex.test", "--name", "Otto", "--role", "admin")
			foreignKey := cli(t, bin, dir, env, "key", "create", "--email", "otto@globex.test")["secret"].(string)
			_, _ = eventPage(t, srv.Base, admin, nil) // positions the setup's events

			all := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": admin, "query": dashboardQuery})
			filtered := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": admin, "query": dashboardQuery,
				"variables": map[string]any{"types": []string{"TASK_CREATED"}, "projectId": prj}})
			foreign := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": foreignKey, "query": dashboardQuery})
			waitForGauge(t, srv.Base, 3)

			sent := time.Now()
			task := post(t, srv.Base+"/v1/projects/"+prj+"/tasks", admin, map[string]any{"title": "Ship"})
			got := all.next(10 * time.Second)
			took := time.Since(sent)
			t.Logf("%s: a REST change reached the graphql-ws client %s after the request was sent", database, took.Round(time.Millisecond))
			if took > time.Second {
				t.Fatalf("the change took %s to arrive, docs/api.md#live-updates allows 1s", took)
			}
			ev, _ := got["next"].(map[string]any)
			if ev == nil || ev["type"] != "TASK_CREATED" || ev["task"].(map[string]any)["id"] != task["id"] ||
				ev["task"].(map[string]any)["project"].(map[string]any)["key"] != "LIV" {
				t.Fatalf("got %v", got)
			}
			if f := filtered.next(10 * time.Second); f["next"].(map[string]any)["id"] != ev["id"] {
				t.Fatalf("filtered client got %v", f)
			}
			post(t, srv.Base+"/v1/projects/"+other+"/tasks", admin, map[string]any{"title": "Elsewhere"})
			if o := all.next(10 * time.Second); o["next"].(map[string]any)["projectId"] != other {
				t.Fatalf("got %v", o)
			}
			filtered.quiet(500 * time.Millisecond)
			foreign.quiet(100 * time.Millisecond)

			// Keys: none, invalid, revoked while connected.
			for name, key := range map[string]string{"no key": "", "invalid key": "wtk_" + strings.Repeat("x", 40)} {
				c := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": key, "query": dashboardQuery})
				if code, reason := c.closedWith(10 * time.Second); code != 4403 {
					t.Fatalf("%s: closed with %v %q, want 4403", name, code, reason)
				}
			}
			cli(t, bin, dir, env, "user", "create", "--workspace", ws, "--email", "rev@globex.test", "--name", "Rev", "--role", "guest")
			victim := cli(t, bin, dir, env, "key", "create", "--email", "rev@globex.test")
			doomed := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": victim["secret"], "query": dashboardQuery})
			waitForGauge(t, srv.Base, 4)
			revoked := time.Now()
			cli(t, bin, dir, env, "key", "revoke", victim["id"].(string))
			code, reason := doomed.closedWith(15 * time.Second)
			t.Logf("%s: the revoked key's socket closed %s after `worktrack key revoke`", database, time.Since(revoked).Round(time.Millisecond))
			if code != 4403 || time.Since(revoked) > 10*time.Second {
				t.Fatalf("revoked: closed with %v %q after %s", code, reason, time.Since(revoked))
			}

			// The key of foreign holds one subscription; 20 more over one
			// socket (started concurrently by the server): one is refused.
			many := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": foreignKey, "query": dashboardQuery, "count": 20})
			if m := many.next(10 * time.Second); !strings.Contains(fmt.Sprint(m["error"]), "too_many_requests") || !strings.Contains(fmt.Sprint(m["error"]), "20 subscriptions") {
				t.Fatalf("the 21st subscription of a key: %v", m)
			}
			many.quiet(300 * time.Millisecond)
			waitForGauge(t, srv.Base, 22) // all and filtered; foreign and 19 of the 20
			// A key past its rate limit (60 a minute) cannot subscribe.
			cli(t, bin, dir, env, "user", "create", "--workspace", ws, "--email", "busy@globex.test", "--name", "Busy", "--role", "member")
			busy := cli(t, bin, dir, env, "key", "create", "--email", "busy@globex.test")["secret"].(string)
			for range 60 {
				req, _ := newRequest(http.MethodGet, srv.Base+"/v1/users/me", busy, "")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
			}
			limited := runGraphQLWS(t, node, map[string]any{"mode": "events", "url": wsURL(srv.Base), "key": busy, "query": dashboardQuery})
			if m := limited.next(10 * time.Second); !strings.Contains(fmt.Sprint(m["error"]), "too_many_requests") {
				t.Fatalf("a subscribe past the rate limit: %v", m)
			}

			// Shutdown closes the sockets with 1001.
			srv.Signal(t, syscall.SIGTERM)
			if code, reason := all.closedWith(15 * time.Second); code != 1001 {
				t.Fatalf("on shutdown: closed with %v %q, want 1001", code, reason)
			}
			if code := srv.Wait(t); code != 0 {
				t.Fatalf("exit %d", code)
			}
		})
	}
}

// waitForGauge waits until /metrics shows n open subscriptions.
func waitForGauge(t *testing.T, base string, n int) {
	t.Helper()
	want := fmt.Sprintf("worktrack_graphql_subscriptions %d", n)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if strings.Contains(string(body), want+"\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %q", want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Exact resume under concurrency, PostgreSQL, two server processes: 20
// writers on process A for 10 s, while on process B the graphql-ws client
// drops its socket and resumes with after every second, a Go subscriber
// does the same over its own socket, and a REST reader pages with
// starting_after. Each sees every event of the log once, in the order GET
// /v1/events lists them at the end.
func TestSubscriptionsResumeExactlyAcrossProcesses(t *testing.T) {
	node := graphqlWS.Require(t)
	dbURL := storetest.PostgresURL(t)
	bin := buildBinary(t)
	env := []string{"DATABASE_URL=" + dbURL, "WORKTRACK_RATE_LIMIT=1000000000"}
	a := proctest.Serve(t, bin, t.TempDir(), env...)
	key := proctest.SecretRe.FindString(a.Stderr.String())
	b := proctest.Serve(t, bin, t.TempDir(), env...)
	prj := post(t, a.Base+"/v1/projects", key, map[string]any{"name": "Busy", "key": "BUSY"})["id"].(string)
	first, _ := eventPage(t, b.Base, key, nil)

	js := runGraphQLWS(t, node, map[string]any{"mode": "resume", "url": wsURL(b.Base), "key": key, "after": first[0], "resumeEveryMs": 1000})
	goSub := startResumingSubscriber(t, wsURL(b.Base), key, first[0], time.Second)
	waitForGauge(t, b.Base, 2)

	stop := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	var writes, failures atomic.Int64
	for w := range 20 {
		wg.Go(func() {
			for i := 0; time.Now().Before(stop); i++ {
				req, _ := newRequest(http.MethodPost, a.Base+"/v1/projects/"+prj+"/tasks", key, fmt.Sprintf(`{"title":"w%d-%d"}`, w, i))
				res, err := http.DefaultClient.Do(req)
				if err != nil || res.StatusCode != http.StatusCreated {
					failures.Add(1)
					if err == nil {
						res.Body.Close()
					}
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				writes.Add(1)
			}
		})
	}
	rest := []string{first[0]}
	read := func() int {
		n := 0
		for {
			ids, _ := eventPage(t, b.Base, key, map[string][]string{"limit": {"100"}, "starting_after": {rest[len(rest)-1]}})
			rest = append(rest, ids...)
			n += len(ids)
			if len(ids) < 100 {
				return n
			}
		}
	}
	for time.Now().Before(stop) {
		read()
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d writes failed", failures.Load())
	}
	for read() > 0 { // what the writers left
		continue
	}

	var all []string
	q := map[string][]string{"limit": {"100"}}
	for {
		ids, next := eventPage(t, b.Base, key, q)
		all = append(all, ids...)
		if next == "" {
			break
		}
		q = map[string][]string{"limit": {"100"}, "cursor": {next}}
	}
	if int64(len(all)) != writes.Load()+1 {
		t.Fatalf("the log lists %d events for %d writes and a project", len(all), writes.Load())
	}
	last := all[len(all)-1]
	fmt.Fprintln(js.stdin, last)
	res := js.next(60 * time.Second)
	if _, ok := res["ids"].([]any); !ok {
		t.Fatalf("graphql-ws client: %.500v", res)
	}
	jsIDs := toStrings(res["ids"])
	goIDs, goResumes := goSub.until(t, last)
	t.Logf("%d events from 20 writers on process A; on process B the graphql-ws client resumed %v times, the Go subscriber %d times, the REST reader paged with starting_after",
		len(all), res["resumes"], goResumes)
	if !slices.Equal(jsIDs, all[1:]) {
		t.Fatalf("the graphql-ws client received %d events, the log lists %d after the subscribe", len(jsIDs), len(all)-1)
	}
	if !slices.Equal(goIDs, all[1:]) {
		t.Fatalf("the Go subscriber received %d events, the log lists %d after its start", len(goIDs), len(all)-1)
	}
	if !slices.Equal(rest, all) {
		t.Fatalf("the REST reader saw %d events, the log lists %d", len(rest), len(all))
	}
	if f, _ := res["resumes"].(float64); f < 5 || goResumes < 5 {
		t.Fatalf("resumed %v and %d times in 10 s", res["resumes"], goResumes)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// resumingSubscriber is a Go subscriber over coder/websocket that drops its
// socket every interval and subscribes again after the last event it got.
type resumingSubscriber struct {
	mu      sync.Mutex
	ids     []string
	resumes int
	err     error
	stop    chan struct{}
	done    chan struct{}
}

func startResumingSubscriber(t *testing.T, url, key, after string, every time.Duration) *resumingSubscriber {
	t.Helper()
	s := &resumingSubscriber{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		last := after
		for {
			ids, err := subscribeFor(url, key, last, every, s.stop)
			s.mu.Lock()
			s.ids = append(s.ids, ids...)
			if len(ids) > 0 {
				last = ids[len(ids)-1]
			}
			s.err = err
			s.mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-s.stop:
				return
			default:
			}
			s.mu.Lock()
			s.resumes++
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		select {
		case <-s.stop:
		default:
			close(s.stop)
		}
		<-s.done
	})
	return s
}

// until waits for the event id, then stops the subscriber and returns what
// it received and how often it resumed.
func (s *resumingSubscriber) until(t *testing.T, id string) ([]string, int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s.mu.Lock()
		seen, err := slices.Contains(s.ids, id), s.err
		s.mu.Unlock()
		if err != nil {
			t.Fatalf("Go subscriber: %v", err)
		}
		if seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Go subscriber never received %s", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids, s.resumes
}

// subscribeFor opens a socket, subscribes to every event after after, and
// reads for d (or until stop), then closes the socket normally.
func subscribeFor(url, key, after string, d time.Duration, stop <-chan struct{}) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	conn, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		return nil, err
	}
	if res.Body != nil {
		_ = res.Body.Close()
	}
	defer func() { _ = conn.CloseNow() }()
	conn.SetReadLimit(1 << 24)
	send := func(v any) error {
		raw, _ := json.Marshal(v)
		return conn.Write(ctx, websocket.MessageText, raw)
	}
	if err := send(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + key}}); err != nil {
		return nil, err
	}
	if err := send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": "subscription($after: ID) { events(after: $after) { id } }", "variables": map[string]any{"after": after}}}); err != nil {
		return nil, err
	}
	readCtx, stopReading := context.WithTimeout(ctx, d)
	defer stopReading()
	go func() {
		select {
		case <-stop:
			stopReading()
		case <-readCtx.Done():
		}
	}()
	var ids []string
	for {
		_, data, err := conn.Read(readCtx)
		if err != nil {
			if readCtx.Err() != nil && ctx.Err() == nil {
				// Time to drop the socket (a read cut by its context
				// closes the connection; nothing more arrives).
				return ids, nil
			}
			return ids, err
		}
		var m struct {
			Type    string `json:"type"`
			Payload struct {
				Data struct {
					Events struct {
						ID string `json:"id"`
					} `json:"events"`
				} `json:"data"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return ids, err
		}
		switch m.Type {
		case "connection_ack", "pong":
		case "ping":
			if err := send(map[string]any{"type": "pong"}); err != nil {
				return ids, err
			}
		case "next":
			ids = append(ids, m.Payload.Data.Events.ID)
		default:
			return ids, fmt.Errorf("unexpected %s", data)
		}
	}
}
