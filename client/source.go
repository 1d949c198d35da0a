package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// Source is where imported rows come from: an export file, another clawmem
// store, or a memory plugin's LanceDB table. Import reads it once; the
// migration checks read a fresh one again.
type Source interface {
	// Describe names the source for reports: the file and its detected
	// format, or the store and its dimensions.
	Describe() string
	// Size is the progress total: bytes for a regular file, else rows
	// (-1 when unknown).
	Size(ctx context.Context) (total int64, bytes bool)
	// Position is how far Rows has got, in Size's unit.
	Position() int64
	// Rows calls fn with every row in order. A row that cannot be read
	// comes with its Err set, so that it is reported and reading goes on.
	Rows(ctx context.Context, fn func(portable.Record) error) error
	// Note is what the source says about itself that disagrees with what
	// was read ("" when nothing does); ask after Rows.
	Note() string
	Close() error
}

// FileSource reads an export file of any format the portable package
// detects: clawmem's JSONL, memory-lancedb-pro's JSON document,
// memory-lancedb's rows.
type FileSource struct {
	path  string
	scope string
	f     *os.File
	rd    *portable.Reader
	rowsN int
}

// OpenFileSource opens path ("-" for standard input) to read; scope, when
// set, replaces every row's own.
func OpenFileSource(path, scope string) (*FileSource, error) {
	var f *os.File
	if path == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		if fi, err := f.Stat(); err == nil && fi.IsDir() {
			f.Close()
			return nil, fmt.Errorf("%s is a directory, not an export file", path)
		}
	}
	return &FileSource{path: path, scope: scope, f: f, rd: portable.NewReader(f, portable.ReadOptions{Scope: scope})}, nil
}

// Describe names the file and its format ("stdin" for standard input).
func (s *FileSource) Describe() string {
	f, err := s.rd.Format()
	if err != nil {
		return s.path
	}
	name := s.path
	if name == "-" {
		name = "stdin"
	}
	return fmt.Sprintf("%s (%s)", name, f.Describe())
}

// Size is the file's size in bytes; a pipe has none, and counts rows.
func (s *FileSource) Size(context.Context) (int64, bool) {
	if fi, err := s.f.Stat(); err == nil && fi.Mode().IsRegular() {
		return fi.Size(), true
	}
	return -1, false
}

// Position is the bytes read into rows so far, or the rows for a pipe.
func (s *FileSource) Position() int64 {
	if _, bytes := s.Size(context.Background()); bytes {
		return s.rd.Offset()
	}
	return int64(s.rowsN)
}

// Rows reads the file to its end; only an I/O error (or ctx) stops it.
func (s *FileSource) Rows(ctx context.Context, fn func(portable.Record) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		rec, err := s.rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", s.path, err)
		}
		s.rowsN++
		if err := fn(rec); err != nil {
			return err
		}
	}
}

// Note tells when a JSON document's own count disagrees with the rows read.
func (s *FileSource) Note() string {
	if h := s.rd.Header(); h.Count >= 0 && h.Count != s.rowsN {
		return fmt.Sprintf("the document says it holds %d memories; %d rows were read", h.Count, s.rowsN)
	}
	return ""
}

// Close closes the file; standard input stays open.
func (s *FileSource) Close() error {
	if s.f == os.Stdin {
		return nil
	}
	return s.f.Close()
}

