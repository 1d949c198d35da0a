package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/lancestore"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
)

// The bulk commands — export, import, reembed, migrate — stream memories
// between files, stores and a running clawmem. They work on the store
// directly (--db, or the data dir's store when nothing runs), and through
// the running instance's admin endpoints (export, import) when one runs.

// importOptions are the flags every importing command shares.
type importOptions struct {
	scope        string
	dryRun       bool
	skipExisting bool
	noDedup      bool
	batchSize    int
}

// client converts the flags to what a bulk target takes.
func (o importOptions) client() client.ImportOptions {
	return client.ImportOptions{Scope: o.scope, DryRun: o.dryRun, NoDedup: o.noDedup}
}

// bulkTarget finds the store the bulk commands work on, as connect does for
// the other commands: --db opens that store; else a running instance (its
// run file, --nats-url or nats.url) over NATS; with none running, the data
// dir's store, created if absent. exportOnly opens the store without the
// engine, adopting whatever dimension it has, so that a store can still be
// exported after the embedding model changed.
func (a *app) bulkTarget(ctx context.Context, exportOnly bool) (client.Bulk, *config.Config, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, err
	}
	if a.dbDir != "" {
		cfg.DBPath = a.dbDir
		t, err := openDirect(ctx, cfg, exportOnly)
		return t, cfg, err
	}
	if !a.running(cfg) {
		t, err := openDirect(ctx, cfg, exportOnly)
		return t, cfg, err
	}
	nc, err := a.dialNATS(cfg, "clawmem-cli")
	if err != nil {
		return nil, nil, err
	}
	return client.NewNATSBulk(nc), cfg, nil
}

func openDirect(ctx context.Context, cfg *config.Config, exportOnly bool) (*client.LocalBulk, error) {
	t := &client.LocalBulk{Dir: cfg.DBPath}
	var err error
	if exportOnly && cfg.Store.Backend != "lancedb" && isStoreDir(cfg.DBPath) {
		t.Store, err = sqlitestore.Open(ctx, cfg.DBPath, sqlitestore.Options{})
	} else {
		t.Engine, t.Store, err = node.OpenEngine(ctx, cfg, slog.New(slog.DiscardHandler))
	}
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\nThe store is held by a running clawmem: stop it, or let this command go through it "+
			"(leave out --db; give --nats-url if it runs elsewhere)", err)
	}
	return t, err
}

// isStoreDir reports whether dir holds a clawmem SQLite store.
func isStoreDir(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, sqlitestore.FileName))
	return err == nil && fi.Mode().IsRegular()
}

// bulkProgress is a progress bar on stderr when it is a terminal (and the
// output is not --json); nil otherwise. total -1 is an open-ended count.
func (a *app) bulkProgress(total int64, desc string, bytes bool) *progressbar.ProgressBar {
	f, ok := a.stderr.(*os.File)
	if !ok || a.jsonOut || !isatty.IsTerminal(f.Fd()) {
		return nil
	}
	opts := []progressbar.Option{progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(desc),
		progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100 * time.Millisecond)}
	if bytes {
		opts = append(opts, progressbar.OptionShowBytes(true))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return progressbar.NewOptions64(total, opts...)
}

// ---- export ----

func (a *app) exportCmd() *cobra.Command {
	var (
		scope, output, format string
		vectors               bool
	)
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write every memory to a file: JSONL (default) or the plugin's JSON export document",
		Long: `Streams every memory (or one scope's) out of the store, with no row limit.
JSONL (the default, also the daily backup's format) has one memory per line:
{id,text,category,scope,importance,timestamp,metadata}; --format json writes
memory-lancedb-pro's export document {version,exportedAt,filters,memories,count}.
--with-vectors adds each vector, so that an import into a store with the same
embedding model needs no re-embedding. With --output the file appears complete
or not at all.`,
		Example: "  clawmem export --output memories.jsonl\n  clawmem export --scope agent:main --format json --output main.json\n" +
			"  clawmem export --with-vectors | gzip > snapshot.jsonl.gz",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := portable.ParseFormat(format)
			if err != nil {
				return err
			}
			if scope != "" {
				if err := schemas.ValidateScope(scope); err != nil {
					return err
				}
			}
			t, _, err := a.bulkTarget(cmd.Context(), true)
			if err != nil {
				return err
			}
			defer t.Close()
			n, err := a.export(cmd.Context(), t, scope, output, portable.WriterOptions{Format: f, WithVectors: vectors})
			if err != nil {
				return err
			}
			if output == "" {
				return nil
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"exported": n, "output": output, "format": f, "withVectors": vectors})
			}
			fmt.Fprintf(a.stdout, "exported %d memories from %s to %s\n", n, t.Where(), output)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&scope, "scope", "", "only this scope")
	fl.StringVarP(&output, "output", "o", "", "file to write (default stdout)")
	fl.StringVar(&format, "format", "jsonl", "jsonl or json")
	fl.BoolVar(&vectors, "with-vectors", false, "include each memory's vector")
	return cmd
}

