package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
)

// The bulk operations — export, import, re-embed — stream memories between
// files, stores and a running clawmem through a Bulk, so that every front
// end (the CLI, the MCP server, the console) moves memories the same way
// and only draws the progress and prints the outcome its own way.

// OpenLocalBulk opens cfg's store (cfg.DBPath) in this process. exportOnly
// opens the store alone, adopting whatever dimensions it has, so that a
// store can still be exported after the embedding model changed; else it
// comes with its engine, which an import or a re-embed needs. A store a
// running clawmem holds says how to go through that clawmem instead.
func OpenLocalBulk(ctx context.Context, cfg *config.Config, exportOnly bool) (*LocalBulk, error) {
	t := &LocalBulk{Dir: cfg.DBPath}
	var err error
	if exportOnly && cfg.Store.Backend != "lancedb" {
		// An export reads: it must not leave a new store behind.
		t.Store, err = sqlitestore.Open(ctx, cfg.DBPath, sqlitestore.Options{MustExist: true})
		if errors.Is(err, sqlitestore.ErrNoStore) {
			err = noStore(cfg.DBPath)
		}
	} else {
		t.Engine, t.Store, err = storeopen.Engine(ctx, cfg, slog.New(slog.DiscardHandler))
	}
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\nThe store is held by a running clawmem: stop it, or let this command go through it "+
			"(leave out --db; give --nats-url if it runs elsewhere)", err)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// noStore says that dir holds no store, and which commands make one.
func noStore(dir string) error {
	return fmt.Errorf("%w at %s: the commands that make one are clawmem up, import, migrate, backup restore and rebuild --into",
		sqlitestore.ErrNoStore, dir)
}

// requireStore refuses a directory that holds no clawmem store (or
// another program's database) before a command opens its engine there,
// which would create one. LanceDB stores are the lancedb backend's.
func requireStore(ctx context.Context, cfg *config.Config) error {
	if cfg.Store.Backend == "lancedb" {
		return nil
	}
	ok, err := sqlitestore.Exists(ctx, cfg.DBPath)
	if err == nil && !ok {
		err = noStore(cfg.DBPath)
	}
	return err
}

// Progress is how far a bulk operation has got, handed to the front end's
// callback so that it can draw a bar: once at the start (Done 0), as the
// work goes on, and a last time with Final set, whether the operation
// succeeded or not.
type Progress struct {
	Done  int64 // rows, or bytes when Bytes
	Total int64 // -1 when unknown
	Bytes bool
	// Report is the import's outcome so far; nil before the first batch,
	// and for export and re-embedding.
	Report *portable.Report
	Final  bool
}

// report calls fn when there is one.
func report(fn func(Progress), p Progress) {
	if fn != nil {
		fn(p)
	}
}

// ExportOptions say what Export writes.
type ExportOptions struct {
	Scope       string // "" for every scope
	Format      portable.Format
	WithVectors bool
	// Progress, when set, hears how many memories are written; it is only
	// called when the store could count them first.
	Progress func(Progress)
}

// Export writes b's memories (history included) to w in o's format and
// returns how many.
func Export(ctx context.Context, b Bulk, w io.Writer, o ExportOptions) (int, error) {
	wo := portable.WriterOptions{Format: o.Format, WithVectors: o.WithVectors}
	if o.Scope != "" {
		wo.Filters = map[string]string{"scope": o.Scope}
	}
	pw, err := portable.NewWriter(w, wo)
	if err != nil {
		return 0, err
	}
	progress := o.Progress
	total, err := b.Count(ctx, o.Scope)
	if err != nil {
		progress = nil // an export needs no count: go on without a bar
	}
	report(progress, Progress{Total: int64(total)})
	err = b.Export(ctx, o.Scope, o.WithVectors, func(m schemas.Memory) error {
		if n := pw.Count(); n > 0 && n%1000 == 0 {
			report(progress, Progress{Done: int64(n), Total: int64(total)})
		}
		return pw.Write(m)
	})
	if err == nil {
		err = pw.Close()
	}
	report(progress, Progress{Done: int64(pw.Count()), Total: int64(total), Final: true})
	return pw.Count(), err
}

// ExportFile exports into the file at path, which appears complete or not
// at all: the export is written next to it and renamed into place.
func ExportFile(ctx context.Context, b Bulk, path string, o ExportOptions) (int, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, err
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	n, err := Export(ctx, b, tmp, o)
	if err != nil {
		return n, err
	}
	if err := tmp.Sync(); err != nil {
		return n, err
	}
	if err := tmp.Close(); err != nil {
		return n, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return n, err
	}
	tmp = nil
	return n, nil
}

