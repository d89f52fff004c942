//go:build race

package rest_test

// raceEnabled: the race detector slows SQLite (C translated to Go) by about
// forty times; tests that size work in CPU time scale it down.
const raceEnabled = true
