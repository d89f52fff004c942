package main

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/worktrack/worktrack/core/app"
	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// transferJSON is the summary export and import print.
type transferJSON struct {
	Object        string                      `json:"object"` // "export", "import" or "verify"
	File          string                      `json:"file,omitempty"`
	Format        string                      `json:"format"`
	FormatVersion int                         `json:"format_version"`
	SchemaVersion int64                       `json:"schema_version"`
	Source        string                      `json:"source"`
	TakenAt       string                      `json:"taken_at"`
	Workspace     *string                     `json:"workspace"`
	Counts        map[domain.ExportKind]int64 `json:"counts"`
	Bytes         int64                       `json:"bytes"`
	Workspaces    []string                    `json:"workspaces,omitempty"`
	Note          string                      `json:"note,omitempty"`
	Seconds       float64                     `json:"seconds"`
}

func summaryJSON(object, file string, s app.TransferSummary, took time.Duration) transferJSON {
	return transferJSON{Object: object, File: file, Format: s.Header.Format, FormatVersion: s.Header.FormatVersion,
		SchemaVersion: s.Header.SchemaVersion, Source: s.Header.Source, TakenAt: s.Header.TakenAt, Workspace: s.Header.Workspace,
		Counts: s.Counts, Bytes: s.Bytes, Workspaces: s.Workspaces, Seconds: took.Round(time.Millisecond).Seconds()}
}

// progressTo prints records and bytes on stderr, on one rewritten line, when
// stderr is a terminal; nothing otherwise.
func progressTo(stderr io.Writer, verb string) (app.Progress, func()) {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, func() {}
	}
	last := time.Time{}
	return func(records, bytes int64) {
			if time.Since(last) < 200*time.Millisecond {
				return
			}
			last = time.Now()
			fmt.Fprintf(stderr, "\r%s: %d records, %.1f MB", verb, records, float64(bytes)/1e6)
		}, func() {
			if !last.IsZero() {
				fmt.Fprintln(stderr)
			}
		}
}

// openIn opens a file to read, gunzipping it when it is gzip (by its first
// bytes, whatever its name).
func openIn(path string) (io.Reader, func(), error) {
	f, err := os.Open(path) //nolint:gosec // the operator names the file
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			_ = f.Close()
			return nil, nil, err
		}
		return zr, func() { _ = zr.Close(); _ = f.Close() }, nil
	}
	return br, func() { _ = f.Close() }, nil
}

func exportCmd(stdout, stderr io.Writer) *cobra.Command {
	var out, workspace, verify string
	cmd := &cobra.Command{
		Use:   "export [--out FILE] [--workspace wsp_…] | export --verify FILE",
		Short: "Write a consistent snapshot of the database (or one workspace) as NDJSON; gzip when FILE ends in .gz",
		Long: "Writes every record the service keeps (docs/export.md) from one read transaction that blocks no\n" +
			"writer, while servers serve: to FILE (gzip when it ends in .gz), or to stdout. Key secrets are never\n" +
			"in it (their hashes are); webhook secrets are as stored (sealed with WORKTRACK_SECRETS_KEY when set).\n" +
			"With --verify, reads FILE and checks its header, records, counts and checksum, without a database.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			progress, done := progressTo(stderr, map[bool]string{true: "verifying", false: "exporting"}[verify != ""])
			defer done()
			if verify != "" {
				in, closeIn, err := openIn(verify)
				if err != nil {
					return err
				}
				defer closeIn()
				s, err := app.VerifyExport(in, progress)
				if err != nil {
					return err
				}
				done()
				return printJSON(stdout, summaryJSON("verify", verify, s, time.Since(start)))
			}
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			db, _, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			w := stdout
			summaryOut, finish := stderr, func() error { return nil }
			if out != "" {
				tmp := out + ".partial"
				f, err := os.Create(tmp) //nolint:gosec // the operator names the file
				if err != nil {
					return err
				}
				var zw *gzip.Writer
				w = f
				if strings.HasSuffix(out, ".gz") {
					zw, _ = gzip.NewWriterLevel(f, gzip.BestSpeed)
					w = zw
				}
				summaryOut = stdout
				// The file appears under its name only once whole: a failed
				// export leaves no file that looks like a backup.
				finish = func() error {
					if zw != nil {
						if err := zw.Close(); err != nil {
							return err
						}
					}
					if err := f.Sync(); err != nil {
						return err
					}
					if err := f.Close(); err != nil {
						return err
					}
					return os.Rename(tmp, out)
				}
				defer func() { _ = f.Close(); _ = os.Remove(tmp) }()
			}
			s, err := app.NewTransfer(app.TransferDeps{Exporter: db, Importer: db}).Export(cmd.Context(), w, workspace, progress)
			if err != nil {
				return err
			}
			if err := finish(); err != nil {
				return err
			}
			done()
			return printJSON(summaryOut, summaryJSON("export", out, s, time.Since(start)))
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the file to write (default stdout); .gz compresses")
	cmd.Flags().StringVar(&workspace, "workspace", "", "export only this workspace (wsp_…)")
	cmd.Flags().StringVar(&verify, "verify", "", "check FILE instead of exporting")
	return cmd
}

func importCmd(stdout, stderr io.Writer) *cobra.Command {
	var in string
	var intoEmpty, merge bool
	cmd := &cobra.Command{
		Use:   "import --in FILE (--into-empty | --merge-workspace)",
		Short: "Load an export file into this database, all or nothing",
		Long: "--into-empty loads a whole database's file into a migrated database that holds no workspace: every\n" +
			"record as it was, events at their positions. --merge-workspace loads one workspace's file (export\n" +
			"--workspace) into a database that does not hold it: its events take positions after the target's.\n" +
			"One transaction: a truncated, corrupted, foreign-version or checksum-mismatched file, or an id the\n" +
			"database holds already, is refused naming the line, and nothing is written.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if intoEmpty == merge {
				return errors.New("import: say --into-empty (a whole database, into an empty one) or --merge-workspace (one workspace, into this database)")
			}
			if in == "" {
				return errors.New("import: name the file with --in FILE")
			}
			mode := ports.ImportIntoEmpty
			if merge {
				mode = ports.ImportMergeWorkspace
			}
			start := time.Now()
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			r, closeIn, err := openIn(in)
			if err != nil {
				return err
			}
			defer closeIn()
			db, _, err := openStore(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			progress, done := progressTo(stderr, "importing")
			defer done()
			info := ports.RequestInfoFrom(cmd.Context())
			by := domain.AuditActor{Type: domain.AuditByOperator, UserAgent: info.UserAgent}
			s, err := app.NewTransfer(app.TransferDeps{Exporter: db, Importer: db}).Import(cmd.Context(), r, mode, by, progress)
			if err != nil {
				return err
			}
			done()
			out := summaryJSON("import", filepath.Clean(in), s, time.Since(start))
			if s.Repositioned {
				out.Note = fmt.Sprintf("the workspace's %d events took new positions after this database's, in their order: resume its consumers from an event id, not a position",
					s.Counts[domain.ExportEvent])
			}
			return printJSON(stdout, out)
		},
	}
	cmd.Flags().StringVar(&in, "in", "", "the export file (gzip or not)")
	cmd.Flags().BoolVar(&intoEmpty, "into-empty", false, "load a whole database's file into an empty database")
	cmd.Flags().BoolVar(&merge, "merge-workspace", false, "load one workspace's file into this database")
	return cmd
}
