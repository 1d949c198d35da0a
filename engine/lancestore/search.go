//go:build lancedb

package lancestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/schemas"
)

// VectorSearch implements engine.Store: LanceDB's nearest rows by L2 to
// the unit query, with the scope filter applied before the search,
// re-ranked by exact cosine.
func (s *Store) VectorSearch(ctx context.Context, vec []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(vec) != s.lay.dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(vec), s.lay.dim)
	}
	if err := schemas.ValidateVector(vec); err != nil {
		return nil, err
	}
	cond, ok := scopeCond(o.Scopes)
	if !ok {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	rows, err := s.tbl.VectorSearchWithFilter(ctx, "vector", unit(vec), candidates(o.Limit, cond != ""), cond)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	ms, err := s.memories(rows)
	if err != nil {
		return nil, err
	}
	return rankVector(ms, vec, o), nil
}

// TextSearch implements engine.Store: BM25 over LanceDB's full-text index
// when the library can query it, else nothing (HasFullText is false).
func (s *Store) TextSearch(ctx context.Context, query string, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cond, ok := scopeCond(o.Scopes)
	if !s.fts || !ok {
		return nil, nil
	}
	// The query becomes a bag of words: no syntax reaches the index.
	terms := fts.QueryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	s.mu.RLock()
	rows, err := s.tbl.FullTextSearchWithFilter(ctx, "text", strings.Join(terms, " "), cond)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("full-text search: %w", err)
	}
	out := make([]engine.SearchResult, 0, len(rows))
	for _, r := range rows {
		m, err := rowToMemory(r, s.lay.timeColumn)
		if err != nil {
			return nil, err
		}
		raw, _ := r["_score"].(float64)
		score := engine.NormalizeBM25(raw)
		if !schemas.IsUUID(m.ID) || !o.Scopes.Allows(m.Scope) || score < o.MinScore {
			continue
		}
		out = append(out, engine.SearchResult{Memory: m, Score: score, Raw: raw})
	}
	sortResults(out)
	return out[:min(len(out), o.Limit)], nil
}
