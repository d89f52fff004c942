package domain

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"time"
)

// Export files (docs/export.md): a consistent snapshot of the whole
// database, or of one workspace, as newline-delimited JSON. The first line
// is the header, then one record a line, kinds in ExportKinds' order (a
// record only refers to kinds before it), then the trailer: the count of
// each kind and the SHA-256 of every line before it. This file holds the
// rules every file keeps, for the writer and the reader alike; the store
// turns rows into records and back.

// ExportFormat names the format in a header.
const ExportFormat = "worktrack-export"

// ExportVersion is the format version this binary writes. A reader takes
// files of versions 1 to ExportVersion, and refuses a newer one: its
// records may hold what this binary cannot keep.
const ExportVersion = 1

// ExportKind is the kind of a record: one table of the schema.
type ExportKind string

// The kinds, in the order a file holds them.
const (
	ExportWorkspace   ExportKind = "workspace"
	ExportUser        ExportKind = "user"
	ExportAPIKey      ExportKind = "api_key"
	ExportProject     ExportKind = "project"
	ExportTask        ExportKind = "task"
	ExportWebhook     ExportKind = "webhook"
	ExportEvent       ExportKind = "event"
	ExportDelivery    ExportKind = "delivery"
	ExportIdempotency ExportKind = "idempotency_key"
	ExportAuditEvent  ExportKind = "audit_event"
	ExportAuditHead   ExportKind = "audit_head"
)

// ExportKinds is every kind, in file order: each one's records refer only
// to records of kinds before it (a task to its project, a delivery to its
// event and webhook), so an import inserts them in this order.
var ExportKinds = []ExportKind{
	ExportWorkspace, ExportUser, ExportAPIKey, ExportProject, ExportTask, ExportWebhook,
	ExportEvent, ExportDelivery, ExportIdempotency, ExportAuditEvent, ExportAuditHead,
}

// ExportForbidden are fields a record of a kind must never hold: an API
// key's secret is never stored, only its hash, and no file may carry one.
var ExportForbidden = map[ExportKind][]string{
	ExportAPIKey: {"secret"},
}

// ExportHeader is a file's first line.
type ExportHeader struct {
	Kind          string  `json:"kind"` // "header"
	Format        string  `json:"format"`
	FormatVersion int     `json:"format_version"`
	SchemaVersion int64   `json:"schema_version"`
	Source        string  `json:"source"` // "postgres" or "sqlite"
	TakenAt       string  `json:"taken_at"`
	Workspace     *string `json:"workspace"`
}

// ExportTrailer is a file's last line.
type ExportTrailer struct {
	Kind   string               `json:"kind"` // "trailer"
	Counts map[ExportKind]int64 `json:"counts"`
	SHA256 string               `json:"sha256"`
}

// NewExportHeader is the header of a snapshot taken at takenAt from a
// database of schema version schema, of one workspace when workspaceID is
// not empty.
func NewExportHeader(source string, schema int64, takenAt time.Time, workspaceID string) ExportHeader {
	h := ExportHeader{Kind: "header", Format: ExportFormat, FormatVersion: ExportVersion, SchemaVersion: schema,
		Source: source, TakenAt: FormatTime(takenAt)}
	if workspaceID != "" {
		h.Workspace = &workspaceID
	}
	return h
}

// ExportWriter writes a file: the header, the records as the store renders
// them (one JSON object a line, with its "kind"), and the trailer with the
// counts and the checksum of every line before it.
type ExportWriter struct {
	w      *bufio.Writer
	sum    hash.Hash
	counts map[ExportKind]int64
	last   int
	bytes  int64
}

// NewExportWriter writes the header to w.
func NewExportWriter(w io.Writer, h ExportHeader) (*ExportWriter, error) {
	x := &ExportWriter{w: bufio.NewWriterSize(w, 1<<16), sum: sha256.New(), counts: map[ExportKind]int64{}}
	line, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return x, x.line(line)
}

func (x *ExportWriter) line(b []byte) error {
	b = append(b, '\n')
	x.sum.Write(b)
	x.bytes += int64(len(b))
	_, err := x.w.Write(b)
	return err
}

