//go:build !race

package rest_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
