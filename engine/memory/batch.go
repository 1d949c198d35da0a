package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
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
		m, f, err := e.prepareItem(it.Who, it.Req)
		if err != nil {
			errs[i] = err
			continue
		}
		mems[i], filters[i] = m, f
		if m.ID != "" {
			// An idempotent retry is answered before any embedding call.
			visible := f
			if it.Who.admin {
				visible = engine.AllScopes()
			}
			done, res, err := e.existing(ctx, m.ID, visible)
			if err != nil {
				if IsInputError(err) || errors.Is(err, engine.ErrExists) {
					errs[i] = err
					continue
				}
				return nil, nil, err
			}
			if done {
				results[i] = res
				errs[i] = errAnswered
				continue
			}
		}
		if m.Vector == nil {
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
	for i, it := range items {
		if errs[i] != nil {
			continue
		}
		m := mems[i]
		if it.Dedup > 0 {
			hits, err := e.store.VectorSearch(ctx, m.Vector, engine.SearchOptions{Scopes: filters[i], Limit: 1, MinScore: it.Dedup, Probes: dedupProbes})
			if err != nil {
				return nil, nil, err
			}
			if len(hits) > 0 {
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
	for j, p := range accepted {
		results[p.i] = StoreResult{Status: Created, Memory: withoutVector(batch[j])}
	}
	return results, errs, nil
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
	i int // index in the batch
	m schemas.Memory
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
	m := schemas.Memory{ID: strings.ToLower(r.ID), Text: text, Vector: r.Vector, Category: cat, Scope: scope, Importance: imp, Metadata: r.Metadata}
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
