package memory

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/internal/workpool"
	"github.com/clawmem/clawmem/schemas"
)

// BatchItem is one memory of a StoreBatch.
type BatchItem struct {
	Who   Who
	Req   StoreRequest
	Dedup float64 // vector-score threshold; 0 disables dedup
}

// StoreBatch stores many memories in one transaction, as the store worker
// does with what the capture and distill stages produce. Each item gets the
// checks Store gives it, and is also deduplicated against the items before
// it in the batch. Results and errors are per item; a returned error means
// nothing was written. It is PrepareBatch then CommitBatch.
func (e *Engine) StoreBatch(ctx context.Context, items []BatchItem) ([]StoreResult, []error, error) {
	p, err := e.PrepareBatch(ctx, items)
	if err != nil {
		return nil, nil, err
	}
	return e.CommitBatch(ctx, p)
}

// PreparedBatch is a batch's work that needs no write lock: its checks,
// idempotent retries answered, its embeddings and its duplicate searches.
// The store worker prepares one batch while the one before it commits.
type PreparedBatch struct {
	items   []BatchItem
	mems    []schemas.Memory
	filters []engine.ScopeFilter
	results []StoreResult
	errs    []error
	dups    [][]engine.SearchResult
	// seen counts the writes made before the duplicate searches: those
	// made since are checked again at the commit.
	seen uint64
}

