package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
)

// timings collects where a run's time went, from the elapsed seconds
// test2json gives each finished test and package, and how many tests and
// subtests passed, failed and were skipped.
type timings struct {
	packages map[string]float64 // package -> wall seconds of its test binary
	tests    []testTime         // top-level tests
	passed   int
	failed   int
	skipped  int
}

type testTime struct {
	pkg, name string
	seconds   float64
}

// add records e when it ends a test or a package.
func (t *timings) add(e event) {
	if e.Action != "pass" && e.Action != "fail" && e.Action != "skip" {
		return
	}
	if e.Test == "" {
		if t.packages == nil {
			t.packages = map[string]float64{}
		}
		t.packages[e.Package] = e.Elapsed
		return
	}
	switch e.Action {
	case "pass":
		t.passed++
	case "fail":
		t.failed++
	case "skip":
		t.skipped++
	}
	if !strings.Contains(e.Test, "/") && e.Action != "skip" {
		t.tests = append(t.tests, testTime{e.Package, e.Test, e.Elapsed})
	}
}

// print writes the slowest top-level tests (at most top of them; none when
// top is 0), every package's wall time, slowest first, and the totals line.
func (t *timings) print(out io.Writer, top int) {
	if top > 0 && len(t.tests) > 0 {
		tests := slices.Clone(t.tests)
		slices.SortStableFunc(tests, func(a, b testTime) int { return cmp.Compare(b.seconds, a.seconds) })
		tests = tests[:min(top, len(tests))]
		fmt.Fprintf(out, "\nSLOWEST %d TESTS (wall seconds, subtests included):\n", len(tests))
		for _, x := range tests {
			fmt.Fprintf(out, "  %7.1f  %s %s\n", x.seconds, x.name, strings.TrimPrefix(x.pkg, modulePrefix))
		}
	}
	if len(t.packages) > 0 {
		pkgs := make([]string, 0, len(t.packages))
		for p := range t.packages {
			pkgs = append(pkgs, p)
		}
		slices.SortStableFunc(pkgs, func(a, b string) int {
			return cmp.Or(cmp.Compare(t.packages[b], t.packages[a]), cmp.Compare(a, b))
		})
		var sum float64
		fmt.Fprintln(out, "\nPACKAGES (wall seconds of each test binary; they run side by side):")
		for _, p := range pkgs {
			if t.packages[p] < 0.05 {
				continue // no test files, or nothing that took time
			}
			sum += t.packages[p]
			fmt.Fprintf(out, "  %7.1f  %s\n", t.packages[p], p)
		}
		fmt.Fprintf(out, "  %7.1f  in all\n", sum)
	}
	// The plain closing line CI reads: tests and subtests alike.
	fmt.Fprintf(out, "\n%d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
}

// modulePrefix is left off package paths in the slowest-tests list, where
// the test name matters more.
const modulePrefix = "github.com/worktrack/worktrack/"
