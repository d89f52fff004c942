package main

import "testing"

func TestMemProfileRate(t *testing.T) {
	const goDefault = 512 * 1024
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"no profiler: sampling off", nil, 0},
		{"profiler served: Go's rate kept", map[string]string{"WORKTRACK_PPROF_ADDR": "127.0.0.1:6060"}, goDefault},
		{"operator's GODEBUG kept", map[string]string{"GODEBUG": "madvdontneed=1, memprofilerate=1"}, goDefault},
		{"other GODEBUG settings: sampling off", map[string]string{"GODEBUG": "madvdontneed=1,gctrace=1"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memProfileRate(func(k string) string { return tc.env[k] }, goDefault); got != tc.want {
				t.Fatalf("memProfileRate = %d, want %d", got, tc.want)
			}
		})
	}
}
