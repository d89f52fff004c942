package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/worktrack/worktrack/core/domain"
	"github.com/worktrack/worktrack/core/ports"
)

// Transfer is export and import (docs/export.md): the operator's backup,
// restore, move of a workspace and move off the embedded default. The
// file's rules are the core's (domain.ExportWriter, domain.ExportReader);
// the store reads and writes the rows; the command line wires files.
type Transfer struct{ d TransferDeps }

// TransferDeps are the ports Transfer uses.
type TransferDeps struct {
	Exporter ports.Exporter
	Importer ports.Importer
	Clock    ports.Clock
	IDs      ports.IDGenerator
}

// NewTransfer makes the export and import use cases.
func NewTransfer(d TransferDeps) *Transfer {
	if d.Clock == nil {
		d.Clock = SystemClock{}
	}
	if d.IDs == nil {
		d.IDs = RandomIDs{}
	}
	mustHave(map[string]any{"Exporter": d.Exporter, "Importer": d.Importer})
	return &Transfer{d: d}
}

// Progress is told, now and then, how many records and bytes went by.
type Progress func(records, bytes int64)

// TransferSummary is what a file held, or what an import wrote.
type TransferSummary struct {
	Header     domain.ExportHeader
	Counts     map[domain.ExportKind]int64
	Bytes      int64
	Workspaces []string
	// Repositioned: a merged workspace's events took positions after the
	// target's.
	Repositioned bool
}

// exportSink writes the store's snapshot into a file.
type exportSink struct {
	out         io.Writer
	workspaceID string
	w           *domain.ExportWriter
	header      domain.ExportHeader
	progress    Progress
	n           int64
}

func (s *exportSink) Begin(source string, schema int64, takenAt time.Time) error {
	s.header = domain.NewExportHeader(source, schema, takenAt, s.workspaceID)
	var err error
	s.w, err = domain.NewExportWriter(s.out, s.header)
	return err
}

func (s *exportSink) Record(k domain.ExportKind, obj []byte) error {
	if err := s.w.Record(k, obj); err != nil {
		return err
	}
	if s.n++; s.progress != nil && s.n%10000 == 0 {
		s.progress(s.n, s.w.Bytes())
	}
	return nil
}

// Export writes a snapshot of the database, or of one workspace, to out.
// A workspace that does not exist is resource_not_found (param
// workspace).
func (s *Transfer) Export(ctx context.Context, out io.Writer, workspaceID string, progress Progress) (TransferSummary, error) {
	if workspaceID != "" && !domain.IsID(workspaceID, domain.PrefixWorkspace) {
		return TransferSummary{}, domain.Invalid("workspace", "Must be a workspace id (wsp_…).")
	}
	sink := &exportSink{out: out, workspaceID: workspaceID, progress: progress}
	if err := s.d.Exporter.Export(ctx, workspaceID, sink); err != nil {
		return TransferSummary{}, err
	}
	if workspaceID != "" && sink.w.Counts()[domain.ExportWorkspace] == 0 {
		return TransferSummary{}, &domain.Error{Code: domain.CodeNotFound, Param: "workspace", Message: "No workspace " + workspaceID + "."}
	}
	if err := sink.w.Close(); err != nil {
		return TransferSummary{}, err
	}
	if progress != nil {
		progress(sink.n, sink.w.Bytes())
	}
	return TransferSummary{Header: sink.header, Counts: sink.w.Counts(), Bytes: sink.w.Bytes()}, nil
}

// readingSource is a file read for an import, with progress.
type readingSource struct {
	r        *domain.ExportReader
	progress Progress
	n        int64
}

func (s *readingSource) Header() domain.ExportHeader { return s.r.Header() }

func (s *readingSource) Next() (domain.ExportRecord, error) {
	rec, err := s.r.Next()
	if err == nil {
		if s.n++; s.progress != nil && s.n%10000 == 0 {
			s.progress(s.n, s.r.Bytes())
		}
	}
	return rec, err
}

// Import loads the file in into the database: a whole database's into an
// empty one (ImportIntoEmpty), or one workspace's into a database that
// does not hold it (ImportMergeWorkspace). All or nothing: a file that
// does not hold (truncated, corrupted, of a newer format version, its
// checksum or counts wrong) or a record the database refuses (an id it
// holds already) is a *domain.ExportError naming the line, and nothing is
// written. Each imported workspace's audit log records the import
// (workspace.imported, by actor), in the same transaction.
func (s *Transfer) Import(ctx context.Context, in io.Reader, mode ports.ImportMode, by domain.AuditActor, progress Progress) (TransferSummary, error) {
	r, err := domain.NewExportReader(in)
	if err != nil {
		return TransferSummary{}, err
	}
	src := &readingSource{r: r, progress: progress}
	seal := func(ws string, head domain.AuditHead, counts map[domain.ExportKind]int64) (domain.AuditEvent, domain.AuditHead) {
		imported := map[string]any{}
		for k, n := range counts {
			imported[string(k)] = n
		}
		changes := map[string]domain.AuditChange{
			"records":  {From: nil, To: imported},
			"source":   {From: nil, To: r.Header().Source},
			"taken_at": {From: nil, To: r.Header().TakenAt},
		}
		e := domain.NewAuditEvent(s.d.IDs.NewID(domain.PrefixAudit), ws, domain.AuditWorkspaceImported, by,
			domain.AuditTarget{Type: domain.AuditTargetWorkspace, ID: ws}, changes, "")
		return e.Seal(head, s.d.Clock.Now())
	}
	res, err := s.d.Importer.Import(ctx, mode, src, seal)
	if err != nil {
		var xe *domain.ExportError
		if errors.As(err, &xe) {
			return TransferSummary{}, xe
		}
		return TransferSummary{}, fmt.Errorf("import: %w", err)
	}
	if progress != nil {
		progress(src.n, r.Bytes())
	}
	return TransferSummary{Header: r.Header(), Counts: res.Counts, Bytes: r.Bytes(), Workspaces: res.Workspaces, Repositioned: res.Repositioned}, nil
}

// VerifyExport reads a file and checks every rule of it (header, order,
// the records' shape, counts, checksum) without a database.
func VerifyExport(in io.Reader, progress Progress) (TransferSummary, error) {
	r, err := domain.NewExportReader(in)
	if err != nil {
		return TransferSummary{}, err
	}
	var n int64
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return TransferSummary{}, err
		}
		if n++; progress != nil && n%10000 == 0 {
			progress(n, r.Bytes())
		}
	}
	return TransferSummary{Header: r.Header(), Counts: r.Counts(), Bytes: r.Bytes()}, nil
}