// ChainChecked reads src's file once more before it is imported into b, to
// find rows whose supersede chain is broken (a successor in neither the
// file nor the store, or a cycle): the returned source fails those rows
// with the reason and passes the rest on unchanged. Standard input cannot
// be read twice, so its chains are not checked.
func ChainChecked(ctx context.Context, src *FileSource, b Bulk) (Source, error) {
	if src.path == "-" {
		return src, nil
	}
	pre, err := OpenFileSource(src.path, src.scope)
	if err != nil {
		return nil, err
	}
	defer pre.Close()
	var rows []portable.ChainRow
	if err := pre.Rows(ctx, func(r portable.Record) error {
		if r.Err == nil {
			rows = append(rows, portable.ChainRow{Line: r.Line, ID: r.Memory.ID, SupersededBy: r.Memory.SupersededBy})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	bad, err := portable.CheckChains(rows, func(id string) (bool, error) { return b.Has(ctx, id) })
	if err != nil {
		return nil, fmt.Errorf("check supersede chains: %w", err)
	}
	if len(bad) == 0 {
		return src, nil
	}
	return &badLines{FileSource: src, bad: bad}, nil
}

// badLines fails the rows of its lines with their reasons.
type badLines struct {
	*FileSource
	bad map[int]string
}

func (b *badLines) Rows(ctx context.Context, fn func(portable.Record) error) error {
	return b.FileSource.Rows(ctx, func(r portable.Record) error {
		if reason, ok := b.bad[r.Line]; ok && r.Err == nil {
			r.Err = &portable.RowError{Reason: reason}
		}
		return fn(r)
	})
}

// memorySource reads another store: a clawmem store directory, or a
// LanceDB table through the lancedb backend.
type memorySource struct {
	name    string
	count   func(context.Context) (int, error)
	iterate func(context.Context, func(schemas.Memory) error) error
	closeFn func() error
	scope   string
	vectors bool
	n       int64
}

func (s *memorySource) Describe() string { return s.name }
func (s *memorySource) Position() int64  { return s.n }
func (s *memorySource) Note() string     { return "" }
func (s *memorySource) Close() error     { return s.closeFn() }

func (s *memorySource) Size(ctx context.Context) (int64, bool) {
	n, err := s.count(ctx)
	if err != nil {
		return -1, false
	}
	return int64(n), false
}

func (s *memorySource) Rows(ctx context.Context, fn func(portable.Record) error) error {
	return s.iterate(ctx, func(m schemas.Memory) error {
		s.n++
		if !s.vectors {
			m.Vector = nil
		}
		if s.scope != "" {
			m.Scope = s.scope
		}
		return fn(portable.Record{Memory: m})
	})
}

// OpenStoreSource opens a store directory to read: clawmem's (the
// directory, or its database file), or a plugin's LanceDB database. scope,
// when set, replaces every row's own; vectors says whether the stored
// vectors are offered to the importer, which keeps those of the target's
// size (a re-embed leaves them out, to embed every text anew).
func OpenStoreSource(ctx context.Context, path, scope string, vectors bool) (Source, error) {
	path = distill.ExpandHome(path)
	if filepath.Base(path) == sqlitestore.FileName {
		path = filepath.Dir(path)
	}
	switch KindOf(path) {
	case KindStore:
		return openClawmemStore(ctx, path, scope, vectors)
	case KindLance:
		return openLanceSource(ctx, path, scope, vectors)
	case KindMissing:
		return nil, fmt.Errorf("%s does not exist", path)
	default:
		return nil, fmt.Errorf("%s is no clawmem store (no %s in it) and no LanceDB database", path, sqlitestore.FileName)
	}
}

// openClawmemStore opens a clawmem store directory for reading, history
// included.
func openClawmemStore(ctx context.Context, dir, scope string, vectors bool) (*memorySource, error) {
	st, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{})
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\nThe source store is held by a running clawmem: stop that clawmem first", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open source store %s: %w", dir, err)
	}
	return &memorySource{
		name: fmt.Sprintf("the clawmem store at %s (%d dimensions)", dir, st.Dimensions()),
		count: func(ctx context.Context) (int, error) {
			s, err := st.Stats(ctx, engine.AllScopes())
			return s.Total + s.History, err
		},
		iterate: func(ctx context.Context, fn func(schemas.Memory) error) error {
			return st.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: vectors}, fn)
		},
		closeFn: st.Close, scope: scope, vectors: vectors,
	}, nil
}

// openLanceSource opens a plugin's LanceDB table through the lancedb
// backend; a build without it says how to get the memories out instead.
func openLanceSource(ctx context.Context, dir, scope string, vectors bool) (*memorySource, error) {
	src, err := lancestore.OpenLegacy(ctx, dir)
	if errors.Is(err, lancestore.ErrNotBuilt) {
		return nil, fmt.Errorf("%s is a LanceDB database, and this clawmem was built without LanceDB support. "+
			"Either build clawmem with `go build -tags lancedb ./cmd/clawmem`, or export the memories with the plugin "+
			"(`openclaw memory-pro export --output memories.json`) and run `clawmem import memories.json`", dir)
	}
	if err != nil {
		return nil, fmt.Errorf("open LanceDB table at %s: %w", dir, err)
	}
	return &memorySource{
		name:    fmt.Sprintf("the %s LanceDB table at %s (%d dimensions)", src.Plugin(), dir, src.Dimensions()),
		count:   src.Count,
		iterate: src.Iterate,
		closeFn: src.Close, scope: scope, vectors: vectors,
	}, nil
}

// OpenSource opens any migration source: an export file, a clawmem store
// or a LanceDB database, vectors kept.
func OpenSource(ctx context.Context, path, scope string) (Source, error) {
	if KindOf(path) == KindFile {
		return OpenFileSource(path, scope)
	}
	return OpenStoreSource(ctx, path, scope, true)
}

// SourceKind is what a path given as a source holds, told from the file
// system alone (nothing is opened).
type SourceKind int

// The kinds of source.
const (
	KindMissing SourceKind = iota // nothing at the path
	KindStore                     // a clawmem store directory
	KindLance                     // a directory holding *.lance tables
	KindFile                      // a file: an export, to be read as one
	KindUnknown                   // a directory that is neither
)

// KindOf tells what path is. A store's database file stands for its
// store, as a re-embed's --source-db takes it.
func KindOf(path string) SourceKind {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return KindMissing
	case !fi.IsDir() && filepath.Base(path) == sqlitestore.FileName && IsStoreDir(filepath.Dir(path)):
		return KindStore
	case !fi.IsDir():
		return KindFile
	case IsStoreDir(path):
		return KindStore
	}
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".lance") {
			return KindLance
		}
	}
	return KindUnknown
}

// IsStoreDir reports whether dir holds a clawmem SQLite store.
func IsStoreDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, sqlitestore.FileName))
	return err == nil && fi.Mode().IsRegular()
}

// SameDir reports whether two paths name the same store directory (a
// store's database file standing for its directory in a), so that a
// re-embed can refuse to read and write one store unasked.
func SameDir(a, b string) bool {
	a, b = distill.ExpandHome(a), distill.ExpandHome(b)
	if filepath.Base(a) == sqlitestore.FileName {
		a = filepath.Dir(a)
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	ca, _ := filepath.Abs(a)
	cb, _ := filepath.Abs(b)
	return filepath.Clean(ca) == filepath.Clean(cb)
}
