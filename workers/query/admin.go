package query

// Admin operations: export pages, import batches, bulk delete, consolidation.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

const (
	// exportIdle ends an export nobody asked for a page of this long.
	exportIdle = 2 * time.Minute
	// exportMax bounds the exports open at once: each holds a
	// database read transaction.
	exportMax = 8
	// replyOverhead is room left in a reply for all but the memories.
	replyOverhead = 4 << 10
)

// exportCursor is one export in progress: a store iteration running in its
// own goroutine, handing rows over as pages are asked for. Holding the
// iteration open (rather than re-querying from a position) keeps an export
// of any size linear and consistent: it reads one snapshot of the store.
type exportCursor struct {
	id     string
	cancel context.CancelFunc
	rows   chan schemas.Memory
	errc   chan error // the iteration's result, once rows is closed
	idle   *time.Timer

	mu    sync.Mutex
	page  int // pages served
	last  okReply
	carry *schemas.Memory // the row that did not fit the last page
	vecs  bool
	// done: every row was served. A finished export is kept until it has
	// been idle a while, so that a lost last reply can be asked for again,
	// but no longer counts against exportMax.
	done atomic.Bool
}

func (s *Service) opExport(req request) (okReply, error) {
	ctx, base, who, data := req.ctx, req.base, req.who, req.data
	if err := adminOnly(who, schemas.OpExport); err != nil {
		return okReply{}, err
	}
	var r schemas.ExportRequest
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	switch {
	case r.Limit < 0:
		return okReply{}, fmt.Errorf("%w: limit %d is negative", schemas.ErrInvalid, r.Limit)
	case r.Limit == 0:
		r.Limit = schemas.ExportDefaultLimit
	}
	r.Limit = min(r.Limit, schemas.ExportMaxLimit)
	var (
		ex   *exportCursor
		want int
		err  error
	)
	if r.Cursor == "" {
		ex, err = s.startExport(base, r)
		want = 1
	} else {
		ex, want, err = s.findExport(r.Cursor)
	}
	if err != nil {
		return okReply{}, err
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.idle.Reset(exportIdle)
	switch want {
	case ex.page:
		return ex.last, nil // the reply was lost: the same page again
	case ex.page + 1:
	default:
		return okReply{}, fmt.Errorf("%w: export cursor %q is not the next page (%d pages served)", schemas.ErrInvalid, r.Cursor, ex.page)
	}
	d, err := s.exportPage(ctx, ex, r.Limit)
	if err != nil {
		return okReply{}, err
	}
	ex.page++
	d.Page = ex.page
	text := fmt.Sprintf("Export page %d: %d %s.", d.Page, d.Count, plural(d.Count, "memory", "memories"))
	if ex.done.Load() {
		text += " End of export."
	} else {
		d.NextCursor = fmt.Sprintf("%s.%d", ex.id, ex.page+1)
	}
	ex.last = okReply{text: text, details: d}
	return ex.last, nil
}

func (s *Service) startExport(base context.Context, r schemas.ExportRequest) (*exportCursor, error) {
	f, err := engine.ScopeOrAll(r.Scope)
	if err != nil {
		return nil, err
	}
	s.exportsMu.Lock()
	defer s.exportsMu.Unlock()
	if s.exports == nil {
		s.exports = map[string]*exportCursor{}
	}
	running := 0
	for _, ex := range s.exports {
		if !ex.done.Load() {
			running++
		}
	}
	if running >= exportMax {
		return nil, fmt.Errorf("%w: %d exports are in progress; finish one or wait %s for an abandoned one to expire",
			schemas.ErrInvalid, running, exportIdle)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	ex := &exportCursor{id: strings.ReplaceAll(uuid.NewString(), "-", ""), cancel: cancel,
		rows: make(chan schemas.Memory, 256), errc: make(chan error, 1), vecs: r.WithVectors}
	ex.idle = time.AfterFunc(exportIdle, func() { s.endExport(ex) })
	s.exports[ex.id] = ex
	store := s.eng.Backend()
	go func() {
		defer close(ex.rows)
		ex.errc <- store.Iterate(ctx, engine.IterateOptions{Scopes: f, WithVectors: r.WithVectors}, func(m schemas.Memory) error {
			select {
			case ex.rows <- m:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ex, nil
}

// findExport parses a cursor, "<export id>.<page>".
func (s *Service) findExport(cursor string) (*exportCursor, int, error) {
	id, page, ok := strings.Cut(cursor, ".")
	n, err := strconv.Atoi(page)
	if !ok || err != nil || n < 1 {
		return nil, 0, fmt.Errorf("%w: %q is not an export cursor", schemas.ErrInvalid, cursor)
	}
	s.exportsMu.Lock()
	ex := s.exports[id]
	s.exportsMu.Unlock()
	if ex == nil {
		return nil, 0, fmt.Errorf("%w: export cursor %q is unknown or expired (an export ends after %s without a request); start the export again",
			engine.ErrNotFound, cursor, exportIdle)
	}
	return ex, n, nil
}

// exportPage takes the next rows, up to limit and the reply size limit.
// Callers hold ex.mu.
func (s *Service) exportPage(ctx context.Context, ex *exportCursor, limit int) (schemas.ExportDetails, error) {
	budget := int64(schemas.MaxRequestBytes)
	if s.nc != nil {
		budget = s.nc.MaxPayload()
	}
	budget -= replyOverhead
	d := schemas.ExportDetails{Memories: []json.RawMessage{}}
	var size int64
	for d.Count < limit {
		var m schemas.Memory
		if ex.carry != nil {
			m, ex.carry = *ex.carry, nil
		} else {
			select {
			case row, ok := <-ex.rows:
				if !ok {
					if err := <-ex.errc; err != nil {
						s.endExport(ex)
						return d, fmt.Errorf("export: %w", err)
					}
					ex.done.Store(true)
					return d, nil
				}
				m = row
			case <-ctx.Done():
				return d, ctx.Err()
			}
		}
		row := portable.AppendRow(nil, m, ex.vecs)
		// The reply's encoder escapes <, > and & as \u003c and so on.
		n := int64(len(row)) + 1 + 5*int64(bytes.Count(row, []byte("<"))+bytes.Count(row, []byte(">"))+bytes.Count(row, []byte("&")))
		if d.Count > 0 && size+n > budget {
			ex.carry = &m
			break
		}
		size += n
		d.Memories = append(d.Memories, row)
		d.Count++
	}
	return d, nil
}

// endExport stops an export's iteration and forgets it.
func (s *Service) endExport(ex *exportCursor) {
	ex.cancel()
	ex.idle.Stop()
	s.exportsMu.Lock()
	if s.exports[ex.id] == ex {
		delete(s.exports, ex.id)
	}
	s.exportsMu.Unlock()
}

func (s *Service) closeExports() {
	s.exportsMu.Lock()
	open := make([]*exportCursor, 0, len(s.exports))
	for _, ex := range s.exports {
		open = append(open, ex)
	}
	s.exportsMu.Unlock()
	for _, ex := range open {
		s.endExport(ex)
	}
}

func (s *Service) opImport(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	if err := adminOnly(who, schemas.OpImport); err != nil {
		return okReply{}, err
	}
	var r schemas.ImportRequest
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if len(r.Memories) > schemas.MaxImportBatch {
		return okReply{}, fmt.Errorf("%w: %d memories in one request (max %d)", schemas.ErrInvalid, len(r.Memories), schemas.MaxImportBatch)
	}
	if r.Scope != "" {
		if err := s.eng.Scopes().Validate(r.Scope); err != nil {
			return okReply{}, err
		}
	}
	o := portable.ImportOptions{Scope: r.Scope, DryRun: r.DryRun, Dedup: portable.DefaultDedup,
		ValidateScope: s.eng.Scopes().Validate, Lock: &s.importMu, Secrets: s.eng.Secrets()}
	if r.NoDedup {
		o.Dedup = 0
	}
	recs := make([]portable.Record, len(r.Memories))
	for i, m := range r.Memories {
		recs[i] = portable.Record{Line: i + 1, Memory: m}
	}
	results, err := portable.NewImporter(s.eng.Backend(), s.eng.Embedder(), o).Import(ctx, recs)
	if err != nil {
		return okReply{}, err
	}
	rep := portable.Report{QuietExists: r.SkipExisting}
	rep.Add(results)
	d := schemas.ImportDetails{Imported: rep.Imported, Skipped: rep.Skipped, Failed: rep.Failed, Exists: rep.Exists,
		Duplicates: rep.Duplicates, Results: importResults(append(rep.Failures, rep.Skips...)), DryRun: r.DryRun}
	if d.Results == nil {
		d.Results = []schemas.ImportResult{}
	}
	return importReply(d, len(recs)), nil
}

func importReply(d schemas.ImportDetails, n int) okReply {
	verb := "Imported"
	if d.DryRun {
		verb = "Would import"
	}
	return okReply{text: fmt.Sprintf("%s %d of %d memories: %d skipped (%d exist, %d duplicates), %d failed.",
		verb, d.Imported, n, d.Skipped, d.Exists, d.Duplicates, d.Failed), details: d}
}

func (s *Service) opDeleteBulk(req request) (okReply, error) {
	ctx, who, data := req.ctx, req.who, req.data
	if err := adminOnly(who, schemas.OpDeleteBulk); err != nil {
		return okReply{}, err
	}
	var r schemas.DeleteBulkRequest
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if r.Scope == "" && r.Before <= 0 {
		return okReply{}, fmt.Errorf("%w: delete-bulk needs a scope or a before time (or both)", schemas.ErrInvalid)
	}
	if r.Before < 0 {
		return okReply{}, fmt.Errorf("%w: before %d is negative", schemas.ErrInvalid, r.Before)
	}
	f, err := engine.ScopeOrAll(r.Scope)
	if err != nil {
		return okReply{}, err
	}
	if f, err = s.ownedOnly(ctx, r.Scope, f); err != nil {
		return okReply{}, err
	}
	bf := engine.BulkFilter{Scopes: f, Before: r.Before}
	d := schemas.DeleteBulkDetails{DryRun: r.DryRun, Scope: r.Scope, Before: r.Before}
	if r.DryRun {
		d.Count, err = s.eng.Backend().CountBulk(ctx, bf)
		if err != nil {
			return okReply{}, err
		}
		return deleteBulkReply(d), nil
	}
	// The memories' sources are read before they go: after, nothing
	// says what they were.
	var gone []schemas.Memory
	err = s.eng.Backend().Iterate(ctx, engine.IterateOptions{Scopes: f}, func(m schemas.Memory) error {
		if (r.Before <= 0 || m.Timestamp < r.Before) && hasSession(m) {
			gone = append(gone, schemas.Memory{ID: m.ID, Text: m.Text, Metadata: m.Metadata})
		}
		return nil
	})
	if err != nil {
		return okReply{}, err
	}
	if d.Count, err = s.eng.Backend().BulkDelete(ctx, bf); err != nil {
		return okReply{}, err
	}
	e := s.erase(ctx, gone)
	d.Purged, d.PurgeNote = e.purged, e.note
	return deleteBulkReply(d), nil
}

func deleteBulkReply(d schemas.DeleteBulkDetails) okReply {
	what := "in " + orDefault(d.Scope, "every scope")
	if d.Before > 0 {
		what += " created before " + time.UnixMilli(d.Before).UTC().Format(time.RFC3339)
	}
	if d.DryRun {
		return okReply{text: fmt.Sprintf("Would delete %d %s %s (dry run).", d.Count, plural(d.Count, "memory", "memories"), what), details: d}
	}
	e := erasure{purged: d.Purged, note: d.PurgeNote}
	return okReply{text: fmt.Sprintf("Deleted %d %s %s.", d.Count, plural(d.Count, "memory", "memories"), what) + e.text(), details: d}
}

func (s *Service) opConsolidate(req request) (okReply, error) {
	ctx, who, data := req.base, req.who, req.data // consolidation runs past a request's deadline
	if err := adminOnly(who, schemas.OpConsolidate); err != nil {
		return okReply{}, err
	}
	var r schemas.ConsolidateRequest
	if err := decode(data, &r); err != nil {
		return okReply{}, err
	}
	if r.MergeMin < 0 || r.MergeMin > 1 || r.ArchiveFloor < 0 || r.ArchiveFloor > 1 || r.HalfLifeDays < 0 {
		return okReply{}, fmt.Errorf("%w: mergeMin and archiveFloor are 0..1, archiveHalfLifeDays not negative", schemas.ErrInvalid)
	}
	o := memory.ConsolidateOptions{Scope: r.Scope, DryRun: r.DryRun, MergeMin: r.MergeMin,
		ArchiveFloor: r.ArchiveFloor, ArchiveHalfLifeDays: r.HalfLifeDays, Judge: s.cfg.MergeJudge}
	if repl := s.cfg.Replication; repl != nil && repl.PartitionWriter {
		o.Only = repl.ownsScope
	}
	rep, err := s.eng.Consolidate(ctx, o)
	if err != nil {
		return okReply{}, err
	}
	return consolidateReply(consolidateDetails(rep)), nil
}

func consolidateReply(rep schemas.ConsolidateDetails) okReply {
	verb := map[bool]string{true: "would merge", false: "merged"}[rep.DryRun]
	var b strings.Builder
	fmt.Fprintf(&b, "Consolidation over %d memories: %s %d group(s), archived %d.", rep.Scanned, verb, len(rep.Merges), len(rep.Archived))
	if rep.DryRun {
		fmt.Fprintf(&b, " (dry run: nothing changed)")
	}
	merges := make([]rules.FramedMemory, len(rep.Merges))
	for i, m := range rep.Merges {
		short := make([]string, len(m.Sources))
		for k, id := range m.Sources {
			short[k] = shortID(id)
		}
		merges[i] = rules.FramedMemory{Label: "- " + strings.Join(short, ", ") + " into [" + shortID(m.Into) + "]", Text: m.Text}
	}
	if framed := rules.FrameMemories(merges, snippetRunes); framed != "" {
		b.WriteString("\n" + framed)
	}
	for _, id := range rep.Archived {
		fmt.Fprintf(&b, "\n- archived %s", shortID(id))
	}
	return okReply{text: b.String(), details: rep}
}
