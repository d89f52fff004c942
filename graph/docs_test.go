package graph_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// The dashboard of docs/graphql.md works with the scopes that page says it
// needs, and with the wallboard scopes of docs/keys.md (no users:read) it
// gets its projects and tasks beside an insufficient_scope error at each
// assignee, as docs/keys.md says. Both are read from the pages, so the
// pages cannot drift from the server.
func TestDocumentedDashboardScopes(t *testing.T) {
	t.Parallel()
	graphqlDoc, err := os.ReadFile("../docs/graphql.md")
	if err != nil {
		t.Fatal(err)
	}
	keysDoc, err := os.ReadFile("../docs/keys.md")
	if err != nil {
		t.Fatal(err)
	}
	query := regexp.MustCompile("(?s)```graphql\n# A dashboard[^\n]*\n(query Dashboard.*?\n})\n").FindSubmatch(graphqlDoc)
	needs := regexp.MustCompile("The dashboard query below needs a key with ([^:]+:[a-z]+`(?:, `[a-z_]+:[a-z]+`)*(?: and `[a-z_]+:[a-z]+`)?)").FindSubmatch(graphqlDoc)
	wallboard := regexp.MustCompile(`"name":"Wallboard","scopes":\[([^\]]*)\]`).FindSubmatch(keysDoc)
	if query == nil || needs == nil || wallboard == nil {
		t.Fatalf("docs/graphql.md no longer shows the dashboard query (%v) or its scopes (%v), or docs/keys.md the wallboard key (%v)",
			query != nil, needs != nil, wallboard != nil)
	}
	scopes := func(text string) []string {
		return regexp.MustCompile("[a-z_]+:(?:read|write)").FindAllString(text, -1)
	}
	e := newEnv(t, storetest.SQLite(t))
	seed(t, e, 2, 3)

	key := e.KeyFor(e.Member.User, scopes(string(needs[1])), nil)
	data := gql(t, e, key, string(query[1]), nil).ok(t)
	if n := len(list(data, "projects", "nodes")); n != 2 {
		t.Fatalf("the dashboard with %v: %d projects", scopes(string(needs[1])), n)
	}

	wall := e.KeyFor(e.Member.User, scopes(string(wallboard[1])), nil)
	res := gql(t, e, wall, string(query[1]), nil)
	if len(list(res.Data, "projects", "nodes")) != 2 || len(res.Errors) == 0 {
		t.Fatalf("the dashboard with the wallboard key: %s", res.Body)
	}
	for _, er := range res.Errors {
		if er.Extensions["code"] != "insufficient_scope" || !strings.Contains(jsonString(er.Path), `"assignee"`) {
			t.Fatalf("the wallboard key's error: %+v", er)
		}
	}
}
