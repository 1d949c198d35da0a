package sqlitestore

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/engine/textindex"
	"github.com/clawmem/clawmem/schemas"
)

// The store keeps two in-memory indexes beside its table: vectors (ix)
// and full text (text, once loaded). Every committed write goes through
// indexPut, indexUpdate or unindex so the two never disagree on a row or
// its group, and the row cache (rows) forgets the row.

// indexPut indexes the committed row seq holding m.
func (s *Store) indexPut(seq int64, m schemas.Memory) {
	s.rows.drop(seq)
	g := s.group(groupKey(m.Scope, m.InvalidatedAt))
	// Validated before the commit: the length is right and there is no NaN.
	_ = s.ix.Upsert(seq, g, m.Vector)
	if x := s.text.Load(); x != nil {
		x.Put(seq, g, fts.IndexText(m.Text))
	}
}

// indexUpdate follows an update of row seq from old to m: each index
// changes only if what it holds did.
func (s *Store) indexUpdate(seq int64, old, m schemas.Memory, vectorChanged bool) {
	s.rows.drop(seq)
	g := s.group(groupKey(m.Scope, m.InvalidatedAt))
	regrouped := groupKey(m.Scope, m.InvalidatedAt) != groupKey(old.Scope, old.InvalidatedAt)
	if vectorChanged || regrouped {
		_ = s.ix.Upsert(seq, g, m.Vector)
	}
	if x := s.text.Load(); x != nil {
		switch {
		case m.Text != old.Text:
			x.Put(seq, g, fts.IndexText(m.Text))
		case regrouped:
			x.SetGroup(seq, g)
		}
	}
}

// unindex drops row seq from both indexes.
func (s *Store) unindex(seq int64) {
	s.rows.drop(seq)
	s.ix.Remove(seq)
	if x := s.text.Load(); x != nil {
		x.Remove(seq)
	}
}

// textSyncMax is the largest store whose full-text index is built during
// the open (a few tens of milliseconds); a larger one builds it in the
// background.
var textSyncMax = 20000

// startText builds the full-text index, during the open for a small store
// and in the background for a large one.
func (s *Store) startText() error {
	s.textLoaded.Add(1)
	if s.ix.Len() <= textSyncMax {
		defer s.textLoaded.Done()
		return s.loadText(context.Background())
	}
	s.bg.Go(func() {
		defer s.textLoaded.Done()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-s.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		// A load that fails (the store closing) leaves FTS5 ranking.
		_ = s.loadText(ctx)
	})
	return nil
}

// loadText builds the full-text index from the table, in the background
// after the open: until it is published, searches rank with FTS5. It holds
// the writers' lock while it reads, so no write falls between the rows it
// read and the index taking over (about 4 s at 1,000,000 memories, once
// per open). It reads the text alone, the column before the vector: the
// scope group comes from the vector index, loaded already, so the rows'
// vector blobs (overflow pages at 1,024 dimensions) are never read.
func (s *Store) loadText(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	rows, err := s.db.QueryContext(ctx, `SELECT seq, text FROM memories`)
	if err != nil {
		return fmt.Errorf("load full text: %w", err)
	}
	defer rows.Close()
	type doc struct {
		seq   int64
		group uint32
		text  string
	}
	x := textindex.New()
	docs := make(chan doc, 256)
	var tokenizers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		tokenizers.Go(func() {
			for d := range docs {
				x.Put(d.seq, d.group, fts.IndexText(d.text))
			}
		})
	}
	err = func() error {
		defer close(docs)
		for rows.Next() {
			var d doc
			if err := rows.Scan(&d.seq, &d.text); err != nil {
				return err
			}
			g, ok := s.ix.Group(d.seq)
			if !ok {
				continue // not searchable by vector either: fetch would drop it
			}
			d.group = g
			docs <- d
		}
		return rows.Err()
	}()
	tokenizers.Wait()
	if err != nil {
		return fmt.Errorf("load full text: %w", err)
	}
	s.text.Store(x)
	return nil
}

// WaitText blocks until the full-text index is built (tests and
// benchmarks that measure it).
func (s *Store) WaitText() { s.textLoaded.Wait() }

// memoryTokens maps query terms to the index's tokens, one each; ok is
// false when a term is a phrase (several tokens, such as
// "text-embedding-3-small"), which FTS5 matches by position.
func memoryTokens(terms []string) (tokens []string, ok bool) {
	tokens = make([]string, 0, len(terms))
	for _, t := range terms {
		n := 0
		fts.Tokens(t, func(tok string) {
			if n++; n == 1 {
				tokens = append(tokens, tok)
			}
		})
		if n > 1 {
			return nil, false
		}
	}
	return tokens, true
}

// memoryText is the full-text ranking of query under o by the in-memory
// index, to run when wanted; false where TextSearch does not rank so: no
// index (int8 memory mode, a large store's first seconds), a phrase term
// (FTS5 knows positions), or no full text or no scope to search.
func (s *Store) memoryText(query string, o engine.SearchOptions) (func() hits, bool) {
	x := s.text.Load()
	if x == nil || !s.fts || o.Scopes.Denies() {
		return nil, false
	}
	tokens, ok := memoryTokens(fts.QueryTerms(query))
	if !ok {
		return nil, false
	}
	return func() hits { return s.textHitsMemory(x, tokens, o) }, true
}

// textHitsMemory ranks with the in-memory index: the o.Limit best of the
// caller's groups, exactly, as far as they reach o.MinScore.
func (s *Store) textHitsMemory(x *textindex.Index, tokens []string, o engine.SearchOptions) hits {
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	n := x.Len()
	if limit := commonDocs(n); n > limit {
		kept := tokens[:0]
		for _, t := range tokens {
			if x.DocFreq(t) <= limit {
				kept = append(kept, t)
			}
		}
		tokens = kept
	}
	if len(tokens) == 0 {
		return hits{}
	}
	groups, ok := s.allowedGroups(o.Scopes, o.History)
	if !ok {
		return hits{} // no row is in a scope the caller may read
	}
	found := x.Search(tokens, o.Limit, groups)
	ranked := make([]rankedRow, len(found))
	for i, h := range found {
		ranked[i] = rankedRow{seq: h.Key, raw: h.Score}
	}
	return rankedHits(ranked, o)
}
