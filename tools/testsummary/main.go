// Command testsummary reads `go test -json` on stdin and prints what plain
// `go test` prints (a line per package, and the output of failing tests),
// then one line per kind of test that was skipped for want of a service,
// saying how many and how to run them. `make test` pipes through it, so that
// a run without PostgreSQL or Redis does not look like a complete one.
//
// The exit status is go test's business (make test uses pipefail); this
// command fails only when its input is not test2json.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// skipKind sorts a skipped test by the reason it gave.
type skipKind struct {
	name, marker, how string
}

var kinds = []skipKind{
	{"PostgreSQL", "TEST_DATABASE_URL",
		"set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable, or start a Docker engine for testcontainers (docs/testing.md)"},
	{"Redis", "TEST_REDIS_URL", "set TEST_REDIS_URL=redis://127.0.0.1:6379/0"},
	{"container (fault)", "WORKTRACK_REQUIRE_DOCKER", "start a Docker engine, then make test-image test-containers (docs/testing.md)"},
	{"redis-server process", "redis-server is not on PATH", "install Debian's redis-server"},
	{"Node.js client", "installs it from npm", "install Node.js and npm, then the make target each skip names (make schema-check, make webhook-verify)"},
}

func main() {
	if err := summarize(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
}

func summarize(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	outputs := map[string]*strings.Builder{} // package + test -> its output
	skipped := make([]int, len(kinds))
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Build errors and the like reach stdout as plain text.
			fmt.Fprintln(out, string(line))
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Test == "" && e.Action == "output":
			if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(t, "=== ") {
				fmt.Fprint(out, e.Output)
			}
		case e.Action == "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
		case e.Action == "fail" && e.Test != "":
			if b := outputs[key]; b != nil {
				fmt.Fprint(out, b.String())
			}
			delete(outputs, key)
		case e.Action == "skip" && e.Test != "":
			if b := outputs[key]; b != nil {
				for i, k := range kinds {
					if strings.Contains(b.String(), k.marker) {
						skipped[i]++
						break
					}
				}
			}
			delete(outputs, key)
		case e.Action == "pass":
			delete(outputs, key)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for i, k := range kinds {
		if skipped[i] > 0 {
			fmt.Fprintf(out, "\nSKIPPED: %d tests that need %s did not run; to run them, %s.\n", skipped[i], k.name, k.how)
		}
	}
	return nil
}
