package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the logBuffer's timer goroutine
// and the test to use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogBufferWritesInfoLinesLaterAndWarningsAtOnce(t *testing.T) {
	var out syncBuffer
	log, buf := newLogger(&out, Config{LogFormat: logJSON})
	buf.interval = time.Hour // nothing is flushed by the clock until "third"

	log.Info("first")
	if got := out.String(); got != "" {
		t.Fatalf("an info line was written at once, unbatched: %q", got)
	}
	// A warning flushes everything before it, in order.
	log.Warn("second")
	got := out.String()
	if i, j := strings.Index(got, `"msg":"first"`), strings.Index(got, `"msg":"second"`); i < 0 || j < i {
		t.Fatalf("after a warning, want both lines in order, got %q", got)
	}

	// An info line alone reaches the writer by itself, without a Flush.
	buf.interval = logFlushInterval
	log.Info("third")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"msg":"third"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the info line was never flushed: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Handlers derived with attributes or groups flush at warn as well.
	log.With("k", "v").WithGroup("g").Error("fourth", "x", 1)
	if !strings.Contains(out.String(), `"msg":"fourth","k":"v","g":{"x":1}`) {
		t.Fatalf("an error of a derived logger was not flushed at once: %q", out.String())
	}
	if err := buf.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestLogBufferKeepsConcurrentLinesWhole(t *testing.T) {
	var out syncBuffer
	log, buf := newLogger(&out, Config{LogFormat: logJSON})
	const writers, lines = 8, 2000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				log.Info("request", "n", fmt.Sprintf("%d-%d", w, i), "pad", strings.Repeat("x", i%300))
			}
		})
	}
	wg.Wait()
	if err := buf.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		i := strings.Index(line, `"n":"`)
		if !strings.HasPrefix(line, "{") || !strings.HasSuffix(line, "}") || i < 0 {
			t.Fatalf("a line was cut or mixed with another: %q", line)
		}
		n := line[i+5:]
		seen[n[:strings.IndexByte(n, '"')]] = true
	}
	if len(seen) != writers*lines {
		t.Fatalf("%d distinct lines, want %d", len(seen), writers*lines)
	}
}

// failOnce fails its first write, as stderr on a full disk would, then
// takes every write.
type failOnce struct {
	syncBuffer
	failed bool
}

func (f *failOnce) Write(p []byte) (int, error) {
	if !f.failed {
		f.failed = true
		return 0, errors.New("no space left on device")
	}
	return f.syncBuffer.Write(p)
}

func TestLogBufferWritesAgainAfterAFailedWrite(t *testing.T) {
	out := &failOnce{}
	log, _ := newLogger(out, Config{LogFormat: logJSON})
	log.Warn("lost") // its flush fails
	log.Warn("kept")
	if got := out.String(); strings.Contains(got, `"msg":"lost"`) || !strings.Contains(got, `"msg":"kept"`) {
		t.Fatalf("after one failed write, want the next line written, got %q", got)
	}
}