// Record writes one record of kind k: obj is a JSON object that begins with
// its "kind" member (the store writes it so). Kinds must come in
// ExportKinds' order.
func (x *ExportWriter) Record(k ExportKind, obj []byte) error {
	i := slices.Index(ExportKinds, k)
	if i < 0 || i < x.last {
		return fmt.Errorf("export: a %s record out of order", k)
	}
	x.last = i
	x.counts[k]++
	return x.line(obj)
}

// Counts is how many records of each kind were written so far.
func (x *ExportWriter) Counts() map[ExportKind]int64 { return x.counts }

// Bytes is how many bytes were written so far.
func (x *ExportWriter) Bytes() int64 { return x.bytes }

// Close writes the trailer and flushes.
func (x *ExportWriter) Close() error {
	counts := map[ExportKind]int64{}
	for _, k := range ExportKinds {
		counts[k] = x.counts[k]
	}
	line, err := json.Marshal(ExportTrailer{Kind: "trailer", Counts: counts, SHA256: hex.EncodeToString(x.sum.Sum(nil))})
	if err != nil {
		return err
	}
	if _, err := x.w.Write(append(line, '\n')); err != nil {
		return err
	}
	return x.w.Flush()
}

// ExportRecord is one record of a file as read: its kind, its fields as
// the JSON values the line held, and its line number (from 1, the header).
type ExportRecord struct {
	Kind   ExportKind
	Fields map[string]json.RawMessage
	Line   int64
}

// Str is a string field ("" when absent or null).
func (r ExportRecord) Str(name string) string {
	var s string
	if raw, ok := r.Fields[name]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}

// ExportError is why a file is refused: the line at fault and the reason.
type ExportError struct {
	Line   int64
	Reason string
}

func (e *ExportError) Error() string {
	if e.Line == 0 {
		return "export file: " + e.Reason
	}
	return fmt.Sprintf("export file, line %d: %s", e.Line, e.Reason)
}

// ExportReader reads a file and checks its rules as it goes: the header
// (format and version), each record (a JSON object of a known kind, in
// order, with an id, in the header's workspace when it names one, holding
// no forbidden field), and, at the end, the trailer (present, last, counts
// and checksum equal to what was read). Next returns io.EOF only after a
// trailer that holds; anything else is an *ExportError naming the line.
type ExportReader struct {
	r      *bufio.Reader
	sum    hash.Hash
	line   int64
	bytes  int64
	header ExportHeader
	counts map[ExportKind]int64
	last   int
	done   bool
}

// maxExportLine bounds one line: a record is a row of the schema, whose
// largest values (an event's payload, an idempotent answer) are bounded by
// the API's 1 MiB body limit.
const maxExportLine = 16 << 20

// NewExportReader reads and checks the header.
func NewExportReader(r io.Reader) (*ExportReader, error) {
	x := &ExportReader{r: bufio.NewReaderSize(r, 1<<16), sum: sha256.New(), counts: map[ExportKind]int64{}}
	raw, err := x.next()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ExportError{Line: 1, Reason: "the file is empty"}
		}
		return nil, err
	}
	x.sum.Write(raw)
	if err := json.Unmarshal(raw, &x.header); err != nil || x.header.Kind != "header" {
		return nil, &ExportError{Line: 1, Reason: "the first line is not an export header"}
	}
	if x.header.Format != ExportFormat {
		return nil, &ExportError{Line: 1, Reason: fmt.Sprintf("format %q is not %s", x.header.Format, ExportFormat)}
	}
	if x.header.FormatVersion < 1 || x.header.FormatVersion > ExportVersion {
		return nil, &ExportError{Line: 1, Reason: fmt.Sprintf("format version %d: this binary reads versions 1 to %d (a newer binary wrote it)",
			x.header.FormatVersion, ExportVersion)}
	}
	if x.header.Workspace != nil && !IsID(*x.header.Workspace, PrefixWorkspace) {
		return nil, &ExportError{Line: 1, Reason: "the header's workspace is not a workspace id"}
	}
	return x, nil
}

// Header is the file's header.
func (x *ExportReader) Header() ExportHeader { return x.header }

// Line is the number of the last line read.
func (x *ExportReader) Line() int64 { return x.line }

// Bytes is how many bytes were read so far.
func (x *ExportReader) Bytes() int64 { return x.bytes }

// Counts is how many records of each kind were read so far.
func (x *ExportReader) Counts() map[ExportKind]int64 { return x.counts }

