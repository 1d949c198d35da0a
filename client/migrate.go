package client

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

// A migration brings the memories of the OpenClaw memory plugins (or any
// source Import reads) into clawmem: CheckSource says what a source holds,
// Import brings it over, Verify checks every row arrived.

// LegacyPaths are where the OpenClaw memory plugins keep their LanceDB
// databases: memory-lancedb's two (the seed's "Legacy paths searched") and
// memory-lancedb-pro's default dbPath.
var LegacyPaths = []string{"~/.openclaw/memory/lancedb", "~/.claude/memory/lancedb", "~/.openclaw/memory/lancedb-pro"}

// candidatePaths are the paths a migration looks at: source when given,
// else every legacy path, with ~ expanded.
func candidatePaths(source string) []string {
	if source != "" {
		return []string{distill.ExpandHome(source)}
	}
	out := make([]string, len(LegacyPaths))
	for i, p := range LegacyPaths {
		out[i] = distill.ExpandHome(p)
	}
	return out
}

// FoundSources are the paths a migration reads: source when given (even
// if it does not exist, so that opening it says so), else the legacy
// paths that exist. None is an error that says where it looked.
func FoundSources(source string) ([]string, error) {
	var paths []string
	for _, p := range candidatePaths(source) {
		if KindOf(p) != KindMissing || source != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no legacy memories found at %s; give --source", strings.Join(LegacyPaths, ", "))
	}
	return paths, nil
}

// Migrate imports the sources at paths into b one after the other, with
// the same job, and hands each source's outcome (with the error that
// stopped its import, if any) to each. It stops when a source cannot be
// opened, and when each returns an error for an import that stopped; an
// error each returns for an import that ran through (rows failed) is
// returned once every source has had its turn.
func Migrate(ctx context.Context, b Bulk, paths []string, job ImportJob, each func(ImportOutcome, error) error) error {
	var failed error
	for _, p := range paths {
		src, err := OpenSource(ctx, p, job.Options.Scope)
		if err != nil {
			return err
		}
		out, err := Import(ctx, b, src, job)
		src.Close()
		if eerr := each(out, err); eerr != nil {
			if err != nil {
				return eerr
			}
			failed = eerr
		}
	}
	return failed
}

// SourceCheck is what CheckSource found at one path.
type SourceCheck struct {
	Path string `json:"path"`
	// Kind is "missing", "unknown", or what the source is: the export
	// file's format, the store and its dimensions.
	Kind string `json:"kind"`
	// Rows is how many rows can be read.
	Rows int `json:"rows,omitempty"`
	// Ready says a migration can read the source.
	Ready bool `json:"ready"`
	// Note is why the source is not ready, or a warning when it is.
	Note string `json:"note,omitempty"`
}

// CheckSources checks every path a migration looks at: source when given,
// else every legacy path (those with nothing there say so).
func CheckSources(ctx context.Context, source string) []SourceCheck {
	var found []SourceCheck
	for _, p := range candidatePaths(source) {
		found = append(found, CheckSource(ctx, p))
	}
	return found
}

// CheckSource opens the source at path and counts its rows, reading an
// export file through so that bad rows show up before the migration.
func CheckSource(ctx context.Context, path string) SourceCheck {
	s := SourceCheck{Path: path}
	switch KindOf(path) {
	case KindMissing:
		s.Kind = "missing"
		return s
	case KindStore:
		s.Kind = "clawmem store"
	case KindLance:
		s.Kind = "LanceDB database"
	case KindFile:
		s.Kind = "export file"
	default:
		s.Kind = "unknown"
		s.Note = "neither a LanceDB database, a clawmem store nor an export file"
		return s
	}
	src, err := OpenSource(ctx, path, "")
	if err != nil {
		s.Note = err.Error()
		return s
	}
	defer src.Close()
	bad := 0
	if fs, ok := src.(*FileSource); ok {
		err = fs.Rows(ctx, func(r portable.Record) error {
			if r.Err != nil {
				bad++
			}
			return nil
		})
		if f, ferr := fs.rd.Format(); ferr == nil {
			s.Kind = f.Describe()
		}
		s.Rows = fs.rowsN - bad
	} else {
		n, _ := src.Size(ctx)
		s.Rows = int(n)
		s.Kind = src.Describe()
	}
	if err != nil {
		s.Note = err.Error()
		return s
	}
	s.Ready = true
	if bad > 0 {
		s.Note = fmt.Sprintf("%d rows cannot be read; `clawmem migrate run` reports them by line", bad)
	}
	return s
}

