package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store"
	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// keyedCreators are clients that create tasks with an Idempotency-Key of
// their own each, and re-send a create that got no answer (a connection
// error, a 503) with the same key until it is answered, as the docs tell
// clients to: each worker's n-th create is titled and keyed
// "<prefix>w<worker>-<n>" (a batch's items "<prefix>w<worker>-<n>-<item>").
// Each worker sends one request at a time.
type keyedCreators struct {
	base    atomic.Value // the current server's root URL
	stop    atomic.Bool
	wg      sync.WaitGroup
	batch   int // items per create; 0 for single creates
	mu      sync.Mutex
	titles  []string // every title answered 2xx
	inUse   []time.Time
	other   map[string]int // other answers: "409 idempotency_key_reused", …
	answers atomic.Int64
}

func startKeyedCreators(prefix string, workers, batch int, base, key, project string) *keyedCreators {
	k := &keyedCreators{batch: batch, other: map[string]int{}}
	k.base.Store(base)
	client := &http.Client{Timeout: 30 * time.Second}
	for w := range workers {
		k.wg.Go(func() {
			for n := 0; !k.stop.Load(); n++ {
				title := fmt.Sprintf("%sw%d-%d", prefix, w, n)
				path, body, titles := "/tasks", fmt.Sprintf(`{"title":%q}`, title), []string{title}
				if batch > 0 {
					items := make([]string, batch)
					titles = make([]string, batch)
					for i := range items {
						titles[i] = fmt.Sprintf("%s-%d", title, i)
						items[i] = fmt.Sprintf(`{"title":%q}`, titles[i])
					}
					path, body = "/tasks/batch", `{"tasks":[`+strings.Join(items, ",")+`]}`
				}
				for attempt := 0; ; attempt++ {
					req, _ := http.NewRequest(http.MethodPost, k.base.Load().(string)+"/v1/projects/"+project+path, strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", title)
					res, err := client.Do(req)
					if err != nil {
						time.Sleep(20 * time.Millisecond) // the server is down: wait for the next one
						continue
					}
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode == http.StatusServiceUnavailable {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					var e struct {
						Error struct {
							Code string `json:"code"`
						} `json:"error"`
					}
					_ = json.Unmarshal(raw, &e)
					k.mu.Lock()
					switch {
					case res.StatusCode == http.StatusCreated:
						k.titles = append(k.titles, titles...)
					case e.Error.Code == "idempotency_key_in_use":
						k.inUse = append(k.inUse, time.Now())
					default:
						k.other[strconv.Itoa(res.StatusCode)+" "+e.Error.Code]++
					}
					k.mu.Unlock()
					if res.StatusCode == http.StatusCreated {
						k.answers.Add(1)
						break
					}
					if e.Error.Code != "idempotency_key_in_use" {
						break
					}
					wait, _ := strconv.Atoi(res.Header.Get("Retry-After"))
					time.Sleep(time.Duration(max(wait, 0))*time.Second + 50*time.Millisecond)
				}
			}
		})
	}
	return k
}

// waitAnswers waits until n more creates were answered since it was called.
func (k *keyedCreators) waitAnswers(t *testing.T, n int64, log func() string) {
	t.Helper()
	want := k.answers.Load() + n
	deadline := time.Now().Add(60 * time.Second)
	for k.answers.Load() < want {
		if time.Now().After(deadline) {
			k.mu.Lock()
			inUse := len(k.inUse)
			k.mu.Unlock()
			t.Fatalf("%d of %d creates answered in 60 s, %d retries answered idempotency_key_in_use:\n%s", k.answers.Load(), want, inUse, log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// end lets every worker finish its create in hand (its last is answered)
// and waits for them, for at most bound.
func (k *keyedCreators) end(t *testing.T, bound time.Duration) {
	t.Helper()
	k.stop.Store(true)
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(bound):
		k.mu.Lock()
		defer k.mu.Unlock()
		t.Fatalf("creators still unanswered %v after the last restart (%d answered idempotency_key_in_use)", bound, len(k.inUse))
	}
}

// check compares what the creators were answered with the tasks the
// database holds: every answered title stored exactly once, none stored
// that was never asked, and no answer but 201 (after 503s and connection
// errors). Nor any idempotency_key_in_use: each client sends one request
// at a time per key, so only a key still held for a request of a process
// that died (or of one that outlived the client's 30 s timeout, which
// these never do) could answer it.
func (k *keyedCreators) check(t *testing.T, url string) {
	t.Helper()
	db, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored []string
	if err := db.Gorm().Table("tasks").Pluck("title", &stored).Error; err != nil {
		t.Fatal(err)
	}
	times := map[string]int{}
	for _, title := range stored {
		times[title]++
	}
	for title, n := range times {
		if n != 1 {
			t.Errorf("%q is stored %d times", title, n)
		}
	}
	for _, title := range k.titles {
		if times[title] == 0 {
			t.Errorf("%q was answered 201 but is not stored", title)
		}
	}
	if len(stored) != len(k.titles) {
		t.Errorf("%d tasks stored, %d answered 201", len(stored), len(k.titles))
	}
	if len(k.other) > 0 {
		t.Errorf("answers other than 201, 503 and idempotency_key_in_use: %v", k.other)
	}
	if len(k.inUse) > 0 {
		t.Errorf("%d retries were answered idempotency_key_in_use, the first at %v", len(k.inUse), k.inUse[0].Format(time.StampMilli))
	}
	t.Logf("%d tasks stored, each once", len(stored))
}

// Eight clients create tasks with keys of their own while the server is
// killed (SIGKILL) three times and started again on the same database,
// re-sending every create that got no answer with its key: every title is
// stored exactly once, and no retry is told its key is in use by a request
// of a process that died. Single and bulk creates, on both databases.
func TestKeyedCreatesSurviveKills(t *testing.T) {
	bin := buildBinary(t)
	for _, kind := range []string{"sqlite", "postgres"} {
		for _, batch := range []int{0, 20} {
			t.Run(fmt.Sprintf("%s/batch=%d", kind, batch), func(t *testing.T) {
				url := "sqlite:" + t.TempDir() + "/w.db"
				if kind == "postgres" {
					url = storetest.PostgresURL(t)
				}
				env := faultEnv(url)
				p := proctest.Serve(t, bin, t.TempDir(), env...)
				key := proctest.SecretRe.FindString(p.Stderr.String())
				project := post(t, p.Base+"/v1/projects", key, map[string]any{"name": "Keyed", "key": "KEYED"})["id"].(string)

				creators := startKeyedCreators("", 8, batch, p.Base, key, project)
				for range 3 {
					creators.waitAnswers(t, 40, p.Stderr.String)
					p.Kill(t)
					p = proctest.Serve(t, bin, t.TempDir(), env...)
					creators.base.Store(p.Base)
				}
				creators.waitAnswers(t, 40, p.Stderr.String)
				creators.end(t, 30*time.Second)
				creators.check(t, url)
				if code := p.Stop(t); code != 0 {
					t.Fatalf("exit code after SIGTERM: %d", code)
				}
			})
		}
	}
}

// The same clients, single and bulk creates together, while PostgreSQL
// itself stops and starts again under them: requests cut off by the
// outage are re-sent with their keys, and every title is stored once.
func TestKeyedCreatesSurviveADatabaseRestart(t *testing.T) {
	own := storetest.OwnPostgres(t)
	bin := buildBinary(t)
	p := proctest.Serve(t, bin, t.TempDir(), faultEnv(own.URL)...)
	key := proctest.SecretRe.FindString(p.Stderr.String())
	project := post(t, p.Base+"/v1/projects", key, map[string]any{"name": "Keyed", "key": "KEYED"})["id"].(string)

	single := startKeyedCreators("s", 4, 0, p.Base, key, project)
	bulk := startKeyedCreators("b", 4, 20, p.Base, key, project)
	single.waitAnswers(t, 40, p.Stderr.String)
	own.Stop()
	time.Sleep(2 * time.Second)
	own.Start()
	single.waitAnswers(t, 40, p.Stderr.String)
	bulk.waitAnswers(t, 10, p.Stderr.String)
	single.end(t, 30*time.Second)
	bulk.end(t, 30*time.Second)
	// Titles of single and bulk creates differ in shape; check them together.
	all := &keyedCreators{titles: append(single.titles, bulk.titles...), inUse: append(single.inUse, bulk.inUse...), other: map[string]int{}}
	for k, v := range single.other {
		all.other[k] += v
	}
	for k, v := range bulk.other {
		all.other[k] += v
	}
	all.check(t, own.URL)
	if code := p.Stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM: %d", code)
	}
}
