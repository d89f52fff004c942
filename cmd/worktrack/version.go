package main

import (
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are stamped at build time by `make build`:
//
//	-ldflags "-X main.version=v1.2.3 -X main.commit=abc1234"
//
// A binary built otherwise (go run, go build, go install) falls back on
// what the Go toolchain recorded: the module version and the VCS revision.
var (
	version = ""
	commit  = ""
)

// buildInfo is what `worktrack version` prints.
type buildInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, Commit: commit, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" && info.Main.Version != "" {
			b.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if b.Commit == "" && s.Key == "vcs.revision" {
				b.Commit = s.Value
			}
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	return b
}

// String is the one line of `worktrack --version`.
func (b buildInfo) String() string {
	return "worktrack " + b.Version + " (commit " + b.Commit + ", " + b.Go + ")"
}

func versionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: `Print the version, commit and Go version as JSON ({"version":…,"commit":…,"go":…})`,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return printJSON(stdout, currentBuild())
		},
	}
}
