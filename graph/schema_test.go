package graph_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
)

// envRequireGraphQLJS makes TestSchemaPassesGraphQLJS fail, rather than
// skip, when Node.js or graphql-js is missing (CI sets it: .ci/run).
const envRequireGraphQLJS = "WORKTRACK_REQUIRE_GRAPHQL_JS"

// schema.graphql passes graphql-js's buildSchema and validateSchema, and the
// schema the server introspects is that file's, as graphql-js reads both.
func TestSchemaPassesGraphQLJS(t *testing.T) {
	tool := filepath.Join("..", "tools", "schema-check")
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "Node.js is not installed"
	default:
		if _, err := os.Stat(filepath.Join(tool, "node_modules", "graphql", "package.json")); err != nil {
			missing = "graphql-js is not installed in tools/schema-check"
		}
	}
	if missing != "" {
		msg := missing + "; `make schema-check` installs graphql-js from npm (npm ci) and runs the check."
		if os.Getenv(envRequireGraphQLJS) == "1" {
			t.Fatalf("%s Failing because %s=1.", msg, envRequireGraphQLJS)
		}
		t.Skip(msg + " Skipping.")
	}

	e := newEnv(t, storetest.SQLite(t))
	r := gql(t, e, e.Guest.Key, introspectionQuery, nil)
	r.ok(t)
	introspection := filepath.Join(t.TempDir(), "introspection.json")
	if err := os.WriteFile(introspection, r.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(node, filepath.Join(tool, "validate.mjs"), filepath.Join("..", "schema.graphql"), introspection).CombinedOutput()
	if err != nil {
		t.Fatalf("graphql-js refused the schema: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
