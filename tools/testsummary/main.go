// Command testsummary reads `go test -json` on stdin and prints what plain
// `go test` prints (a line per package, and the output of failing tests),
// then one line per kind of test that was skipped for want of a service,
// saying how many and the command that makes them run. `make test` pipes
// through it, so that a run without PostgreSQL or Redis does not look like
// a complete one.
//
// A skip says what would make it run in a sentence "To run these tests:
// <command>." (storetest, nodetest, redistest and the browser tests write
// it, naming the real cause: no Docker engine, no image registry, a missing
// npm package); the summary repeats each distinct command, so the one line
// a person reads names the fix for this machine, not a guess.
//
// The exit status is go test's business (make test uses pipefail); this
// command fails only when its input is not test2json.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// skipKind sorts a skipped test by the reason it gave: any of markers.
type skipKind struct {
	name    string
	markers []string
	how     string // when no skip of the kind says how
}

var kinds = []skipKind{
	{"PostgreSQL", []string{"storetest: PostgreSQL unavailable", "TEST_DATABASE_URL"},
		"set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable, or start a Docker engine for testcontainers (docs/testing.md)"},
	{"Redis", []string{"TEST_REDIS_URL"}, "set TEST_REDIS_URL=redis://127.0.0.1:6379/0"},
	{"container (fault)", []string{"WORKTRACK_REQUIRE_DOCKER"}, "start a Docker engine, then make test-image test-containers (docs/testing.md)"},
	{"redis-server process", []string{"redis-server is not on PATH"}, "apt-get install redis-server"},
	{"Node.js client", []string{"(npm ci from its lockfile)", "Node.js is not installed", "installs it from npm"},
		"install Node.js and npm, then the make target each skip names"},
	{"Chromium", []string{"chromium is missing"}, "apt-get install chromium"},
}

// fixRe is the sentence a skip names its fix with.
var fixRe = regexp.MustCompile(`To run these tests: (.+?)\.(?:\s|$)`)

func main() {
	top := flag.Int("slowest", 15, "list this many of the slowest tests (0: none)")
	timesOnly := flag.Bool("times", false, "print only the times and counts, not the tests' output (make test-times)")
	flag.Parse()
	if err := summarize(os.Stdin, os.Stdout, *top, *timesOnly); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
}

// tally is what the skips of one kind said.
type tally struct {
	count int
	fixes []string // distinct, in the order first seen
}

// summarize prints what go test printed, the skips by service, the top
// slowest tests and every package's time; with timesOnly, the times alone.
func summarize(in io.Reader, out io.Writer, top int, timesOnly bool) error {
	text := out // what go test printed
	if timesOnly {
		text = io.Discard
	}
	var times timings
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	outputs := map[string]*strings.Builder{} // package + test -> its output
	skipped := make([]tally, len(kinds))
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Build errors and the like reach stdout as plain text.
			fmt.Fprintln(text, string(line))
			continue
		}
		times.add(e)
		key := e.Package + "\x00" + e.Test
		switch {
		case e.Test == "" && e.Action == "output":
			if t := strings.TrimSpace(e.Output); t != "PASS" && t != "FAIL" && !strings.HasPrefix(t, "=== ") {
				fmt.Fprint(text, e.Output)
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
				fmt.Fprint(text, b.String())
			}
			delete(outputs, key)
		case e.Action == "skip" && e.Test != "":
			if b := outputs[key]; b != nil {
				count(skipped, b.String())
			}
			delete(outputs, key)
		case e.Action == "pass":
			delete(outputs, key)
		case e.Action == "fail" && e.Test == "":
			printUnfinished(text, outputs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	times.print(out, top)
	for i, k := range kinds {
		t := skipped[i]
		if t.count == 0 {
			continue
		}
		fixes := t.fixes
		if len(fixes) == 0 {
			fixes = []string{k.how}
		}
		fmt.Fprintf(out, "\nSKIPPED: %d tests that need %s did not run. To run them: %s.\n", t.count, k.name, strings.Join(fixes, "; and "))
	}
	return nil
}

// unfinishedLines bounds what printUnfinished prints of one test: a
// timed-out package's goroutine dump runs to thousands of lines, and the
// running tests and the first goroutines are what says where it hung.
const unfinishedLines = 400

// printUnfinished prints the output of the tests of a failed package that
// never passed or failed: go test's timeout panics in the middle of them,
// and test2json files the panic and its goroutine dump under whichever test
// ran last, which never gets a result of its own.
func printUnfinished(out io.Writer, outputs map[string]*strings.Builder, pkg string) {
	var keys []string
	for key := range outputs {
		if strings.HasPrefix(key, pkg+"\x00") {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		lines := strings.SplitAfter(outputs[key].String(), "\n")
		delete(outputs, key)
		if !slices.ContainsFunc(lines, func(l string) bool { return !strings.HasPrefix(l, "=== ") && strings.TrimSpace(l) != "" }) {
			continue
		}
		fmt.Fprintf(out, "--- UNFINISHED: %s (%s)\n", strings.TrimPrefix(key, pkg+"\x00"), pkg)
		lines = testGoroutines(lines)
		if len(lines) > unfinishedLines {
			fmt.Fprint(out, strings.Join(lines[:unfinishedLines], ""))
			fmt.Fprintf(out, "… %d more lines in the go test -json output (make test keeps it in bin/test.json)\n", len(lines)-unfinishedLines)
			continue
		}
		fmt.Fprint(out, strings.Join(lines, ""))
	}
}

// testGoroutines keeps, of a goroutine dump, the goroutines with a frame
// in a _test.go file: the tests' own, which say where each one waits. The
// runtime's, the pools' and the libraries' goroutines are left out.
func testGoroutines(lines []string) []string {
	var out, block []string
	inDump := false
	flush := func() {
		if slices.ContainsFunc(block, func(l string) bool { return strings.Contains(l, "_test.go:") }) {
			out = append(out, block...)
		}
		block = block[:0]
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "goroutine "):
			flush()
			inDump = true
			block = append(block, l)
		case inDump && strings.TrimSpace(l) == "":
			block = append(block, l)
			flush()
		case inDump:
			block = append(block, l)
		default:
			out = append(out, l)
		}
	}
	flush()
	return out
}

// count files one skipped test's output under its kind, with the fix it
// names.
func count(skipped []tally, output string) {
	for i, k := range kinds {
		if !slices.ContainsFunc(k.markers, func(m string) bool { return strings.Contains(output, m) }) {
			continue
		}
		skipped[i].count++
		if m := fixRe.FindStringSubmatch(output); m != nil && !slices.Contains(skipped[i].fixes, m[1]) {
			skipped[i].fixes = append(skipped[i].fixes, m[1])
		}
		return
	}
}
