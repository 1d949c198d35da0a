// Package portable moves memories in and out of a store as files: it reads
// every format the OpenClaw memory plugins and clawmem write — clawmem's
// JSONL export and daily backup, memory-lancedb-pro's JSON export document,
// memory-lancedb's rows (createdAt, no scope) — detecting which one a file
// is, writes clawmem's JSONL and the plugin's JSON document, and imports
// rows into an engine.Store keeping their ids and timestamps. It knows
// nothing of NATS: the CLI and the query service both use it.
package portable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clawmem/clawmem/schemas"
)

// Format is a file format.
type Format string

const (
	// JSONL is one memory per line: clawmem's export and daily backup, and
	// memory-lancedb rows dumped one per line.
	JSONL Format = "jsonl"
	// JSON is memory-lancedb-pro's export document: {version, exportedAt,
	// count, filters, memories:[...]}.
	JSON Format = "json"
	// JSONArray is a JSON array of rows, as a LanceDB table dumps.
	JSONArray Format = "json-array"
)

// ParseFormat accepts the formats a Writer writes.
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case JSONL, "":
		return JSONL, nil
	case JSON:
		return JSON, nil
	}
	return "", fmt.Errorf("%w: format %q (want jsonl or json)", schemas.ErrInvalid, s)
}

// DocumentVersion is the version field of the JSON export document.
const DocumentVersion = "1.0"

// MaxLineBytes bounds one JSONL line (and one element of a JSON document).
// The largest valid memory — 64 KiB of text escaped as \uXXXX, 64 KiB of
// metadata and a few thousand vector components — stays well below it.
const MaxLineBytes = 4 << 20

// ErrRow is wrapped by every per-row problem: the row is reported as failed
// and reading goes on.
var ErrRow = errors.New("bad row")

// RowError is why one row cannot be imported. It matches ErrRow and
// schemas.ErrInvalid with errors.Is.
type RowError struct{ Reason string }

func (e *RowError) Error() string { return e.Reason }

// Is makes errors.Is(err, ErrRow) and errors.Is(err, schemas.ErrInvalid) true.
func (e *RowError) Is(target error) bool { return target == ErrRow || target == schemas.ErrInvalid }

// rowError makes a RowError; a wrapped validation error loses its
// "invalid input: " prefix, which says nothing in a per-row report.
func rowError(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return &RowError{Reason: strings.ReplaceAll(msg, schemas.ErrInvalid.Error()+": ", "")}
}

// Record is one row read from a file: the memory it holds, or why it holds
// none. Line is where the row starts (1-based; 0 when not read from a file).
type Record struct {
	Line   int
	Memory schemas.Memory
	Err    error
}
