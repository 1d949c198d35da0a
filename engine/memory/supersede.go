package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// supersedeCandidates is how many memories of the new one's scope, by
// meaning and by words, the supersede rules compare it with.
const supersedeCandidates = 10

// resolveSupersedes turns each accepted item's explicit Supersedes into a
// full id the caller may change, in the new memory's scope; an item whose
// target is unknown or foreign fails alone, before anything is written.
func (e *Engine) resolveSupersedes(ctx context.Context, items []BatchItem, accepted []pendingItem, errs []error) ([]pendingItem, error) {
	kept := accepted[:0]
	for _, p := range accepted {
		target := items[p.i].Req.Supersedes
		if target == "" {
			kept = append(kept, p)
			continue
		}
		old, err := e.store.Get(ctx, target, engine.InScopes(p.m.Scope))
		if items[p.i].Req.SupersedesIfCurrent && (IsInputError(err) || (err == nil && !old.Current())) {
			kept = append(kept, p)
			continue
		}
		switch {
		case errors.Is(err, engine.ErrNotFound) || IsInputError(err):
			errs[p.i] = fmt.Errorf("supersedes %q: %w (it must be a memory of the new one's scope %s)", target, err, p.m.Scope)
			continue
		case err != nil:
			return nil, err
		case !old.Current():
			errs[p.i] = fmt.Errorf("%w: supersedes %s, which no longer holds (superseded by %s); supersede that one", schemas.ErrInvalid, old.ID, old.SupersededBy)
			continue
		}
		p.supersedes = old.ID
		kept = append(kept, p)
	}
	return kept, nil
}

// supersede ends the memories the new memory m replaces: the one its
// request names, else those the supersede rules match among the current
// memories of its scope (earlier items of its batch included, later ones
// not). It returns their ids. A failure to end one leaves both current
// and is reported: nothing is lost.
func (e *Engine) supersede(ctx context.Context, p pendingItem, later map[string]bool) ([]string, error) {
	at := e.now().UnixMilli()
	end := func(id string) error {
		_, err := e.store.Update(ctx, id, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: p.m.ID, At: at}}, engine.InScopes(p.m.Scope))
		return err
	}
	if p.supersedes != "" {
		if err := end(p.supersedes); err != nil {
			return nil, fmt.Errorf("supersede %s: %w", p.supersedes, err)
		}
		return []string{p.supersedes}, nil
	}
	if _, ok := rules.FactSlot(p.m.Text); !ok {
		return nil, nil
	}
	opts := engine.SearchOptions{Scopes: engine.InScopes(p.m.Scope), Limit: supersedeCandidates}
	vec, err := e.store.VectorSearch(ctx, p.m.Vector, opts)
	if err != nil {
		return nil, err
	}
	var words []engine.SearchResult
	if e.store.HasFullText() {
		if words, err = e.store.TextSearch(ctx, p.m.Text, opts); err != nil {
			return nil, err
		}
	}
	var ended []string
	seen := map[string]bool{p.m.ID: true}
	for _, c := range append(vec, words...) {
		old := c.Memory
		if seen[old.ID] || later[old.ID] || !old.Current() {
			continue
		}
		seen[old.ID] = true
		if !rules.Supersedes(p.m.Text, old.Text) {
			continue
		}
		if err := end(old.ID); err != nil {
			return ended, fmt.Errorf("supersede %s: %w", old.ID, err)
		}
		ended = append(ended, old.ID)
	}
	return ended, nil
}