// WriteChecks writes CheckSource's findings for people, a line a source
// (and its note), saying what to run for each source that is ready.
func WriteChecks(w io.Writer, found []SourceCheck) {
	ready := 0
	for _, s := range found {
		switch {
		case s.Kind == "missing":
			fmt.Fprintf(w, "%s: nothing there\n", s.Path)
		case s.Ready:
			ready++
			fmt.Fprintf(w, "%s: %s, %d memories: ready (`clawmem migrate run --source %s`)\n", s.Path, s.Kind, s.Rows, s.Path)
		default:
			fmt.Fprintf(w, "%s: %s: %s\n", s.Path, s.Kind, s.Note)
		}
		if s.Ready && s.Note != "" {
			fmt.Fprintf(w, "  note: %s\n", s.Note)
		}
	}
	if ready == 0 {
		fmt.Fprintln(w, "nothing to migrate")
	}
}

// VerifyReport is Verify's finding for one source.
type VerifyReport struct {
	Source     string `json:"source"`
	Rows       int    `json:"rows"`
	Present    int    `json:"present"`    // the id is stored with the same text
	Duplicates int    `json:"duplicates"` // missing, but the same text is stored in the scope
	Changed    int    `json:"changed"`    // the id is stored with another text
	Missing    int    `json:"missing"`
	Unreadable int    `json:"unreadable"`
	// Examples name the first MaxVerifyExamples rows found changed or
	// missing: where, which problem, the start of the text.
	Examples []string `json:"examples,omitempty"`
}

// MaxVerifyExamples bounds the rows a VerifyReport names.
const MaxVerifyExamples = 10

// NotStored is how many rows of the reports the store lacks: missing, or
// stored with another text.
func NotStored(reports []VerifyReport) int {
	n := 0
	for _, r := range reports {
		n += r.Missing + r.Changed
	}
	return n
}

// WriteVerify writes Verify's reports for people: a line of counts a
// source, then its examples.
func WriteVerify(w io.Writer, reports []VerifyReport) {
	for _, r := range reports {
		fmt.Fprintf(w, "%s: %d rows: %d present, %d stored as duplicates, %d changed, %d missing, %d unreadable\n",
			r.Source, r.Rows, r.Present, r.Duplicates, r.Changed, r.Missing, r.Unreadable)
		for _, e := range r.Examples {
			fmt.Fprintln(w, "  "+e)
		}
	}
}

// Verify reads every source again (scope as the migration was run with)
// and looks each row up in b: present (same id and text), stored as a
// duplicate (the id is missing but its scope holds the same text: the
// import skipped it as a near-duplicate), changed (same id, other text)
// or missing.
func Verify(ctx context.Context, b Bulk, paths []string, scope string) ([]VerifyReport, error) {
	byID := map[string]string{}
	texts := map[string]bool{}
	if err := b.Export(ctx, "", false, func(m schemas.Memory) error {
		byID[m.ID] = m.Text
		texts[m.Scope+"\x00"+m.Text] = true
		return nil
	}); err != nil {
		return nil, err
	}
	var reports []VerifyReport
	for _, p := range paths {
		src, err := OpenSource(ctx, p, scope)
		if err != nil {
			return reports, err
		}
		r := VerifyReport{Source: src.Describe()}
		err = src.Rows(ctx, func(rec portable.Record) error {
			r.Rows++
			if rec.Err != nil {
				r.Unreadable++
				return nil
			}
			m := rec.Memory
			text, ok := byID[m.ID]
			var problem string
			switch {
			case ok && text == m.Text:
				r.Present++
			case ok:
				r.Changed++
				problem = "changed"
			case texts[m.Scope+"\x00"+m.Text]:
				r.Duplicates++
			default:
				r.Missing++
				problem = "missing"
			}
			if problem != "" && len(r.Examples) < MaxVerifyExamples {
				where := m.ID
				if rec.Line > 0 {
					where = fmt.Sprintf("line %d (%s)", rec.Line, m.ID)
				}
				r.Examples = append(r.Examples, fmt.Sprintf("%s: %s: %q", where, problem, textutil.OneLine(m.Text, 80)))
			}
			return nil
		})
		src.Close()
		if err != nil {
			return reports, err
		}
		reports = append(reports, r)
	}
	return reports, nil
}
