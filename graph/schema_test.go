package graph_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/worktrack/worktrack/adapters/store/storetest"
	"github.com/worktrack/worktrack/tools/nodetest"
)

// envRequireGraphQLJS makes TestSchemaPassesGraphQLJS fail, rather than
// skip, when Node.js or graphql-js is missing (CI sets it: .ci/run).
const envRequireGraphQLJS = "WORKTRACK_REQUIRE_GRAPHQL_JS"

// schema.graphql passes graphql-js's buildSchema and validateSchema, and the
// schema the server introspects is that file's, as graphql-js reads both.
func TestSchemaPassesGraphQLJS(t *testing.T) {
	t.Parallel()
	tool := filepath.Join("..", "tools", "schema-check")
	node := nodetest.Tool{
		Dir: tool, Package: "graphql", Install: "make schema-check", RequireEnv: envRequireGraphQLJS,
	}.Require(t)

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