// next reads one line, with its newline; the caller adds it to the
// checksum (the trailer is not in it).
func (x *ExportReader) next() ([]byte, error) {
	line, err := x.r.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		// A long line: gather it whole.
		var more []byte
		more, err = x.r.ReadSlice('\n')
		line = append(append([]byte(nil), line...), more...)
		if len(line) > maxExportLine {
			return nil, &ExportError{Line: x.line + 1, Reason: "the line is longer than 16 MiB"}
		}
	}
	x.line++
	x.bytes += int64(len(line))
	if errors.Is(err, io.EOF) {
		if len(line) == 0 {
			x.line--
			return nil, io.EOF
		}
		return nil, &ExportError{Line: x.line, Reason: "the file ends in the middle of a line: it is truncated"}
	}
	if err != nil {
		return nil, &ExportError{Line: x.line, Reason: err.Error()}
	}
	return line, nil
}

// Next reads the next record; io.EOF once the trailer was read and holds.
func (x *ExportReader) Next() (ExportRecord, error) {
	if x.done {
		return ExportRecord{}, io.EOF
	}
	raw, err := x.next()
	if errors.Is(err, io.EOF) {
		return ExportRecord{}, &ExportError{Line: x.line + 1, Reason: "the file ends without its trailer: it is truncated"}
	}
	if err != nil {
		return ExportRecord{}, err
	}
	// The trailer's checksum covers the lines before it: peek at the
	// kind, cheaply, before adding the line.
	if bytes.HasPrefix(raw, []byte(`{"kind":"trailer"`)) {
		return ExportRecord{}, x.trailer(raw, hex.EncodeToString(x.sum.Sum(nil)))
	}
	x.sum.Write(raw)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return ExportRecord{}, &ExportError{Line: x.line, Reason: "not a JSON object: the line is corrupted"}
	}
	var kind string
	if err := json.Unmarshal(fields["kind"], &kind); err != nil || kind == "" {
		return ExportRecord{}, &ExportError{Line: x.line, Reason: "the record has no kind"}
	}
	if kind == "trailer" {
		return ExportRecord{}, &ExportError{Line: x.line, Reason: "the trailer is not written as the writer writes it"}
	}
	k := ExportKind(kind)
	i := slices.Index(ExportKinds, k)
	switch {
	case i < 0:
		return ExportRecord{}, &ExportError{Line: x.line, Reason: fmt.Sprintf("unknown kind %q", kind)}
	case i < x.last:
		return ExportRecord{}, &ExportError{Line: x.line, Reason: fmt.Sprintf("a %s record after %s records: out of order", k, ExportKinds[x.last])}
	}
	x.last = i
	delete(fields, "kind")
	rec := ExportRecord{Kind: k, Fields: fields, Line: x.line}
	for _, f := range ExportForbidden[k] {
		if _, ok := fields[f]; ok {
			return ExportRecord{}, &ExportError{Line: x.line, Reason: fmt.Sprintf("a %s record must not hold %q", k, f)}
		}
	}
	if ws := x.header.Workspace; ws != nil {
		owner := rec.Str("workspace_id")
		if k == ExportWorkspace {
			owner = rec.Str("id")
		}
		if k != ExportIdempotency && owner != *ws {
			return ExportRecord{}, &ExportError{Line: x.line, Reason: fmt.Sprintf("a %s record of workspace %q in a file of workspace %s", k, owner, *ws)}
		}
	}
	x.counts[k]++
	return rec, nil
}

// trailer checks the trailer, whose checksum covers every line before it.
func (x *ExportReader) trailer(raw []byte, sum string) error {
	var t ExportTrailer
	if err := json.Unmarshal(raw, &t); err != nil {
		return &ExportError{Line: x.line, Reason: "the trailer is corrupted"}
	}
	if t.SHA256 != sum {
		return &ExportError{Line: x.line, Reason: "the checksum does not match the file's lines: the file was changed or corrupted"}
	}
	for _, k := range ExportKinds {
		if t.Counts[k] != x.counts[k] {
			return &ExportError{Line: x.line, Reason: fmt.Sprintf("the trailer counts %d %s records, the file holds %d", t.Counts[k], k, x.counts[k])}
		}
	}
	if extra, err := x.r.Peek(1); len(extra) > 0 || (err != nil && !errors.Is(err, io.EOF)) {
		return &ExportError{Line: x.line + 1, Reason: "lines after the trailer"}
	}
	x.done = true
	return io.EOF
}
