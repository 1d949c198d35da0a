package memory

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/engine/vecindex"
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
// nothing was written.
func (e *Engine) StoreBatch(ctx context.Context, items []BatchItem) ([]StoreResult, []error, error) {
	results := make([]StoreResult, len(items))
	errs := make([]error, len(items))
	var accepted []pendingItem
	var toEmbed []int
	mems := make([]schemas.Memory, len(items))
	filters := make([]engine.ScopeFilter, len(items))
	for i, it := range items {
		mems[i], filters[i], errs[i] = e.prepareItem(it.Who, it.Req)
	}
	// An idempotent retry is answered before any embedding call. The
	// lookups are independent reads and run side by side.
	failed := make([]error, len(items))
	parallel(len(items), func(i int) {
		if errs[i] != nil || mems[i].ID == "" {
			return
		}
		visible := filters[i]
		if items[i].Who.admin {
			visible = engine.AllScopes()
		}
		done, res, err := e.existing(ctx, mems[i].ID, visible)
		switch {
		case err != nil && (IsInputError(err) || errors.Is(err, engine.ErrExists)):
			errs[i] = err
		case err != nil:
			failed[i] = err
		case done:
			results[i], errs[i] = res, errAnswered
		}
	})
	if err := errors.Join(failed...); err != nil {
		return nil, nil, err
	}
	for i := range items {
		if errs[i] == nil && mems[i].Vector == nil {
			toEmbed = append(toEmbed, i)
		}
	}
	if len(toEmbed) > 0 {
		texts := make([]string, len(toEmbed))
		for j, i := range toEmbed {
			texts[j] = mems[i].Text
		}
		vecs, err := e.emb.EmbedPassages(ctx, texts)
		if err != nil {
			return nil, nil, fmt.Errorf("embed: %w", err)
		}
		for j, i := range toEmbed {
			mems[i].Vector = vecs[j]
		}
	}
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	// The store checks are independent reads, so they run side by side;
	// the checks within the batch, which depend on what was accepted
	// before, follow in order.
	dups := make([][]engine.SearchResult, len(items))
	parallel(len(items), func(i int) {
		if errs[i] == nil && items[i].Dedup > 0 {
			dups[i], failed[i] = e.store.VectorSearch(ctx, mems[i].Vector, engine.SearchOptions{Scopes: filters[i], Limit: 1, MinScore: items[i].Dedup, Probes: dedupProbes})
		}
	})
	if err := errors.Join(failed...); err != nil {
		return nil, nil, err
	}
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		m := mems[i]
		if it.Dedup > 0 {
			if hits := dups[i]; len(hits) > 0 {
				results[i] = StoreResult{Status: Duplicate, Memory: withoutVector(hits[0].Memory), Score: hits[0].Score}
				continue
			}
			if dup := batchDuplicate(accepted, m, filters[i], it.Dedup); dup >= 0 {
				p := accepted[dup]
				results[i] = StoreResult{Status: Duplicate, Memory: withoutVector(p.m), Score: engine.VectorScore(float64(vecindex.Cosine(p.m.Vector, m.Vector)))}
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
	for j, p := range accepted {
		delete(later, batch[j].ID)
		p.m = batch[j]
		ended, err := e.supersede(ctx, p, later)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, err
			}
			errs[p.i] = fmt.Errorf("stored as %s, but: %w", p.m.ID, err)
		}
		results[p.i] = StoreResult{Status: Created, Memory: withoutVector(batch[j]), Superseded: ended}
	}
	return results, errs, nil
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
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

// batchDuplicate finds an earlier accepted item the new one duplicates and
// whose scope the new one's caller can see.
func batchDuplicate(accepted []pendingItem, m schemas.Memory, f engine.ScopeFilter, dedup float64) int {
	for j, p := range accepted {
		if f.Allows(p.m.Scope) && engine.VectorScore(float64(vecindex.Cosine(p.m.Vector, m.Vector))) >= dedup {
			return j
		}
	}
	return -1
}

// prepareItem applies Store's checks and defaults to one request.
func (e *Engine) prepareItem(who Who, r StoreRequest) (schemas.Memory, engine.ScopeFilter, error) {
	scope, err := e.writeScope(who, r.Scope)
	if err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	text := strings.TrimSpace(r.Text)
	if err := schemas.ValidateText(text); err != nil {
		return schemas.Memory{}, engine.ScopeFilter{}, err
	}
	if rules.IsInjection(text) {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: the text looks like instructions to an agent (prompt injection), not a memory", ErrRejected)
	}
	if rules.IsNoise(text) {
		return schemas.Memory{}, engine.ScopeFilter{}, fmt.Errorf("%w: the text is noise (a greeting, a denial, a question about memory, or too short)", ErrRejected)
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
	meta := temporal.WithDates(r.Metadata, text, e.now(), schemas.MaxMetadataBytes)
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
