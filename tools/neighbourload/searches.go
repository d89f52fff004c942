package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/worktrack/worktrack/tools/loadkit"
)

// aKeysPerUser and aUsers are A's many keys: each of A's two admins mints
// keys, and A's searches and GraphQL rotate through all of them, so that
// per-key bounds alone would multiply A's share.
const (
	aKeysPerUser = 3
	aUsers       = 2
	aSearchers   = 16 // A's concurrent search and count loops
	aBulkers     = 2  // A's concurrent loops of bulk creations of 500
)

// mintKeys gives A aUsers admins with aKeysPerUser keys each (t's own key
// among them), and returns clients for every key.
func mintKeys(bin, db string, t loadkit.Tenant, c loadkit.Client) []loadkit.Client {
	var out []loadkit.Client
	users := []string{t.User}
	for i := 1; i < aUsers; i++ {
		u, err := loadkit.CLI(bin, db, "user", "create", "--workspace", t.Workspace,
			"--email", fmt.Sprintf("alpha%d@example.com", i), "--name", fmt.Sprintf("Alpha %d", i), "--role", "admin")
		must(err)
		users = append(users, u["id"].(string))
	}
	for _, u := range users {
		for range aKeysPerUser {
			k, err := loadkit.CLI(bin, db, "key", "create", "--user", u)
			must(err)
			out = append(out, loadkit.Client{Base: c.Base, Key: k["secret"].(string), HTTP: c.HTTP})
		}
	}
	return out
}

// seedSearchable creates n tasks in a project of A's own through the API
// (bulk creations of 500, A's keys in turn): titles of words that all
// start with "a", the costliest for a search of "a". It returns another
// project of A's, for A's bulk creations during the run.
func seedSearchable(ctx context.Context, keys []loadkit.Client, n int) string {
	prj, err := keys[0].Post(ctx, "/v1/projects", map[string]any{"name": "Searchable", "key": "SEARCH"})
	must(err)
	for i, k := 0, 0; i < n; k++ {
		items := make([]map[string]any, 0, bulkSize)
		for ; len(items) < bulkSize && i < n; i++ {
			items = append(items, map[string]any{"title": fmt.Sprintf("alpha %d about all apples and an apricot", i)})
		}
		_, err := keys[k%len(keys)].Post(ctx, "/v1/projects/"+prj["id"].(string)+"/tasks/batch", map[string]any{"tasks": items})
		must(err)
	}
	bulk, err := keys[0].Post(ctx, "/v1/projects", map[string]any{"name": "Bulk", "key": "BULK"})
	must(err)
	return bulk["id"].(string)
}

// bulkSize is the most tasks a bulk creation takes.
const bulkSize = 500

// bulkBody is one of A's bulk creations: 500 tasks.
var bulkBody = func() map[string]any {
	items := make([]map[string]any, bulkSize)
	for i := range items {
		items[i] = map[string]any{"title": fmt.Sprintf("bulk %d", i)}
	}
	return map[string]any{"tasks": items}
}()

// searchAttack is one of A's costly reads.
type searchAttack struct {
	name         string
	method, path string
	body         any
}

// searchAttacks are what A's search loops send in turn: q of one word 100
// times, counts of a search by project, a page of 100 of a frequent word,
// and a GraphQL document of 60 counting aliases.
var searchAttacks = func() []searchAttack {
	var gql strings.Builder
	gql.WriteString("{")
	for i := range 60 {
		fmt.Fprintf(&gql, ` c%d: taskCounts(groupBy: PROJECT, filter: {query: "a"}) { total }`, i)
	}
	gql.WriteString(" }")
	return []searchAttack{
		{"q of 100 words", http.MethodGet, "/v1/tasks?q=" + url.QueryEscape(strings.TrimSpace(strings.Repeat("a ", 100))), nil},
		{"counts of a search", http.MethodGet, "/v1/tasks/counts?group_by=project_id&q=a", nil},
		{"page of 100 of a frequent word", http.MethodGet, "/v1/tasks?limit=100&q=ap", nil},
		{"60 counting aliases", http.MethodPost, "/graphql", map[string]any{"query": gql.String()}},
	}
}()

// startSearches runs aSearchers loops of A's costly reads through A's
// keys in turn until ctx ends, counting the answers by attack and status.
// A loop sends its next read as soon as the last is answered, and waits a
// second after a 429, as a client library that retries would: A takes all
// the database its limits let it, and the limits are what is measured, not
// how fast the server refuses a flood.
func (x *attacks) startSearches(ctx context.Context, keys []loadkit.Client, bulkProject string) {
	bulk := searchAttack{"bulk creation of 500", http.MethodPost, "/v1/projects/" + bulkProject + "/tasks/batch", bulkBody}
	for w := range aBulkers {
		x.wg.Go(func() { x.loop(ctx, keys, w, func(int) searchAttack { return bulk }) })
	}
	for w := range aSearchers {
		x.wg.Go(func() { x.loop(ctx, keys, w, func(i int) searchAttack { return searchAttacks[i%len(searchAttacks)] }) })
	}
}

// loop sends next(i) through A's keys in turn until ctx ends, counting
// the answers by attack and status, and the 2xx ones (x.done); it waits a
// second after a 429.
func (x *attacks) loop(ctx context.Context, keys []loadkit.Client, w int, next func(int) searchAttack) {
	for i := w; ctx.Err() == nil; i++ {
		a := next(i)
		status, _, err := keys[i%len(keys)].Do(ctx, a.method, a.path, a.body)
		if err != nil {
			continue
		}
		x.searches.add(fmt.Sprintf("%s: %d", a.name, status))
		if status/100 == 2 {
			x.done.Add(1)
		}
		if status == http.StatusTooManyRequests {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}