// PrepareBatch does a batch's work that needs no write lock; CommitBatch
// finishes it. Prepared batches must be committed in the order they were
// prepared when their order matters (supersessions).
func (e *Engine) PrepareBatch(ctx context.Context, items []BatchItem) (*PreparedBatch, error) {
	p := &PreparedBatch{
		items: items, mems: make([]schemas.Memory, len(items)), filters: make([]engine.ScopeFilter, len(items)),
		results: make([]StoreResult, len(items)), errs: make([]error, len(items)), dups: make([][]engine.SearchResult, len(items)),
	}
	for i, it := range items {
		p.mems[i], p.filters[i], p.errs[i] = e.prepareItem(it.Who, it.Req)
	}
	// Writes counted from here on may not be seen by the searches below.
	p.seen = e.writes.Load()
	// An idempotent retry is answered before any embedding call. The
	// lookups are independent reads and run side by side.
	if err := e.answerRetries(ctx, p, nil); err != nil {
		return nil, err
	}
	var toEmbed []int
	for i := range items {
		if p.errs[i] == nil && p.mems[i].Vector == nil {
			toEmbed = append(toEmbed, i)
		}
	}
	if len(toEmbed) > 0 {
		texts := make([]string, len(toEmbed))
		for j, i := range toEmbed {
			texts[j] = p.mems[i].Text
		}
		vecs, err := e.emb.EmbedPassages(ctx, texts)
		if err != nil {
			return nil, fmt.Errorf("embed: %w", err)
		}
		for j, i := range toEmbed {
			p.mems[i].Vector = vecs[j]
		}
	}
	if err := e.searchDuplicates(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// answerRetries answers the items whose id is stored already (all of them,
// or those in only when it is given).
func (e *Engine) answerRetries(ctx context.Context, p *PreparedBatch, only map[string]bool) error {
	failed := make([]error, len(p.items))
	parallel(len(p.items), func(i int) {
		id := p.mems[i].ID
		if p.errs[i] != nil || id == "" || (only != nil && !only[id]) {
			return
		}
		visible := p.filters[i]
		if p.items[i].Who.admin {
			visible = engine.AllScopes()
		}
		done, res, err := e.existing(ctx, id, visible)
		switch {
		case err != nil && (IsInputError(err) || errors.Is(err, engine.ErrExists)):
			p.errs[i] = err
		case err != nil:
			failed[i] = err
		case done:
			p.results[i], p.errs[i] = res, errAnswered
		}
	})
	return errors.Join(failed...)
}

// searchDuplicates looks for each item's duplicate among the stored
// memories. The searches are independent reads, so they run side by side.
func (e *Engine) searchDuplicates(ctx context.Context, p *PreparedBatch) error {
	failed := make([]error, len(p.items))
	parallel(len(p.items), func(i int) {
		if p.errs[i] == nil && p.items[i].Dedup > 0 {
			p.dups[i], failed[i] = e.store.VectorSearch(ctx, p.mems[i].Vector, engine.SearchOptions{Scopes: p.filters[i], Limit: 1, MinScore: p.items[i].Dedup, Probes: dedupProbes})
		}
	})
	return errors.Join(failed...)
}

// CommitBatch finishes a prepared batch under the write lock: it checks
// the items against what was written since they were prepared, against
// each other, resolves what they supersede, and stores them.
func (e *Engine) CommitBatch(ctx context.Context, p *PreparedBatch) ([]StoreResult, []error, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	items, mems, filters, results, errs := p.items, p.mems, p.filters, p.results, p.errs
	since, known := e.writtenSince(p.seen)
	if !known {
		// Something else was written meanwhile (a forget, an update, a
		// supersession): check the store again, as if prepared now.
		if err := e.answerRetries(ctx, p, nil); err != nil {
			return nil, nil, err
		}
		if err := e.searchDuplicates(ctx, p); err != nil {
			return nil, nil, err
		}
		since = nil
	} else if len(since) > 0 {
		// Only batches were stored meanwhile, and they are at hand: an
		// item is a retry of one of theirs, or a duplicate of one.
		ids := map[string]bool{}
		for _, a := range since {
			ids[a.m.ID] = true
		}
		if err := e.answerRetries(ctx, p, ids); err != nil {
			return nil, nil, err
		}
	}
	var accepted []pendingItem
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		m := mems[i]
		if it.Dedup > 0 {
			if hits := p.dups[i]; len(hits) > 0 {
				results[i] = StoreResult{Status: Duplicate, Memory: withoutVector(hits[0].Memory), Score: hits[0].Score}
				continue
			}
			// Then the memories stored since the searches, and the earlier
			// items of this batch.
			if d, ok := earlierDuplicate(m, filters[i], it.Dedup, since, accepted); ok {
				results[i] = StoreResult{Status: Duplicate, Memory: withoutVector(d.m), Score: engine.VectorScore(float64(vecindex.Cosine(d.m.Vector, m.Vector)))}
				continue
			}
		}
		accepted = append(accepted, pendingItem{i: i, m: m})
	}
	for i := range errs {
		if errs[i] == errAnswered {
			errs[i] = nil
		}
	}
	accepted, err := e.resolveSupersedes(ctx, items, accepted, errs)
	if err != nil {
		return nil, nil, err
	}
	if len(accepted) == 0 {
		return results, errs, nil
	}
	now := e.now().UnixMilli()
	batch := make([]schemas.Memory, len(accepted))
	for j := range accepted {
		if accepted[j].m.ID == "" {
			accepted[j].m.ID = uuid.NewString()
		}
		accepted[j].m.Timestamp = now
		batch[j] = accepted[j].m
	}
	if err := e.store.Import(ctx, batch...); err != nil {
		return nil, nil, err
	}
	// An item supersedes what came before it, never a later item of its
	// own batch ("I live in Paris", "I moved to Berlin" in one turn).
	later := make(map[string]bool, len(batch))
	for _, m := range batch {
		later[m.ID] = true
	}
	ended := false
	for j, p := range accepted {
		delete(later, batch[j].ID)
		p.m = batch[j]
		accepted[j] = p
		gone, err := e.supersede(ctx, p, later)
		ended = ended || len(gone) > 0 || err != nil
		if err != nil {
			if ctx.Err() != nil {
				e.wrote(nil)
				return nil, nil, err
			}
			errs[p.i] = fmt.Errorf("stored as %s, but: %w", p.m.ID, err)
		}
		results[p.i] = StoreResult{Status: Created, Memory: withoutVector(batch[j]), Superseded: gone}
	}
	if ended {
		// Memories were ended too: not a plain addition.
		e.wrote(nil)
	} else {
		e.wrote(accepted)
	}
	return results, errs, nil
}

// recentWrites is how many of the last writes are kept at hand for the
// commits of batches prepared before them. A pipeline of depth two needs
// one; more lets other writers' batches interleave.
const recentWrites = 8

// write is one write the engine made: the memories a batch added, or nil
// for any other change.
type write struct {
	n     uint64
	added []pendingItem
}

// wrote counts a write and keeps what it added (nil for a write that did
// anything else). Callers hold writeMu, or pass nil.
func (e *Engine) wrote(added []pendingItem) {
	n := e.writes.Add(1)
	if added != nil {
		e.recent[n%recentWrites] = write{n: n, added: added}
	}
}

// writtenSince returns what the batches written after write seen added,
// and whether it knows: false when a write since then was not a plain
// addition or is no longer at hand. Callers hold writeMu.
func (e *Engine) writtenSince(seen uint64) ([]pendingItem, bool) {
	now := e.writes.Load()
	if now-seen > recentWrites {
		return nil, false
	}
	var added []pendingItem
	for n := seen + 1; n <= now; n++ {
		w := e.recent[n%recentWrites]
		if w.n != n || w.added == nil {
			return nil, false
		}
		added = append(added, w.added...)
	}
	return added, true
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workpool.Run(runtime.GOMAXPROCS(0), n, func(_, i int) { fn(i) })
}

// dedupProbes is how many clusters of an approximate index a duplicate
// check probes: a near-identical vector (cosine ≥ 0.9) lies in or next to
// the query's own cluster, so a few suffice where recall needs 16.
const dedupProbes = 3

// errAnswered marks an item answered before embedding (an idempotent
// retry); it never leaves StoreBatch.
var errAnswered = errors.New("answered")

// existing answers an item whose id is stored already: as its duplicate
// when the caller can see it, else ErrExists without telling whose it is.
func (e *Engine) existing(ctx context.Context, id string, f engine.ScopeFilter) (bool, StoreResult, error) {
	ok, err := e.store.Has(ctx, id)
	if err != nil || !ok {
		return false, StoreResult{}, err
	}
	got, err := e.store.Get(ctx, id, f)
	if errors.Is(err, engine.ErrNotFound) {
		return false, StoreResult{}, fmt.Errorf("%w: %s", engine.ErrExists, id)
	}
	if err != nil {
		return false, StoreResult{}, err
	}
	return true, StoreResult{Status: Duplicate, Memory: withoutVector(got), Score: 1}, nil
}

// pendingItem is an item of a batch that will be written.
type pendingItem struct {
	i          int // index in the batch
	m          schemas.Memory
	supersedes string // full id of the memory it replaces, when the request names one
}

// earlierDuplicate finds, in the lists in turn, an earlier item the new one
// duplicates and whose scope the new one's caller can see.
func earlierDuplicate(m schemas.Memory, f engine.ScopeFilter, dedup float64, lists ...[]pendingItem) (pendingItem, bool) {
	for _, l := range lists {
		for _, p := range l {
			if f.Allows(p.m.Scope) && engine.VectorScore(float64(vecindex.Cosine(p.m.Vector, m.Vector))) >= dedup {
				return p, true
			}
		}
	}
	return pendingItem{}, false
}

// storedText is the text a memory keeps: checked (ValidateText), then
// stripped of invisible characters, which can hide or split words from
// every later reader; the user's visible spelling is kept as written.
func storedText(s string) (string, error) {
	text := strings.TrimSpace(s)
	if err := schemas.ValidateText(text); err != nil {
		return "", err
	}
	text = strings.TrimSpace(rules.StripInvisible(text))
	return text, schemas.ValidateText(text)
}

// prepareItem applies Store's checks and defaults to one request.
func (e *Engine) prepareItem(who Who, r StoreRequest) (schemas.Memory, engine.ScopeFilter, error) {
	scope, err := e.writeScope(who, r.Scope)
	if err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	text, err := storedText(r.Text)
	if err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	if rules.IsInjection(text) {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: the text looks like instructions to an agent (prompt injection), not a memory", ErrRejected)
	}
	if rules.IsNoise(text) {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: the text is noise (a greeting, a denial, a question about memory, or too short)", ErrRejected)
	}
	clean, err := e.cleanText(text)
	if err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	if clean != text {
		// The vector a caller brings was made from the text with the
		// secret: the redacted text is embedded again. Markers may make
		// it longer than the limit.
		text, r.Vector = clean, nil
		if err := schemas.ValidateText(text); err != nil {
			return schemas.Memory{}, engine.ScopeFilter{}, err
		}
	}
	if r.Metadata, err = e.cleanMetadata(r.Metadata); err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	cat := r.Category
	if cat == "" {
		cat = rules.DetectCategory(text)
	} else if !cat.Valid() {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: category %q", schemas.ErrInvalid, cat)
	}
	imp := schemas.DefaultImportance
	if r.Importance != nil {
		imp = *r.Importance
	}
	f, err := e.dedupFilter(who, scope)
	if err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	// Relative dates ("last Thursday") are resolved now, against when the
	// text was said (metadata saidAt) or this moment: later nobody knows
	// which Thursday it was.
	meta := temporal.WithDates(engine.MarkCore(r.Metadata, rules.IsCore(text)), text, e.now(), schemas.MaxMetadataBytes)
	m := schemas.Memory{ID: strings.ToLower(r.ID), Text: text, Vector: r.Vector, Category: cat, Scope: scope, Importance: imp, Metadata: meta}
	if m.ID != "" && !schemas.IsUUID(m.ID) {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: memory id %q is not a UUID", schemas.ErrInvalid, r.ID)
	}
	if m.Vector != nil && len(m.Vector) != e.store.Dimensions() {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(m.Vector), e.store.Dimensions())
	}
	return m, f, nil
}

// IsInputError reports errors caused by the request itself, which retrying
// cannot fix.
func IsInputError(err error) bool {
	return errors.Is(err, schemas.ErrInvalid) || errors.Is(err, ErrRejected) || errors.Is(err, ErrNoIdentity) ||
		errors.Is(err, engine.ErrScopeDenied) || errors.Is(err, engine.ErrNotFound) || errors.Is(err, engine.ErrAmbiguous)
}
