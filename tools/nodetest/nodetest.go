// Package nodetest finds the real JavaScript clients the tests run (graphql-js,
// standardwebhooks): npm packages installed from a lockfile into a folder of
// tools/ by a make target.
package nodetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Tool is an npm package installed into a folder of tools/.
type Tool struct {
	Dir        string // the folder, relative to the test's package
	Package    string // the npm package the tests need, e.g. "graphql"
	Install    string // how to install it, e.g. "make schema-check"
	RequireEnv string // when "1", a missing tool fails the test instead of skipping it
}

// Require returns the path of the node binary. When Node.js or the package is
// missing it skips t, or fails t when the tool's RequireEnv is "1" (CI sets
// it, so the check can never be skipped there).
func (tool Tool) Require(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	missing, fix := "", tool.Install
	switch {
	case err != nil:
		missing = "Node.js is not installed"
		fix = "apt-get install nodejs npm, then " + tool.Install
	default:
		if _, err := os.Stat(filepath.Join(tool.Dir, "node_modules", tool.Package, "package.json")); err != nil {
			missing = tool.Package + " is not installed in " + tool.Dir + " (npm ci from its lockfile)"
		}
	}
	if missing == "" {
		return node
	}
	msg := missing + ". To run these tests: " + fix + "."
	if os.Getenv(tool.RequireEnv) == "1" {
		t.Fatalf("%s Failing because %s=1.", msg, tool.RequireEnv)
	}
	t.Skip(msg + " Skipping.")
	return ""
}
