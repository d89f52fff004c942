package ports

import (
	"context"
	"time"

	"github.com/worktrack/worktrack/core/domain"
)

// Exporter reads a consistent snapshot of the database for an export file
// (docs/export.md). Implemented by adapters/store.
type Exporter interface {
	// Export reads one snapshot, of every workspace or of workspaceID's
	// rows, without blocking writers, and hands it to sink: Begin once,
	// then every row as a JSON object, kind after kind in
	// domain.ExportKinds' order.
	Export(ctx context.Context, workspaceID string, sink ExportSink) error
}

// ExportSink receives a snapshot.
type ExportSink interface {
	// Begin is told the source's dialect, its schema version and the
	// snapshot's instant, before any record.
	Begin(source string, schemaVersion int64, takenAt time.Time) error
	// Record takes one record: a JSON object whose first member is its
	// "kind". obj is reused after Record returns.
	Record(kind domain.ExportKind, obj []byte) error
}

// ImportMode says what a file goes into.
type ImportMode int

// The import modes.
const (
	// ImportIntoEmpty loads a whole database's file into a database that
	// holds no workspace: every row as it was, events at their positions.
	ImportIntoEmpty ImportMode = iota
	// ImportMergeWorkspace loads one workspace's file into a database
	// that does not hold that workspace: its events take positions after
	// the target's, in their order.
	ImportMergeWorkspace
)

// ImportSource is a file being read, record after record, its rules
// checked as it goes (domain.ExportReader).
type ImportSource interface {
	Header() domain.ExportHeader
	// Next returns the next record, io.EOF after a trailer that holds, or
	// a *domain.ExportError.
	Next() (domain.ExportRecord, error)
}

// ImportResult is what an import wrote.
type ImportResult struct {
	Counts     map[domain.ExportKind]int64
	Workspaces []string
	// Repositioned: the events took new positions after the target's.
	Repositioned bool
}

// Importer loads a file into the database. Implemented by adapters/store.
type Importer interface {
	// Import loads src in one transaction: all of it, or nothing (a
	// refusal is a *domain.ExportError naming the line). Before the
	// commit, seal is called for each workspace imported with its audit
	// chain's head after the import, and returns the record to append
	// (workspace.imported) and the new head: they commit with the rows.
	Import(ctx context.Context, mode ImportMode, src ImportSource,
		seal func(workspaceID string, head domain.AuditHead, counts map[domain.ExportKind]int64) (domain.AuditEvent, domain.AuditHead)) (ImportResult, error)
}
