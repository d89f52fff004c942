package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A program that uses only the client, in a module of its own outside
// this repository at go 1.23 (the client's go line), builds with a replace
// directive to the checkout, keeps its go line, and requires the client's
// two modules and nothing else: none of the server's.
func TestAProgramRequiresTheClientAlone(t *testing.T) {
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/uses-the-client\n\ngo 1.23\n\nrequire github.com/worktrack/worktrack/client v0.0.0\n\n" +
			"replace github.com/worktrack/worktrack/client => " + checkout + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/worktrack/worktrack/client"
)

func main() {
	c := client.New(os.Getenv("WORKTRACK_URL"), os.Getenv("WORKTRACK_KEY"))
	for p, err := range c.Projects.List(context.Background(), client.ListParams{}) {
		fmt.Println(p.Key, err)
	}
}
`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") && !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOTOOLCHAIN=") {
			env = append(env, kv)
		}
	}
	env = append(env, "GOWORK=off", "GOTOOLCHAIN=local")
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	gocmd("vet", ".")
	gocmd("build", "-o", filepath.Join(dir, "uses-the-client"), ".")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "\ngo 1.23\n") {
		t.Fatalf("the module's go line was raised:\n%s", mod)
	}
	var modules []string
	for _, line := range strings.Split(strings.TrimSpace(gocmd("list", "-m", "all")), "\n") {
		modules = append(modules, strings.Fields(line)[0])
	}
	want := []string{
		"example.com/uses-the-client",
		"github.com/oapi-codegen/nullable",
		"github.com/standard-webhooks/standard-webhooks/libraries",
		"github.com/worktrack/worktrack/client",
	}
	slices.Sort(modules)
	if !slices.Equal(modules, want) {
		t.Fatalf("go list -m all: %v, want %v", modules, want)
	}
}