// updateText changes a memory's text and keeps the old one in its chain:
// a copy of the memory as it was, ended now and superseded by the memory
// (which keeps its id, so callers holding it are not left behind).
func (e *Engine) updateText(ctx context.Context, id string, p engine.Patch, f engine.ScopeFilter) (UpdateResult, error) {
	e.writeMu.Lock()
	defer e.writeMu.Unlock()
	defer e.wrote(nil)
	old, err := e.store.Get(ctx, id, f)
	if err != nil {
		return UpdateResult{}, err
	}
	if !old.Current() {
		return UpdateResult{}, fmt.Errorf("%w: memory %s no longer holds (superseded by %s); update that one", schemas.ErrInvalid, old.ID, old.SupersededBy)
	}
	if old.Text == *p.Text {
		m, err := e.store.Update(ctx, old.ID, p, f)
		m = withoutVector(m)
		return UpdateResult{Memory: &m}, err
	}
	// The new text decides whether the memory is a core fact.
	if md := engine.MarkCore(old.Metadata, rules.IsCore(*p.Text)); string(md) != string(old.Metadata) {
		p.Metadata = md
	}
	was := old
	was.ID = uuid.NewString()
	was.SupersededBy, was.InvalidatedAt = old.ID, e.now().UnixMilli()
	if err := e.store.Import(ctx, was); err != nil {
		return UpdateResult{}, fmt.Errorf("keep the old text: %w", err)
	}
	m, err := e.store.Update(ctx, old.ID, p, f)
	if err != nil {
		// The memory is unchanged: its history copy would be a false link.
		if _, derr := e.store.Delete(ctx, was.ID, engine.AllScopes()); derr != nil {
			err = errors.Join(err, derr)
		}
		return UpdateResult{}, err
	}
	m = withoutVector(m)
	return UpdateResult{Memory: &m, Previous: was.ID}, nil
}

// Chain is a memory with its history: the memories it replaced, newest
// first back to the first, and those that replaced it, oldest first up to
// the one that holds now.
type Chain struct {
	Memory     schemas.Memory
	Replaced   []schemas.Memory
	ReplacedBy []schemas.Memory
}

// MaxChain bounds how far Chain walks either way (and breaks a cycle an
// imported file could have made).
const MaxChain = 100

// Chain returns the memory id (or prefix) with its history, as far as who
// may read it.
func (e *Engine) Chain(ctx context.Context, who Who, id string) (Chain, error) {
	f, err := e.readFilter(who, "")
	if err != nil {
		return Chain{}, err
	}
	m, err := e.store.Get(ctx, id, f)
	if err != nil {
		return Chain{}, err
	}
	ch := Chain{Memory: withoutVector(m)}
	seen := map[string]bool{m.ID: true}
	for next := m.SupersededBy; next != "" && !seen[next] && len(ch.ReplacedBy) < MaxChain; {
		n, err := e.store.Get(ctx, next, f)
		if errors.Is(err, engine.ErrNotFound) {
			break // deleted, or outside who's scopes
		}
		if err != nil {
			return ch, err
		}
		seen[n.ID] = true
		ch.ReplacedBy = append(ch.ReplacedBy, withoutVector(n))
		next = n.SupersededBy
	}
	h, ok := e.store.(engine.Historian)
	if !ok {
		return ch, nil
	}
	for at := m.ID; len(ch.Replaced) < MaxChain; {
		prev, err := h.Predecessors(ctx, at, f)
		if err != nil {
			return ch, err
		}
		// A fact replaces one fact at a time; a merge (consolidation)
		// replaces several, shown together, and the walk goes on from the
		// newest of them.
		at = ""
		for _, p := range prev {
			if seen[p.ID] {
				continue
			}
			seen[p.ID] = true
			ch.Replaced = append(ch.Replaced, p)
			if at == "" {
				at = p.ID
			}
		}
		if at == "" {
			break
		}
	}
	return ch, nil
}

// Archive ends a memory without a successor (it stops holding: "I sold
// the car"): kept as history, hidden from recall, reversible with Restore.
// who must be able to write the memory's scope.
func (e *Engine) Archive(ctx context.Context, who Who, id string) (schemas.Memory, error) {
	return e.life(ctx, who, id, engine.Patch{Invalidate: &engine.Invalidation{At: e.now().UnixMilli()}})
}

// Restore makes a superseded or archived memory hold again.
func (e *Engine) Restore(ctx context.Context, who Who, id string) (schemas.Memory, error) {
	return e.life(ctx, who, id, engine.Patch{Restore: true})
}

func (e *Engine) life(ctx context.Context, who Who, id string, p engine.Patch) (schemas.Memory, error) {
	f, err := e.readFilter(who, "")
	if err != nil {
		return schemas.Memory{}, err
	}
	m, err := e.store.Get(ctx, id, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	if _, err := e.writeScope(who, m.Scope); err != nil {
		return schemas.Memory{}, err
	}
	m, err = e.store.Update(ctx, m.ID, p, engine.InScopes(m.Scope))
	e.wrote(nil)
	return withoutVector(m), err
}