// export writes t's memories to output (stdout when empty) and returns how
// many. A file is written next to its final name and renamed into place.
func (a *app) export(ctx context.Context, t client.Bulk, scope, output string, o portable.WriterOptions) (int, error) {
	if scope != "" {
		o.Filters = map[string]string{"scope": scope}
	}
	var (
		out io.Writer = a.stdout
		tmp *os.File
	)
	if output != "" {
		var err error
		if tmp, err = os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".*.tmp"); err != nil {
			return 0, err
		}
		defer func() {
			if tmp != nil {
				tmp.Close()
				os.Remove(tmp.Name())
			}
		}()
		out = tmp
	}
	w, err := portable.NewWriter(out, o)
	if err != nil {
		return 0, err
	}
	var bar *progressbar.ProgressBar
	if total, err := t.Count(ctx, scope); err == nil {
		bar = a.bulkProgress(int64(total), "exporting", false)
	}
	err = t.Export(ctx, scope, o.WithVectors, func(m schemas.Memory) error {
		if bar != nil && w.Count()%1000 == 0 {
			_ = bar.Set(w.Count())
		}
		return w.Write(m)
	})
	if bar != nil {
		_ = bar.Finish()
	}
	if err != nil {
		return w.Count(), err
	}
	if err := w.Close(); err != nil {
		return w.Count(), err
	}
	if tmp != nil {
		if err := tmp.Sync(); err != nil {
			return w.Count(), err
		}
		if err := tmp.Close(); err != nil {
			return w.Count(), err
		}
		if err := os.Rename(tmp.Name(), output); err != nil {
			return w.Count(), err
		}
		tmp = nil
	}
	return w.Count(), nil
}

// ---- import ----

// rowSource is where imported rows come from: a file, a store, a LanceDB
// table.
type rowSource interface {
	describe() string
	// size is the progress total: bytes for a file, else rows (-1 unknown).
	size(ctx context.Context) (total int64, bytes bool)
	// position is how far rows has got, in size's unit.
	position() int64
	rows(ctx context.Context, fn func(portable.Record) error) error
	close() error
}

// fileSource reads an export file of any supported format.
type fileSource struct {
	path  string
	f     *os.File
	rd    *portable.Reader
	n     int64
	rowsN int
}

func openFileSource(path, scope string) (*fileSource, error) {
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
	return &fileSource{path: path, f: f, rd: portable.NewReader(f, portable.ReadOptions{Scope: scope})}, nil
}