// ImportJob is one import's settings beyond what each batch asks of the
// store.
type ImportJob struct {
	Options ImportOptions
	// BatchSize is how many rows are embedded and written together
	// (default 1000).
	BatchSize int
	// SkipExisting expects some ids to be stored already (a resumed
	// import): those rows are counted, not listed one by one.
	SkipExisting bool
	// Progress, when set, hears the source's position after every batch.
	Progress func(Progress)
}

// ImportRefusedError is returned when the target refused the import before
// reading any row (an undefined scope, say): there is no report to show.
type ImportRefusedError struct{ Err error }

func (e ImportRefusedError) Error() string { return e.Err.Error() }
func (e ImportRefusedError) Unwrap() error { return e.Err }

// ImportOutcome is an import's report as front ends show it, as JSON or
// as text: what became of the rows, what they were read from, and what
// stopped the import early.
type ImportOutcome struct {
	portable.Report
	Source string `json:"source"`
	DryRun bool   `json:"dryRun,omitempty"`
	Note   string `json:"note,omitempty"`
	Error  string `json:"error,omitempty"`
}

// WriteText writes the outcome for people: a summary line, the source's
// note, then the failed rows and the skipped ones, at most limit of each;
// the line that counts the rest ends with more (where to find them).
func (o ImportOutcome) WriteText(w io.Writer, limit int, more string) {
	verb := "imported"
	if o.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(w, "%s %d of %d rows from %s: %d skipped (%d exist, %d duplicates), %d failed\n",
		verb, o.Imported, o.Total(), o.Source, o.Skipped, o.Exists, o.Duplicates, o.Failed)
	if o.Note != "" {
		fmt.Fprintln(w, "note:", o.Note)
	}
	for _, rs := range [][]portable.Result{o.Failures, o.Skips} {
		for i, r := range rs {
			if i == limit {
				fmt.Fprintf(w, "  … and %d more%s\n", len(rs)-limit, more)
				break
			}
			fmt.Fprintf(w, "  %s\n", DescribeResult(r))
		}
	}
}

// Import streams src into b in batches and sums up what happened. The next
// batch is read (and its JSON parsed) while the current one is imported.
// It stops at the first batch the target could not handle and returns its
// error with the outcome so far (the error in it too): rows already
// written stay, and a rerun with SkipExisting goes on from there. An
// ImportRefusedError comes with no outcome worth showing.
func Import(ctx context.Context, b Bulk, src Source, job ImportJob) (ImportOutcome, error) {
	if err := b.CheckImport(ctx, job.Options); err != nil {
		return ImportOutcome{}, ImportRefusedError{err}
	}
	rep, err := drive(ctx, b, src, job)
	out := ImportOutcome{Report: rep, Source: src.Describe(), DryRun: job.Options.DryRun, Note: src.Note()}
	if err != nil {
		out.Error = err.Error()
	}
	return out, err
}

