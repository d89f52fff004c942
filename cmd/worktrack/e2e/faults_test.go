package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/ratelimit/redistest"
	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// receiver is a fast webhook endpoint that records every delivery of
// task.created by the task's id, and counts all attempts.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	tasks    map[string]int // task id -> deliveries received
	attempts int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{tasks: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		err := json.NewDecoder(req.Body).Decode(&ev)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.attempts++
		if err == nil && ev.Type == "task.created" {
			r.tasks[ev.Data.ID]++
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) delivered(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tasks[id] > 0
}

func (r *receiver) counts() (distinct, attempts int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tasks), r.attempts
}

// faultEnv is the environment of a serve process under a fault test: fast
// webhook retries, and a rate limit that never triggers.
func faultEnv(databaseURL string, extra ...string) []string {
	return append([]string{
		"DATABASE_URL=" + databaseURL,
		"WORKTRACK_RATE_LIMIT=1000000000",
		"WORKTRACK_WEBHOOK_ALLOW_PRIVATE=true",
		"WORKTRACK_WEBHOOK_TIMEOUT=2s",
		"WORKTRACK_WEBHOOK_BACKOFF_BASE=100ms",
		"WORKTRACK_WEBHOOK_BACKOFF_MAX=1s",
		"WORKTRACK_WEBHOOK_RETRY_WINDOW=10m",
	}, extra...)
}

// answer is one request of a load run.
type answer struct {
	at, took time.Duration // since the run started; latency
	status   int           // 0: no response (connection error)
	code     string        // the error object's code, if any
	taskID   string        // a created task's id
}

// loadRun drives a server with workers until stopped; each worker repeats
// one request. Answers are kept in order of completion.
type loadRun struct {
	start   time.Time
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	answers []answer
}

func startLoad(workers int, request func(worker int) (*http.Request, error)) *loadRun {
	l := &loadRun{start: time.Now(), stop: make(chan struct{})}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				req, err := request(w)
				if err != nil {
					panic(err)
				}
				began := time.Now()
				a := answer{at: began.Sub(l.start)}
				res, err := client.Do(req)
				if err == nil {
					var body struct {
						ID    string `json:"id"`
						Error struct {
							Code string `json:"code"`
						} `json:"error"`
					}
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					_ = json.Unmarshal(raw, &body)
					a.status, a.code = res.StatusCode, body.Error.Code
					if res.StatusCode == http.StatusCreated {
						a.taskID = body.ID
					}
				} else {
					// Connection errors: pause, so a dead server is not spun on.
					time.Sleep(10 * time.Millisecond)
				}
				a.took = time.Since(began)
				l.mu.Lock()
				l.answers = append(l.answers, a)
				l.mu.Unlock()
			}
		})
	}
	return l
}

// since is how long ago the run started.
func (l *loadRun) since() time.Duration { return time.Since(l.start) }

// end stops the workers and returns every answer.
func (l *loadRun) end() []answer {
	close(l.stop)
	l.wg.Wait()
	return l.answers
}

// snapshot returns the answers so far.
func (l *loadRun) snapshot() []answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