func (s *fileSource) describe() string {
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

func (s *fileSource) size(context.Context) (int64, bool) {
	if fi, err := s.f.Stat(); err == nil && fi.Mode().IsRegular() {
		return fi.Size(), true
	}
	return -1, false
}

func (s *fileSource) position() int64 {
	if _, bytes := s.size(context.Background()); bytes {
		return s.rd.Offset()
	}
	return int64(s.rowsN)
}

func (s *fileSource) rows(ctx context.Context, fn func(portable.Record) error) error {
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

// note is what the file says about itself that disagrees with what was read.
func (s *fileSource) note() string {
	if h := s.rd.Header(); h.Count >= 0 && h.Count != s.rowsN {
		return fmt.Sprintf("the document says it holds %d memories; %d rows were read", h.Count, s.rowsN)
	}
	return ""
}

func (s *fileSource) close() error {
	if s.f == os.Stdin {
		return nil
	}
	return s.f.Close()
}

// memorySource reads another store: a clawmem store directory, or a LanceDB
// table through the lancedb backend.
type memorySource struct {
	name    string
	count   func(context.Context) (int, error)
	iterate func(context.Context, func(schemas.Memory) error) error
	closeFn func() error
	scope   string
	vectors bool
	n       int64
}

func (s *memorySource) describe() string { return s.name }
func (s *memorySource) position() int64  { return s.n }
func (s *memorySource) close() error     { return s.closeFn() }

func (s *memorySource) size(ctx context.Context) (int64, bool) {
	n, err := s.count(ctx)
	if err != nil {
		return -1, false
	}
	return int64(n), false
}

func (s *memorySource) rows(ctx context.Context, fn func(portable.Record) error) error {
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

// openStoreSource opens a clawmem store directory for reading; vectors
// says whether its vectors are offered to the importer (which keeps those
// of the target's size).
func openStoreSource(ctx context.Context, dir, scope string, vectors bool) (*memorySource, error) {
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

// runImport streams src into t in batches and sums up what happened. The
// next batch is read (and its JSON parsed) while the current one is
// imported. It stops at the first batch the target could not handle (its
// error is returned with the report so far): rows already written stay,
// and a rerun with --skip-existing goes on from there.
func (a *app) runImport(ctx context.Context, t client.Bulk, src rowSource, o importOptions, verb string) (portable.Report, error) {
	rep := portable.Report{QuietExists: o.skipExisting, Failures: []portable.Result{}}
	if err := t.CheckImport(ctx, o.client()); err != nil {
		return rep, errImportRefused{err}
	}
	if o.batchSize <= 0 {
		o.batchSize = 1000
	}
	total, bytes := src.size(ctx)
	bar := a.bulkProgress(total, verb, bytes)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type batch struct {
		recs []portable.Record
		pos  int64 // src.position() after it
	}
	batches := make(chan batch, 1)
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		b := make([]portable.Record, 0, o.batchSize)
		send := func() error {
			select {
			case batches <- batch{b, src.position()}:
				b = make([]portable.Record, 0, o.batchSize)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := src.rows(ctx, func(rec portable.Record) error {
			if b = append(b, rec); len(b) >= o.batchSize {
				return send()
			}
			return nil
		})
		if err == nil && len(b) > 0 {
			err = send()
		}
		readErr <- err
	}()
	var importErr error
	for b := range batches {
		if importErr != nil {
			continue // the reader is stopping
		}
		res, err := t.ImportBatch(ctx, b.recs, o.client())
		if err != nil {
			importErr = err
			cancel()
			continue
		}
		rep.Add(res)
		if bar != nil {
			bar.Describe(fmt.Sprintf("%s: %d imported, %d skipped, %d failed", verb, rep.Imported, rep.Skipped, rep.Failed))
			_ = bar.Set64(b.pos)
		}
	}
	err := <-readErr
	if importErr != nil {
		err = importErr
	}
	if bar != nil {
		_ = bar.Finish()
	}
	return rep, err
}

// errImportRefused: the target refused the import before any row.
type errImportRefused struct{ error }

func (e errImportRefused) Unwrap() error { return e.error }

// maxListed bounds the rows a human-readable report names.
const maxListed = 50

// printImport reports an import; it returns errSilent when rows failed or
// the import stopped early, so that the exit code says so.
func (a *app) printImport(rep portable.Report, src string, o importOptions, note string, runErr error) error {
	if refused, ok := errors.AsType[errImportRefused](runErr); ok {
		return refused.error
	}
	if a.jsonOut {
		out := struct {
			portable.Report
			Source string `json:"source"`
			DryRun bool   `json:"dryRun,omitempty"`
			Note   string `json:"note,omitempty"`
			Error  string `json:"error,omitempty"`
		}{Report: rep, Source: src, DryRun: o.dryRun, Note: note}
		if runErr != nil {
			out.Error = runErr.Error()
		}
		if err := a.printJSON(out); err != nil {
			return err
		}
	} else {
		w := a.stdout
		verb := "imported"
		if o.dryRun {
			verb = "would import"
		}
		fmt.Fprintf(w, "%s %d of %d rows from %s: %d skipped (%d exist, %d duplicates), %d failed\n",
			verb, rep.Imported, rep.Total(), src, rep.Skipped, rep.Exists, rep.Duplicates, rep.Failed)
		if note != "" {
			fmt.Fprintln(w, "note:", note)
		}
		list := func(rs []portable.Result) {
			for i, r := range rs {
				if i == maxListed {
					fmt.Fprintf(w, "  … and %d more (--json lists every row)\n", len(rs)-maxListed)
					return
				}
				fmt.Fprintf(w, "  %s\n", describeResult(r))
			}
		}
		list(rep.Failures)
		list(rep.Skips)
	}
	switch {
	case runErr != nil && a.jsonOut:
		return errSilent{runErr}
	case runErr != nil:
		return fmt.Errorf("%w (rows written so far stay; rerun with --skip-existing to go on)", runErr)
	case rep.Failed > 0:
		return errSilent{fmt.Errorf("%d rows failed", rep.Failed)}
	}
	return nil
}

func describeResult(r portable.Result) string {
	where := "row"
	if r.Line > 0 {
		where = "line " + strconv.Itoa(r.Line)
	}
	switch {
	case r.Status == portable.Failed:
		return fmt.Sprintf("%s: failed: %s", where, r.Reason)
	case r.Reason == portable.ReasonDuplicate:
		return fmt.Sprintf("%s: skipped: duplicate of %s (%.0f%% similar)", where, shortID(r.DuplicateOf), r.Similarity*100)
	}
	return fmt.Sprintf("%s: skipped: %s (id %s)", where, r.Reason, r.ID)
}

func shortID(id string) string {
	if len(id) > schemas.MinPrefixLen {
		return id[:schemas.MinPrefixLen]
	}
	return id
}

func (o *importOptions) flags(cmd *cobra.Command, batch int) {
	f := cmd.Flags()
	f.StringVar(&o.scope, "scope", "", "put every memory in this scope (default: each row's own, global when it has none)")
	f.BoolVar(&o.dryRun, "dry-run", false, "read and check every row, write nothing")
	f.BoolVar(&o.skipExisting, "skip-existing", false, "expect some ids to be stored already (resuming): skip them quietly")
	f.BoolVar(&o.noDedup, "no-dedup", false, "keep near-duplicates (a row is otherwise skipped at 0.95 similarity to a memory in its scope)")
	f.IntVar(&o.batchSize, "batch-size", batch, "rows embedded and written together")
}

func (o importOptions) check() error {
	if o.scope != "" {
		if err := schemas.ValidateScope(o.scope); err != nil {
			return err
		}
	}
	if o.batchSize < 1 || o.batchSize > 100000 {
		return fmt.Errorf("%w: --batch-size %d (want 1..100000)", schemas.ErrInvalid, o.batchSize)
	}
	return nil
}

func (a *app) importCmd() *cobra.Command {
	var o importOptions
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import memories from an export file (clawmem or the OpenClaw memory plugins)",
		Long: `Reads clawmem's JSONL export and daily backups, memory-lancedb-pro's JSON export
document, and memory-lancedb rows ({id,text,vector,importance,category,createdAt}, as JSONL or
a JSON array); the format is detected. Ids and timestamps are kept; each row keeps its own
scope (global when it has none) unless --scope is given. Texts are embedded with the
configured model in batches, except rows carrying a vector of the store's size. A row whose
id is stored already is skipped ("exists"), and so is a near-duplicate (0.95) of a memory in
its scope. Rows that cannot be read are reported with their line number; the rest go in.
FILE "-" reads stdin.`,
		Example: "  clawmem import memories.jsonl\n  clawmem import memory-pro-export.json --scope agent:main --dry-run\n" +
			"  clawmem import big.jsonl --skip-existing   # resume after an interruption",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.check(); err != nil {
				return err
			}
			src, err := openFileSource(args[0], o.scope)
			if err != nil {
				return err
			}
			defer src.close()
			t, _, err := a.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			checked, err := chainChecked(cmd.Context(), src, args[0], o.scope, t)
			if err != nil {
				return err
			}
			rep, err := a.runImport(cmd.Context(), t, checked, o, "importing")
			return a.printImport(rep, src.describe(), o, src.note(), err)
		},
	}
	o.flags(cmd, 1000)
	return cmd
}

// ---- delete-bulk ----

func (a *app) deleteBulkCmd() *cobra.Command {
	var (
		r      schemas.DeleteBulkRequest
		before string
	)
	cmd := &cobra.Command{
		Use:   "delete-bulk",
		Short: "Delete every memory in a scope and/or created before a date",
		Long: `Deletes every memory matching the filters: --scope, --before, or both (at least one
is required, so that nothing deletes everything by accident). --before takes a date
(2025-01-01, meaning midnight UTC), an RFC 3339 time or epoch milliseconds, and is exclusive.
--dry-run only counts.`,
		Example: "  clawmem delete-bulk --scope custom:scratch --dry-run\n  clawmem delete-bulk --scope global --before 2025-01-01",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before != "" {
				ms, err := parseBefore(before)
				if err != nil {
					return err
				}
				r.Before = ms
			}
			if r.Scope == "" && r.Before == 0 {
				return errors.New("give --scope, --before or both: delete-bulk never deletes everything")
			}
			return a.do(cmd, schemas.OpDeleteBulk, "", r, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Scope, "scope", "", "only this scope")
	f.StringVar(&before, "before", "", "only memories created before this date")
	f.BoolVar(&r.DryRun, "dry-run", false, "count, delete nothing")
	return cmd
}

// parseBefore reads a date, an RFC 3339 time or epoch milliseconds.
func parseBefore(s string) (int64, error) {
	for _, layout := range []string{time.DateOnly, time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms > 0 {
		return ms, nil
	}
	return 0, fmt.Errorf("%w: --before %q: want a date (2025-01-01), an RFC 3339 time or epoch milliseconds", schemas.ErrInvalid, s)
}

// ---- reembed ----

func (a *app) reembedCmd() *cobra.Command {
	var (
		source string
		force  bool
		o      importOptions
	)
	cmd := &cobra.Command{
		Use:   "reembed --source-db PATH",
		Short: "Copy every memory of another store into this one, embedding each text with the current model",
		Long: `Reads the store at --source-db (a clawmem store directory, or with -tags lancedb a plugin's
LanceDB database), embeds every text with the configured model and writes the memories into the
current store (--db, the data dir's store, or the running clawmem), keeping ids, timestamps,
scopes, categories, importance and metadata. Use it after changing the embedding model or its
dimensions: point a new data dir's config at the new model and re-embed from the old store.
Rerun with --skip-existing to go on after an interruption. Re-embedding the current store in
place needs --force, and the same dimensions.`,
		Example: "  clawmem reembed --source-db ~/.clawmem/store --data-dir ~/.clawmem-v2\n" +
			"  clawmem reembed --source-db /backup/store --skip-existing --batch-size 64",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if source == "" {
				return errors.New("give --source-db PATH: the store to read")
			}
			if err := o.check(); err != nil {
				return err
			}
			o.noDedup = true // a copy: the source decided what is a duplicate
			cfg, err := a.config()
			if err != nil {
				return err
			}
			target := cfg.DBPath
			if a.dbDir != "" {
				target = a.dbDir
			}
			if sameDir(source, target) {
				if !force {
					return fmt.Errorf("--source-db %s is the current store: re-embedding in place rewrites every vector; "+
						"pass --force to do that, or write into another store (--db or --data-dir)", source)
				}
				return a.reembedInPlace(cmd.Context(), cfg, target, o)
			}
			src, err := openMemorySource(cmd.Context(), source, "", false)
			if err != nil {
				return err
			}
			defer src.close()
			t, _, err := a.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			rep, err := a.runImport(cmd.Context(), t, src, o, "re-embedding")
			return a.printImport(rep, src.describe(), o, "", err)
		},
	}
	cmd.Flags().StringVar(&source, "source-db", "", "the store to read (a clawmem store directory)")
	cmd.Flags().BoolVar(&force, "force", false, "allow re-embedding the current store in place")
	f := cmd.Flags()
	f.BoolVar(&o.dryRun, "dry-run", false, "read and check every memory, write nothing")
	f.BoolVar(&o.skipExisting, "skip-existing", false, "skip ids the target has already (resuming)")
	f.IntVar(&o.batchSize, "batch-size", 32, "memories embedded together")
	return cmd
}

// openMemorySource opens a store directory to read: clawmem's, or a
// LanceDB database.
func openMemorySource(ctx context.Context, path, scope string, vectors bool) (*memorySource, error) {
	path = expandHome(path)
	if filepath.Base(path) == sqlitestore.FileName {
		path = filepath.Dir(path)
	}
	switch kind := sourceKind(path); kind {
	case kindStore:
		return openStoreSource(ctx, path, scope, vectors)
	case kindLance:
		return openLanceSource(ctx, path, scope, vectors)
	case kindMissing:
		return nil, fmt.Errorf("%s does not exist", path)
	default:
		return nil, fmt.Errorf("%s is no clawmem store (no %s in it) and no LanceDB database", path, sqlitestore.FileName)
	}
}

// reembedInPlace gives every memory of the store a new vector from the
// current model, keeping everything else.
func (a *app) reembedInPlace(ctx context.Context, cfg *config.Config, dir string, o importOptions) error {
	cfg.DBPath = dir
	t, err := openDirect(ctx, cfg, false)
	if err != nil {
		return err
	}
	defer t.Close()
	type item struct{ id, text string }
	var items []item
	if err := t.Store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
		items = append(items, item{m.ID, m.Text})
		return nil
	}); err != nil {
		return err
	}
	bar := a.bulkProgress(int64(len(items)), "re-embedding in place", false)
	done := 0
	for start := 0; start < len(items) && !o.dryRun; start += o.batchSize {
		batch := items[start:min(start+o.batchSize, len(items))]
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = it.text
		}
		vecs, err := t.Engine.Embedder().EmbedPassages(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed: %w (%d of %d memories re-embedded; rerun to redo them all)", err, done, len(items))
		}
		for i, it := range batch {
			if _, err := t.Store.Update(ctx, it.id, engine.Patch{Vector: vecs[i]}, engine.AllScopes()); err != nil && !errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("update %s: %w", it.id, err)
			}
			done++
		}
		if bar != nil {
			_ = bar.Set(done)
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	if a.jsonOut {
		return a.printJSON(map[string]any{"reembedded": done, "total": len(items), "dryRun": o.dryRun})
	}
	fmt.Fprintf(a.stdout, "re-embedded %d of %d memories in place in %s\n", done, len(items), dir)
	return nil
}

// sameDir reports whether two paths name the same directory.
func sameDir(a, b string) bool {
	a, b = expandHome(a), expandHome(b)
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

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// ---- migrate ----

// legacyPaths are where the OpenClaw memory plugins keep their LanceDB
// databases: memory-lancedb's two (the seed's "Legacy paths searched") and
// memory-lancedb-pro's default dbPath.
var legacyPaths = []string{"~/.openclaw/memory/lancedb", "~/.claude/memory/lancedb", "~/.openclaw/memory/lancedb-pro"}

type srcKind int

const (
	kindMissing srcKind = iota
	kindStore
	kindLance
	kindFile
	kindUnknown
)

// sourceKind tells what a migration source is.
func sourceKind(path string) srcKind {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return kindMissing
	case !fi.IsDir():
		return kindFile
	case isStoreDir(path):
		return kindStore
	}
	entries, _ := os.ReadDir(path)
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), ".lance") {
			return kindLance
		}
	}
	return kindUnknown
}