// drive is Import's loop: a reader goroutine batching src's rows, and the
// import of each batch as it comes.
func drive(ctx context.Context, b Bulk, src Source, job ImportJob) (portable.Report, error) {
	rep := portable.Report{QuietExists: job.SkipExisting, Failures: []portable.Result{}}
	size := job.BatchSize
	if size <= 0 {
		size = 1000
	}
	total, bytes := src.Size(ctx)
	report(job.Progress, Progress{Total: total, Bytes: bytes})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type batch struct {
		recs []portable.Record
		pos  int64 // src.Position() after it
	}
	batches := make(chan batch, 1)
	readErr := make(chan error, 1)
	go func() {
		defer close(batches)
		cur := make([]portable.Record, 0, size)
		send := func() error {
			select {
			case batches <- batch{cur, src.Position()}:
				cur = make([]portable.Record, 0, size)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := src.Rows(ctx, func(rec portable.Record) error {
			if cur = append(cur, rec); len(cur) >= size {
				return send()
			}
			return nil
		})
		if err == nil && len(cur) > 0 {
			err = send()
		}
		readErr <- err
	}()
	var importErr error
	pos := int64(0)
	for bt := range batches {
		if importErr != nil {
			continue // the reader is stopping
		}
		res, err := b.ImportBatch(ctx, bt.recs, job.Options)
		if err != nil {
			importErr = err
			cancel()
			continue
		}
		rep.Add(res)
		pos = bt.pos
		so := rep // a copy: the callback may keep it
		report(job.Progress, Progress{Done: pos, Total: total, Bytes: bytes, Report: &so})
	}
	err := <-readErr
	if importErr != nil {
		err = importErr
	}
	so := rep
	report(job.Progress, Progress{Done: pos, Total: total, Bytes: bytes, Report: &so, Final: true})
	return rep, err
}

// DescribeResult says in one line what became of a failed or skipped row,
// naming it by line when it was read from a file.
func DescribeResult(r portable.Result) string {
	where := "row"
	if r.Line > 0 {
		where = "line " + strconv.Itoa(r.Line)
	}
	switch {
	case r.Status == portable.Failed:
		return fmt.Sprintf("%s: failed: %s", where, r.Reason)
	case r.Reason == portable.ReasonDuplicate:
		short := r.DuplicateOf[:min(len(r.DuplicateOf), schemas.MinPrefixLen)]
		return fmt.Sprintf("%s: skipped: duplicate of %s (%.0f%% similar)", where, short, r.Similarity*100)
	}
	return fmt.Sprintf("%s: skipped: %s (id %s)", where, r.Reason, r.ID)
}

// ReembedOptions tune ReembedInPlace.
type ReembedOptions struct {
	BatchSize int  // texts embedded together (default 32)
	DryRun    bool // read every memory, embed and write nothing
	Progress  func(Progress)
}

// ReembedInPlace gives every memory of b's store (history included) a new
// vector from b's embedding model, keeping everything else, and returns
// how many it re-embedded of how many there are. b must have been opened
// with its engine. An embedding failure stops it; the memories done so
// far keep their new vectors, and a rerun redoes them all.
func ReembedInPlace(ctx context.Context, b *LocalBulk, o ReembedOptions) (done, total int, err error) {
	if b.Engine == nil {
		return 0, 0, errors.New("re-embed in place: the store was opened without its embedding model")
	}
	type item struct{ id, text string }
	var items []item
	if err := b.Store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
		items = append(items, item{m.ID, m.Text})
		return nil
	}); err != nil {
		return 0, 0, err
	}
	size := o.BatchSize
	if size <= 0 {
		size = 32
	}
	total = len(items)
	report(o.Progress, Progress{Total: int64(total)})
	defer func() { report(o.Progress, Progress{Done: int64(done), Total: int64(total), Final: true}) }()
	for start := 0; start < total && !o.DryRun; start += size {
		batch := items[start:min(start+size, total)]
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = it.text
		}
		vecs, err := b.Engine.Embedder().EmbedPassages(ctx, texts)
		if err != nil {
			return done, total, fmt.Errorf("embed: %w (%d of %d memories re-embedded; rerun to redo them all)", err, done, total)
		}
		for i, it := range batch {
			if _, err := b.Store.Update(ctx, it.id, engine.Patch{Vector: vecs[i]}, engine.AllScopes()); err != nil && !errors.Is(err, engine.ErrNotFound) {
				return done, total, fmt.Errorf("update %s: %w", it.id, err)
			}
			done++
		}
		report(o.Progress, Progress{Done: int64(done), Total: int64(total)})
	}
	return done, total, nil
}

// DeleteBulkRequest builds a bulk delete from a front end's filters: a
// scope, a cut-off as ParseBefore reads it (either may be ""), and a dry
// run. It refuses a request with neither filter: nothing deletes every
// memory by accident.
func DeleteBulkRequest(scope, before string, dryRun bool) (schemas.DeleteBulkRequest, error) {
	r := schemas.DeleteBulkRequest{Scope: scope, DryRun: dryRun}
	if before != "" {
		ms, err := ParseBefore(before)
		if err != nil {
			return r, err
		}
		r.Before = ms
	}
	if r.Scope == "" && r.Before == 0 {
		return r, errors.New("give --scope, --before or both: delete-bulk never deletes everything")
	}
	return r, nil
}

// ParseBefore reads a bulk delete's cut-off: a date (midnight UTC), an RFC
// 3339 time, a date and time without a zone (UTC), or epoch milliseconds.
// It returns epoch milliseconds.
func ParseBefore(s string) (int64, error) {
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

// Restore loads a backup or snapshot (see jobs.Restore) into the empty
// store cfg names, opened here with the configured embedder; a store a
// running clawmem holds fails with engine.ErrLocked.
func Restore(ctx context.Context, cfg *config.Config, src io.Reader, progress func(done, total int)) (jobs.RestoreReport, error) {
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return jobs.RestoreReport{}, fmt.Errorf("embedding: %w", err)
	}
	st, err := storeopen.Store(ctx, cfg, emb.Dimensions())
	if err != nil {
		return jobs.RestoreReport{}, err
	}
	defer st.Close()
	return jobs.Restore(ctx, st, emb, src, progress)
}