func newRequest(method, url, key, body string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// tasksLoad is a mixed load on one project: even workers create tasks,
// odd ones read the first page.
func tasksLoad(base, key, project string) func(int) (*http.Request, error) {
	var n atomic.Int64
	return func(w int) (*http.Request, error) {
		if w%2 == 0 {
			return newRequest(http.MethodPost, base+"/v1/projects/"+project+"/tasks", key,
				fmt.Sprintf(`{"title":"Load %d"}`, n.Add(1)))
		}
		return newRequest(http.MethodGet, base+"/v1/projects/"+project+"/tasks", key, "")
	}
}

// setUp creates a project and a webhook on task.created to rc, and returns
// the project's id.
func setUp(t *testing.T, base, key string, rc *receiver) string {
	t.Helper()
	post(t, base+"/v1/webhooks", key, map[string]any{"url": rc.URL + "/hook", "events": []string{"task.created"}})
	return post(t, base+"/v1/projects", key, map[string]any{"name": "Faults", "key": "FAULT"})["id"].(string)
}

// committedTasks lists the ids of the tasks the database holds.
func committedTasks(t *testing.T, url string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []string
	if err := db.Gorm().Table("tasks").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// waitDelivered waits until rc has received task.created for every id.
func waitDelivered(t *testing.T, rc *receiver, ids []string, serveLog func() string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		missing := 0
		for _, id := range ids {
			if !rc.delivered(id) {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d committed tasks never reached the receiver:\n%s", missing, len(ids), serveLog())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The database stops for about 5 s under a mixed read and write load with a
// webhook: requests get 503 service_unavailable (never a 500) and /readyz
// 503; within 5 s of the database's return every request is 2xx again,
// with no restart; every committed task has its event delivered.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	own := storetest.OwnPostgres(t)
	bin := buildBinary(t)
	rc := newReceiver(t)
	p := proctest.Serve(t, bin, t.TempDir(), faultEnv(own.URL)...)
	key := proctest.SecretRe.FindString(p.Stderr.String())
	project := setUp(t, p.Base, key, rc)

	load := startLoad(8, tasksLoad(p.Base, key, project))
	time.Sleep(2 * time.Second)
	down := load.since()
	own.Stop()
	stopped := load.since()
	readyz := map[int]int{}
	for load.since()-stopped < 5*time.Second {
		if res, err := http.Get(p.Base + "/readyz"); err == nil {
			readyz[res.StatusCode]++
			res.Body.Close()
		}
		time.Sleep(250 * time.Millisecond)
	}
	own.Start()
	back := load.since()
	time.Sleep(7 * time.Second)
	answers := load.end()

	statuses := map[int]int{}
	var created []string
	var lastFailure time.Duration
	for _, a := range answers {
		statuses[a.status]++
		switch {
		case a.status == http.StatusCreated:
			created = append(created, a.taskID)
		case a.status == http.StatusOK:
		case a.status == http.StatusServiceUnavailable && a.code == "service_unavailable":
			lastFailure = max(lastFailure, a.at+a.took)
		default:
			t.Errorf("answer at %v: status %d, code %q; want 2xx or 503 service_unavailable", a.at, a.status, a.code)
		}
	}
	t.Logf("database stopping at %v, stopped at %v, answering again at %v; %d requests: %v; /readyz while down: %v; last 503 answered at %v",
		down.Round(time.Millisecond), stopped.Round(time.Millisecond), back.Round(time.Millisecond), len(answers), statuses, readyz,
		lastFailure.Round(time.Millisecond))
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Fatal("no request saw the outage: the test did not stop the database under load")
	}
	if readyz[http.StatusServiceUnavailable] == 0 || readyz[http.StatusOK] != 0 {
		t.Fatalf("/readyz while the database was down: %v; want 503 only", readyz)
	}
	if lastFailure-back > 5*time.Second {
		t.Fatalf("requests still failed %v after the database was back; want recovery within 5s", lastFailure-back)
	}

	committed := committedTasks(t, own.URL)
	for _, id := range created {
		if !slices.Contains(committed, id) {
			t.Fatalf("task %s was answered 201 but is not in the database", id)
		}
	}
	waitDelivered(t, rc, committed, p.Stderr.String)
	distinct, attempts := rc.counts()
	t.Logf("%d tasks answered 201, %d committed, all %d delivered (%d attempts)", len(created), len(committed), distinct, attempts)
	if code := p.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d", code)
	}
}

// SIGKILL of serve under write load with a webhook, then a new process on
// the same database: every committed task is delivered, none lost.
func TestKilledUnderWriteLoadLosesNoChange(t *testing.T) {
	url := storetest.PostgresURL(t)
	bin := buildBinary(t)
	rc := newReceiver(t)
	env := faultEnv(url)
	first := proctest.Serve(t, bin, t.TempDir(), env...)
	key := proctest.SecretRe.FindString(first.Stderr.String())
	project := setUp(t, first.Base, key, rc)

	var n atomic.Int64
	load := startLoad(8, func(int) (*http.Request, error) {
		return newRequest(http.MethodPost, first.Base+"/v1/projects/"+project+"/tasks", key, fmt.Sprintf(`{"title":"Write %d"}`, n.Add(1)))
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		created := 0
		for _, a := range load.snapshot() {
			if a.status == http.StatusCreated {
				created++
			}
		}
		if created >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d tasks created in 60s:\n%s", created, first.Stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	first.Kill(t)
	answers := load.end()
	var created []string
	for _, a := range answers {
		if a.status == http.StatusCreated {
			created = append(created, a.taskID)
		}
	}

	second := proctest.Serve(t, bin, t.TempDir(), env...)
	committed := committedTasks(t, url)
	for _, id := range created {
		if !slices.Contains(committed, id) {
			t.Fatalf("task %s was answered 201 but is not in the database", id)
		}
	}
	waitDelivered(t, rc, committed, second.Stderr.String)
	distinct, attempts := rc.counts()
	t.Logf("%d requests before the kill, %d answered 201, %d committed; all %d delivered with %d attempts",
		len(answers), len(created), len(committed), distinct, attempts)
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d", code)
	}
}

// Redis dead, and Redis hung, under load with REDIS_URL: every request
// still succeeds, at the latency it had with Redis up (p99 within 2x), and
// each outage is logged once, with one line when Redis answers again.
func TestRedisOutagesUnderLoad(t *testing.T) {
	rs := redistest.Start(t)
	bin := buildBinary(t)
	p := proctest.Serve(t, bin, t.TempDir(), "DATABASE_URL=sqlite:"+t.TempDir()+"/w.db",
		"WORKTRACK_RATE_LIMIT=1000000000", "REDIS_URL="+rs.URL())
	key := proctest.SecretRe.FindString(p.Stderr.String())

	load := startLoad(8, func(int) (*http.Request, error) {
		return newRequest(http.MethodGet, p.Base+"/v1/users/me", key, "")
	})
	type phase struct {
		name     string
		from, to time.Duration
	}
	var phases []phase
	run := func(name string, fault func()) {
		fault()
		from := load.since()
		time.Sleep(3 * time.Second)
		phases = append(phases, phase{name, from, load.since()})
	}
	run("up", func() {})
	run("dead", rs.Kill)
	run("up again", rs.Restart)
	run("hung", rs.Freeze)
	run("thawed", rs.Thaw)
	answers := load.end()

	p99 := map[string]time.Duration{}
	for _, ph := range phases {
		var took []time.Duration
		for _, a := range answers {
			if a.at >= ph.from && a.at < ph.to {
				if a.status != http.StatusOK {
					t.Errorf("%s: status %d, code %q", ph.name, a.status, a.code)
				}
				took = append(took, a.took)
			}
		}
		slices.Sort(took)
		if len(took) == 0 {
			t.Fatalf("%s: no requests", ph.name)
		}
		p99[ph.name] = took[len(took)*99/100]
		t.Logf("Redis %-8s %6d requests, p50 %v, p99 %v", ph.name, len(took), took[len(took)/2], p99[ph.name])
	}
	// Within 2x of the Redis-up run; 5 ms of slack absorbs the jitter of
	// a shared machine at sub-millisecond latencies.
	for _, name := range []string{"dead", "hung"} {
		if limit := 2*p99["up"] + 5*time.Millisecond; p99[name] > limit {
			t.Errorf("Redis %s: p99 %v, over %v (2x the Redis-up p99 %v)", name, p99[name], limit, p99["up"])
		}
	}
	// Read after the stop: info lines reach the log up to 100 ms late.
	if code := p.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d", code)
	}
	log := p.Stderr.String()
	if down, again := strings.Count(log, "rate limiter unavailable"), strings.Count(log, "rate limiter available again"); down != 2 || again != 2 {
		t.Fatalf("want 2 outage lines and 2 recovery lines, got %d and %d:\n%s", down, again, log)
	}
	if strings.Contains(log, "pool.go") || strings.Contains(log, "\nredis: ") {
		t.Fatalf("the Redis client wrote its own lines to the log:\n%s", log)
	}
}