// migrationSource is one source found, with what reading it gave.
type migrationSource struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Rows  int    `json:"rows,omitempty"`
	Ready bool   `json:"ready"`
	Note  string `json:"note,omitempty"`
}

func (a *app) migrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Bring memories over from the OpenClaw memory plugins (check, run, verify)",
		Long: `Finds the memories of memory-lancedb (~/.openclaw/memory/lancedb, ~/.claude/memory/lancedb)
and memory-lancedb-pro (~/.openclaw/memory/lancedb-pro), or the source given with --source: a
LanceDB database (needs a build with -tags lancedb), a clawmem store directory, or a JSON/JSONL
export. "check" says what it found, "run" imports it (keeping ids and timestamps, createdAt
becoming timestamp, rows without a scope going to global, vectors kept when their size is the
store's), and "verify" checks every source row is in the store.`,
	}
	cmd.AddCommand(a.migrateCheckCmd(), a.migrateRunCmd(), a.migrateVerifyCmd())
	return cmd
}

// migrationSources are the paths a migrate command looks at.
func migrationSources(source string) []string {
	if source != "" {
		return []string{expandHome(source)}
	}
	out := make([]string, len(legacyPaths))
	for i, p := range legacyPaths {
		out[i] = expandHome(p)
	}
	return out
}

