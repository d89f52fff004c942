package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/worktrack/worktrack/tools/loadkit"
)

// aKeysPerUser and aUsers are A's many keys: each of A's two admins mints
// keys, and A's searches and GraphQL rotate through all of them, so that
// per-key bounds alone would multiply A's share.
const (
	aKeysPerUser = 3
	aUsers       = 2
	aSearchers   = 16 // A's concurrent search and count loops
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

// seedSearchable writes n tasks into A's first project straight into the
// database (the API would take them at A's rate limit): titles of words
// that all start with "a", the costliest for a search of "a".
func seedSearchable(ctx context.Context, db, workspace string, n int) {
	conn, err := pgx.Connect(ctx, db)
	must(err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		INSERT INTO tasks (id, workspace_id, project_id, title, status, created_at, updated_at)
		SELECT 'tsk_search' || lpad(g::text, 8, '0'), $1, p.id,
		       'alpha ' || g || ' about all apples and an apricot', 'open',
		       now() - make_interval(secs => g), now() - make_interval(secs => g)
		FROM generate_series(1, $2::int) AS g,
		     (SELECT id FROM projects WHERE workspace_id = $1 ORDER BY created_at LIMIT 1) AS p`, workspace, n)
	must(err)
	// The tasks table's triggers count the rows into their project.
	_, err = conn.Exec(ctx, "ANALYZE tasks")
	must(err)
}

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
func (x *attacks) startSearches(ctx context.Context, keys []loadkit.Client) {
	for w := range aSearchers {
		x.wg.Go(func() {
			for i := w; ctx.Err() == nil; i++ {
				a := searchAttacks[i%len(searchAttacks)]
				status, _, err := keys[i%len(keys)].Do(ctx, a.method, a.path, a.body)
				if err != nil {
					continue
				}
				x.searches.add(fmt.Sprintf("%s: %d", a.name, status))
				if status == http.StatusTooManyRequests {
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
			}
		})
	}
}
