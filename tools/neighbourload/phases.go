package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"
)

// window is when a phase ran.
type window struct{ start, end time.Time }

// accessLine is what the server's access log says of one request.
type accessLine struct {
	Time      time.Time `json:"time"`
	Msg       string    `json:"msg"`
	Method    string    `json:"method"`
	UserID    string    `json:"user_id"`
	LatencyMS float64   `json:"latency_ms"`
	QueuedMS  float64   `json:"queued_ms"`
	DBMS      float64   `json:"db_ms"`
}

// bLines are the access log lines of B's reads (its users' GETs).
func bLines(log string, users []string) []accessLine {
	var out []accessLine
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"user_id":"`)) {
			continue
		}
		var l accessLine
		if json.Unmarshal(line, &l) != nil || l.Msg != "request" || !slices.Contains(users, l.UserID) || l.Method != http.MethodGet {
			continue
		}
		out = append(out, l)
	}
	return out
}

// phaseTimes are B's reads in one window, by where their time went.
type phaseTimes struct {
	total, queued, db, other []time.Duration
}

func phasesOf(lines []accessLine, w window) phaseTimes {
	d := func(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
	var p phaseTimes
	for _, l := range lines {
		if l.Time.Before(w.start) || l.Time.After(w.end.Add(5*time.Second)) {
			continue
		}
		p.total = append(p.total, d(l.LatencyMS))
		p.queued = append(p.queued, d(l.QueuedMS))
		p.db = append(p.db, d(l.DBMS))
		p.other = append(p.other, max(d(l.LatencyMS-l.QueuedMS-l.DBMS), 0))
	}
	return p
}