// openSource opens any migration source.
func openSource(ctx context.Context, path, scope string) (rowSource, error) {
	if sourceKind(path) == kindFile {
		return openFileSource(path, scope)
	}
	return openMemorySource(ctx, path, scope, true)
}

func (a *app) migrateCheckCmd() *cobra.Command {
	var source string
	cmd := &cobra.Command{
		Use:     "check",
		Short:   "Find legacy memories and say what a migration would read",
		Example: "  clawmem migrate check\n  clawmem migrate check --source ~/exports/memories.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var found []migrationSource
			for _, p := range migrationSources(source) {
				found = append(found, checkSource(cmd.Context(), p))
			}
			if a.jsonOut {
				return a.printJSON(found)
			}
			ready := 0
			for _, s := range found {
				switch {
				case s.Kind == "missing":
					fmt.Fprintf(a.stdout, "%s: nothing there\n", s.Path)
				case s.Ready:
					ready++
					fmt.Fprintf(a.stdout, "%s: %s, %d memories: ready (`clawmem migrate run --source %s`)\n", s.Path, s.Kind, s.Rows, s.Path)
				default:
					fmt.Fprintf(a.stdout, "%s: %s: %s\n", s.Path, s.Kind, s.Note)
				}
				if s.Ready && s.Note != "" {
					fmt.Fprintf(a.stdout, "  note: %s\n", s.Note)
				}
			}
			if ready == 0 {
				fmt.Fprintln(a.stdout, "nothing to migrate")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to check (default: the plugins' paths)")
	return cmd
}

// checkSource opens a source and counts its rows (reading a file through,
// so that bad rows show up now).
func checkSource(ctx context.Context, path string) migrationSource {
	s := migrationSource{Path: path}
	switch sourceKind(path) {
	case kindMissing:
		s.Kind = "missing"
		return s
	case kindStore:
		s.Kind = "clawmem store"
	case kindLance:
		s.Kind = "LanceDB database"
	case kindFile:
		s.Kind = "export file"
	default:
		s.Kind = "unknown"
		s.Note = "neither a LanceDB database, a clawmem store nor an export file"
		return s
	}
	src, err := openSource(ctx, path, "")
	if err != nil {
		s.Note = err.Error()
		return s
	}
	defer src.close()
	bad := 0
	if fs, ok := src.(*fileSource); ok {
		err = fs.rows(ctx, func(r portable.Record) error {
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
		var n int64
		n, _ = src.size(ctx)
		s.Rows = int(n)
		s.Kind = src.describe()
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

func (a *app) migrateRunCmd() *cobra.Command {
	var (
		source string
		o      importOptions
	)
	cmd := &cobra.Command{
		Use:     "run",
		Short:   "Import the legacy memories into the store",
		Example: "  clawmem migrate run --dry-run\n  clawmem migrate run --source ~/.openclaw/memory/lancedb --skip-existing",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			var paths []string
			for _, p := range migrationSources(source) {
				if sourceKind(p) != kindMissing || source != "" {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				return fmt.Errorf("no legacy memories found at %s; give --source", strings.Join(legacyPaths, ", "))
			}
			t, _, err := a.bulkTarget(cmd.Context(), false)
			if err != nil {
				return err
			}
			defer t.Close()
			var failed error
			for _, p := range paths {
				src, err := openSource(cmd.Context(), p, o.scope)
				if err != nil {
					return err
				}
				rep, err := a.runImport(cmd.Context(), t, src, o, "migrating")
				note := ""
				if fs, ok := src.(*fileSource); ok {
					note = fs.note()
				}
				src.close()
				if perr := a.printImport(rep, src.describe(), o, note, err); perr != nil {
					if err != nil {
						return perr
					}
					failed = perr
				}
			}
			return failed
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to import (default: every plugin path that exists)")
	o.flags(cmd, 1000)
	return cmd
}

// verifyReport is migrate verify's finding for one source.
type verifyReport struct {
	Source     string   `json:"source"`
	Rows       int      `json:"rows"`
	Present    int      `json:"present"`
	Duplicates int      `json:"duplicates"` // missing, but the same text is stored in the scope
	Changed    int      `json:"changed"`    // the id is stored with another text
	Missing    int      `json:"missing"`
	Unreadable int      `json:"unreadable"`
	Examples   []string `json:"examples,omitempty"`
}

func (a *app) migrateVerifyCmd() *cobra.Command {
	var source, scope string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check that every legacy memory is in the store",
		Long: `Reads the source again and looks up every row in the store: present (same id and text),
stored as a duplicate (the id is missing but the scope holds the same text: the import skipped it as
a near-duplicate), changed (same id, other text) or missing. Exits 1 when a row is missing.`,
		Example: "  clawmem migrate verify\n  clawmem migrate verify --source memories.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var paths []string
			for _, p := range migrationSources(source) {
				if sourceKind(p) != kindMissing || source != "" {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				return fmt.Errorf("no legacy memories found at %s; give --source", strings.Join(legacyPaths, ", "))
			}
			t, _, err := a.bulkTarget(ctx, true)
			if err != nil {
				return err
			}
			defer t.Close()
			byID := map[string]string{}
			texts := map[string]bool{}
			if err := t.Export(ctx, "", false, func(m schemas.Memory) error {
				byID[m.ID] = m.Text
				texts[m.Scope+"\x00"+m.Text] = true
				return nil
			}); err != nil {
				return err
			}
			var reports []verifyReport
			missing := 0
			for _, p := range paths {
				src, err := openSource(ctx, p, scope)
				if err != nil {
					return err
				}
				r := verifyReport{Source: src.describe()}
				err = src.rows(ctx, func(rec portable.Record) error {
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
					if problem != "" && len(r.Examples) < 10 {
						where := m.ID
						if rec.Line > 0 {
							where = fmt.Sprintf("line %d (%s)", rec.Line, m.ID)
						}
						r.Examples = append(r.Examples, fmt.Sprintf("%s: %s: %q", where, problem, oneLine(m.Text, 80)))
					}
					return nil
				})
				src.close()
				if err != nil {
					return err
				}
				missing += r.Missing + r.Changed
				reports = append(reports, r)
			}
			if a.jsonOut {
				if err := a.printJSON(reports); err != nil {
					return err
				}
			} else {
				for _, r := range reports {
					fmt.Fprintf(a.stdout, "%s: %d rows: %d present, %d stored as duplicates, %d changed, %d missing, %d unreadable\n",
						r.Source, r.Rows, r.Present, r.Duplicates, r.Changed, r.Missing, r.Unreadable)
					for _, e := range r.Examples {
						fmt.Fprintln(a.stdout, "  "+e)
					}
				}
			}
			if missing > 0 {
				return errSilent{fmt.Errorf("%d source rows are not in the store", missing)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "the source to verify (default: every plugin path that exists)")
	cmd.Flags().StringVar(&scope, "scope", "", "the --scope the migration was run with")
	return cmd
}

// chainChecked reads a file once more before importing it to find rows
// whose supersede chain is broken (a successor in neither the file nor the
// store, or a cycle); those rows fail with the reason, the rest import.
// Standard input cannot be read twice: its chains are not checked.
func chainChecked(ctx context.Context, src *fileSource, path, scope string, t client.Bulk) (rowSource, error) {
	if path == "-" {
		return src, nil
	}
	pre, err := openFileSource(path, scope)
	if err != nil {
		return nil, err
	}
	defer pre.close()
	var rows []portable.ChainRow
	if err := pre.rows(ctx, func(r portable.Record) error {
		if r.Err == nil {
			rows = append(rows, portable.ChainRow{Line: r.Line, ID: r.Memory.ID, SupersededBy: r.Memory.SupersededBy})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	bad, err := portable.CheckChains(rows, func(id string) (bool, error) { return t.Has(ctx, id) })
	if err != nil {
		return nil, fmt.Errorf("check supersede chains: %w", err)
	}
	if len(bad) == 0 {
		return src, nil
	}
	return &badLines{fileSource: src, bad: bad}, nil
}

// badLines fails the rows of its lines with their reasons.
type badLines struct {
	*fileSource
	bad map[int]string
}

func (b *badLines) rows(ctx context.Context, fn func(portable.Record) error) error {
	return b.fileSource.rows(ctx, func(r portable.Record) error {
		if reason, ok := b.bad[r.Line]; ok && r.Err == nil {
			r.Err = &portable.RowError{Reason: reason}
		}
		return fn(r)
	})
}
