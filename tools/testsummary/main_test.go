package main

import (
	"strings"
	"testing"
)

func TestSummaryCountsSkipsByServiceAndShowsFailures(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"start","Package":"p"}`,
		`{"Action":"run","Package":"p","Test":"TestPG"}`,
		`{"Action":"output","Package":"p","Test":"TestPG","Output":"=== RUN   TestPG\n"}`,
		`{"Action":"output","Package":"p","Test":"TestPG","Output":"    x.go:1: TEST_DATABASE_URL is unset and no container could be started. Skipping.\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestPG"}`,
		`{"Action":"output","Package":"p","Test":"TestPG2","Output":"TEST_DATABASE_URL is unset. Skipping.\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestPG2"}`,
		`{"Action":"output","Package":"p","Test":"TestRedis","Output":"TEST_REDIS_URL is not set. Skipping.\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestRedis"}`,
		`{"Action":"output","Package":"p","Test":"TestOK","Output":"fine\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestOK"}`,
		`{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad\n    x.go:9: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestBad"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`# p [build failed]`,
	}, "\n")
	var out strings.Builder
	if err := summarize(strings.NewReader(in), &out, 15, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"x.go:9: boom", "FAIL\tp\t0.1s", "# p [build failed]",
		"SKIPPED: 2 tests that need PostgreSQL did not run",
		"SKIPPED: 1 tests that need Redis did not run",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	for _, not := range []string{"fine", "=== RUN", "Node.js"} {
		if strings.Contains(got, not) {
			t.Errorf("%q should not be printed:\n%s", not, got)
		}
	}
}

// The summary names the fix each skip gave for this machine, not a guess:
// with Docker running but no registry, make test-image; with Node.js
// installed but one client missing, that client's make target only.
func TestSummaryNamesTheFixTheSkipsGave(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"p","Test":"TestPG","Output":"    x.go:1: storetest: PostgreSQL unavailable: TEST_DATABASE_URL is unset and no container could be started: image postgres:16-alpine: pull access denied. To run these tests: make test-image: no image registry answers. Skipping.\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestPG"}`,
		`{"Action":"output","Package":"p","Test":"TestPG2","Output":"storetest: PostgreSQL unavailable: same. To run these tests: make test-image: no image registry answers. Skipping.\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestPG2"}`,
		`{"Action":"output","Package":"q","Test":"TestHook","Output":"standardwebhooks is not installed in ../../tools/webhook-verify (npm ci from its lockfile). To run these tests: make webhook-verify. Skipping.\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestHook"}`,
		`{"Action":"output","Package":"q","Test":"TestWS","Output":"graphql-ws is not installed in ../tools/graphql-ws-client (npm ci from its lockfile). To run these tests: make graphql-ws-client. Skipping.\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestWS"}`,
	}, "\n")
	var out strings.Builder
	if err := summarize(strings.NewReader(in), &out, 15, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"SKIPPED: 2 tests that need PostgreSQL did not run. To run them: make test-image: no image registry answers.\n",
		"SKIPPED: 2 tests that need Node.js client did not run. To run them: make webhook-verify; and make graphql-ws-client.\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	for _, not := range []string{"start a Docker engine", "install Node.js"} {
		if strings.Contains(got, not) {
			t.Errorf("%q is not this machine's fix:\n%s", not, got)
		}
	}
}

// The summary ends with the slowest top-level tests, every package's wall
// time, slowest first, and the count of tests and subtests by outcome; with
// -times, that alone.
func TestSummaryShowsWhereTheTimeWent(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"output","Package":"a","Test":"TestQuick","Output":"chatter\n"}`,
		`{"Action":"pass","Package":"a","Test":"TestQuick","Elapsed":0.2}`,
		`{"Action":"pass","Package":"a","Test":"TestSlow/sqlite","Elapsed":3}`,
		`{"Action":"pass","Package":"a","Test":"TestSlow/postgres","Elapsed":4}`,
		`{"Action":"pass","Package":"a","Test":"TestSlow","Elapsed":7.1}`,
		`{"Action":"skip","Package":"a","Test":"TestNeedsRedis","Elapsed":0}`,
		`{"Action":"pass","Package":"a","Elapsed":7.5}`,
		`{"Action":"output","Package":"b","Test":"TestMiddling","Output":"--- FAIL: TestMiddling\n"}`,
		`{"Action":"fail","Package":"b","Test":"TestMiddling","Elapsed":2.5}`,
		`{"Action":"fail","Package":"b","Elapsed":9}`,
	}, "\n")
	for _, timesOnly := range []bool{false, true} {
		var out strings.Builder
		if err := summarize(strings.NewReader(in), &out, 2, timesOnly); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		want := "\nSLOWEST 2 TESTS (wall seconds, subtests included):\n" +
			"      7.1  TestSlow a\n" +
			"      2.5  TestMiddling b\n" +
			"\nPACKAGES (wall seconds of each test binary; they run side by side):\n" +
			"      9.0  b\n" +
			"      7.5  a\n" +
			"     16.5  in all\n" +
			"\n4 passed, 1 failed, 1 skipped\n"
		if !strings.Contains(got, want) {
			t.Errorf("times (timesOnly %v):\n%s\nwant them to contain:\n%s", timesOnly, got, want)
		}
		if printed := strings.Contains(got, "--- FAIL: TestMiddling"); printed == timesOnly {
			t.Errorf("timesOnly %v: a failing test's output printed: %v\n%s", timesOnly, printed, got)
		}
	}
}

// A package that times out prints its panic, which test2json files under
// the test that ran last and which never gets a result: the summary prints
// it, so that CI's log says which test hung and where.
func TestSummaryPrintsWhatATimedOutPackageWasRunning(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestQuiet"}`,
		`{"Action":"output","Package":"p","Test":"TestQuiet","Output":"=== RUN   TestQuiet\n"}`,
		`{"Action":"run","Package":"p","Test":"TestB/sub"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"=== RUN   TestB/sub\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"panic: test timed out after 2s\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"\trunning tests:\n\t\tTestA (2s)\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"goroutine 7 [select]:\np.TestB.func1()\n\t/src/p/b_test.go:9 +0x1\n\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"goroutine 8 [IO wait]:\nnet.(*conn).Read()\n\t/go/src/net/net.go:1 +0x1\n\n"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t2.0s\n"}`,
		`{"Action":"fail","Package":"p","Elapsed":2}`,
	}, "\n")
	var out strings.Builder
	if err := summarize(strings.NewReader(in), &out, 0, false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"--- UNFINISHED: TestB/sub (p)", "panic: test timed out after 2s", "TestA (2s)", "goroutine 7 [select]"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "IO wait") {
		t.Errorf("a goroutine with no frame in a test file is printed:\n%s", got)
	}
	if strings.Contains(got, "TestQuiet") {
		t.Errorf("a test that printed nothing but its start is listed:\n%s", got)
	}
}
