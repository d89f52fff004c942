package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/cmd/worktrack/internal/proctest"
)

// eventPage reads one page of GET /v1/events.
func eventPage(t *testing.T, base, key string, q url.Values) (ids []string, next string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/events?"+q.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/events?%s: %d %s", q.Encode(), res.StatusCode, body)
	}
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Pagination struct {
			NextCursor *string `json:"next_cursor"`
		} `json:"pagination"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Data {
		ids = append(ids, e.ID)
	}
	if page.Pagination.NextCursor != nil {
		next = *page.Pagination.NextCursor
	}
	return ids, next
}

// Exact resume across processes, on PostgreSQL: 20 writers on two server
// processes create tasks for 5 s while a reader, alternating between the
// processes, keeps asking for what happened since the last event it saw.
// It must see every event of the log once, in the log's order.
func TestEventLogResumeIsExactAcrossProcesses(t *testing.T) {
	dbURL := storetest.PostgresURL(t)
	bin := buildBinary(t)
	env := []string{"DATABASE_URL=" + dbURL, "WORKTRACK_RATE_LIMIT=1000000000"}
	a := proctest.Serve(t, bin, t.TempDir(), env...)
	key := proctest.SecretRe.FindString(a.Stderr.String())
	b := proctest.Serve(t, bin, t.TempDir(), env...)
	servers := []string{a.Base, b.Base}
	prj := post(t, a.Base+"/v1/projects", key, map[string]any{"name": "Busy", "key": "BUSY"})["id"].(string)

	stop := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	var writes, failures atomic.Int64
	for w := range 20 {
		wg.Go(func() {
			base := servers[w%2]
			for i := 0; time.Now().Before(stop); i++ {
				req, _ := newRequest(http.MethodPost, base+"/v1/projects/"+prj+"/tasks", key, fmt.Sprintf(`{"title":"w%d-%d"}`, w, i))
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
	var seen []string
	read := func(base string) int {
		q := url.Values{"limit": {"100"}}
		if len(seen) > 0 {
			q.Set("starting_after", seen[len(seen)-1])
		}
		n := 0
		for {
			ids, next := eventPage(t, base, key, q)
			seen = append(seen, ids...)
			n += len(ids)
			if next == "" {
				return n
			}
			q = url.Values{"limit": {"100"}, "cursor": {next}}
		}
	}
	for i := 0; time.Now().Before(stop); i++ {
		read(servers[i%2])
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	if failures.Load() > 0 {
		t.Fatalf("%d writes failed", failures.Load())
	}
	// Drain what the writers left, still alternating.
	for i := 0; ; i++ {
		if read(servers[i%2]) == 0 {
			break
		}
	}

	var all []string
	q := url.Values{"limit": {"100"}}
	for {
		ids, next := eventPage(t, b.Base, key, q)
		all = append(all, ids...)
		if next == "" {
			break
		}
		q = url.Values{"limit": {"100"}, "cursor": {next}}
	}
	if int64(len(all)) != writes.Load()+1 {
		t.Fatalf("the log lists %d events for %d writes and a project", len(all), writes.Load())
	}
	if !slices.Equal(seen, all) {
		t.Fatalf("the resuming reader saw %d events, the log lists %d", len(seen), len(all))
	}
	t.Logf("%d events from 20 writers on two processes, read exactly once by a reader resuming on both", len(all))
}
