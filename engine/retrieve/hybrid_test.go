package retrieve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func TestHybridFindsKeywordOnlyHit(t *testing.T) {
	s := seedStore(t, append(farFillers(), jinaMem)...)
	// The pool (max(candidatePoolSize, limit) = 10) holds only fillers, so
	// the far-away keyword memory can come in only through BM25.
	small := func(c *Config) { c.CandidatePoolSize = 10 }

	cfg := cfgWith(RerankNone, small)
	res := retrieve(t, newRetriever(t, s, cfg), Query{Text: "JINA_API_KEY", Limit: 10})
	if res.Mode != ModeHybrid {
		t.Errorf("mode %q, want hybrid", res.Mode)
	}
	c, ok := byID(res.Candidates)[idOf(jinaMem.key)]
	if !ok {
		t.Fatalf("the JINA_API_KEY memory was not recalled: %v", candIDs(res.Candidates))
	}
	src := c.Sources
	if src.VectorHit || !src.BM25Hit {
		t.Errorf("want a BM25-only hit, got %+v", src)
	}
	if want := math.Max(src.BM25, 0.5); math.Abs(src.Fused-want) > tol || src.BM25 <= 0 {
		t.Errorf("fused %v, want max(bm25 %v, 0.5)", src.Fused, src.BM25)
	}
	// Its cosine is filled in for BM25-only hits too (the rerank fallback
	// needs it).
	if math.Abs(src.Cosine-jinaMem.cos) > scoreTol {
		t.Errorf("cosine %v, want %v", src.Cosine, jinaMem.cos)
	}
	checkFinal(t, cfg, res)

	// Vector mode never consults BM25.
	cfg = cfgWith(RerankNone, small, func(c *Config) { c.Mode = ModeVector })
	res = retrieve(t, newRetriever(t, s, cfg), Query{Text: "JINA_API_KEY", Limit: 10})
	if res.Mode != ModeVector {
		t.Errorf("mode %q, want vector", res.Mode)
	}
	if len(res.Candidates) != 10 {
		t.Errorf("vector mode returned %d, want the limit of 10", len(res.Candidates))
	}
	for _, c := range res.Candidates {
		if c.Sources.BM25Hit || c.Memory.ID == idOf(jinaMem.key) {
			t.Errorf("vector mode returned a BM25 result: %+v", c)
		}
	}
}

// TestHybridBoostsBothHits pins the fusion through the store: a memory found
// by both searches gets v·1.15 (BM25 scores here are far below 0.69).
func TestHybridBoostsBothHits(t *testing.T) {
	s := seedStore(t,
		tm{key: 1, text: "The user drinks oolong tea every morning", cos: 0.6},
		tm{key: 2, text: "The user prefers dark mode in every editor", cos: 0.9},
	)
	cfg := cfgWith(RerankNone)
	res := retrieve(t, newRetriever(t, s, cfg), Query{Text: "oolong", Limit: 10})
	got := byID(res.Candidates)
	both, vecOnly := got[idOf(1)].Sources, got[idOf(2)].Sources
	if !both.VectorHit || !both.BM25Hit || vecOnly.BM25Hit || !vecOnly.VectorHit {
		t.Fatalf("hit kinds wrong: %+v / %+v", both, vecOnly)
	}
	v := 1 / (2 - 0.6)
	if math.Abs(both.Vector-v) > scoreTol || math.Abs(both.Fused-math.Max(v*1.15, math.Max(both.BM25, 0.5))) > scoreTol {
		t.Errorf("both: vector %v fused %v, want %v and %v·1.15", both.Vector, both.Fused, v, v)
	}
	if math.Abs(vecOnly.Fused-1/(2-0.9)) > scoreTol {
		t.Errorf("vector only: fused %v, want %v", vecOnly.Fused, 1/(2-0.9))
	}
	checkFinal(t, cfg, res)
}

// recordingStore wraps a store to observe (and optionally break) searches.
type recordingStore struct {
	engine.Store
	noFTS     bool
	vecErr    error
	textErr   error
	mu        sync.Mutex
	vecOpts   []engine.SearchOptions
	textOpts  []engine.SearchOptions
	textQuery []string
}

func (s *recordingStore) HasFullText() bool { return !s.noFTS && s.Store.HasFullText() }

func (s *recordingStore) VectorSearch(ctx context.Context, v []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	s.mu.Lock()
	s.vecOpts = append(s.vecOpts, o)
	s.mu.Unlock()
	if s.vecErr != nil {
		return nil, s.vecErr
	}
	return s.Store.VectorSearch(ctx, v, o)
}

func (s *recordingStore) TextSearch(ctx context.Context, q string, o engine.SearchOptions) ([]engine.SearchResult, error) {
	s.mu.Lock()
	s.textOpts = append(s.textOpts, o)
	s.textQuery = append(s.textQuery, q)
	s.mu.Unlock()
	if s.textErr != nil {
		return nil, s.textErr
	}
	return s.Store.TextSearch(ctx, q, o)
}

func manyFillers(n int) []tm {
	ms := make([]tm, n)
	for i := range ms {
		ms[i] = tm{key: i + 1, text: fmt.Sprintf("Project note number %d about the release train", i+1), cos: 0.9 - 0.03*float64(i)}
	}
	return ms
}

func TestLimitAndPool(t *testing.T) {
	rs := &recordingStore{Store: seedStore(t, manyFillers(25)...)}
	cfg := cfgWith(RerankNone)
	r := newRetriever(t, rs, cfg)
	tests := []struct {
		limit    int
		category schemas.Category
		want     int // results
		pool     int // the Limit the store is asked for
	}{
		{3, "", 3, 20},
		{0, "", 5, 20},  // default limit
		{-1, "", 5, 20}, // default limit
		{25, "", 25, 25},
		{40, "", 25, 40}, // pool grows with the limit
		// A category filter fetches 4× the pool so the filtered pool stays full.
		{3, schemas.CategoryFact, 3, 80},
	}
	for _, tt := range tests {
		rs.vecOpts, rs.textOpts = nil, nil
		res := retrieve(t, r, Query{Text: "release", Limit: tt.limit, Category: tt.category})
		if len(res.Candidates) != tt.want {
			t.Errorf("limit %d: %d results, want %d", tt.limit, len(res.Candidates), tt.want)
		}
		if len(rs.vecOpts) != 1 || len(rs.textOpts) != 1 {
			t.Fatalf("limit %d: %d vector and %d text searches, want 1 each", tt.limit, len(rs.vecOpts), len(rs.textOpts))
		}
		if rs.vecOpts[0].Limit != tt.pool || rs.textOpts[0].Limit != tt.pool {
			t.Errorf("limit %d: store asked for %d/%d, want %d", tt.limit, rs.vecOpts[0].Limit, rs.textOpts[0].Limit, tt.pool)
		}
		checkFinal(t, cfg, res)
	}
}

func TestNoFullTextFallsBackToVector(t *testing.T) {
	rs := &recordingStore{Store: seedStore(t, append(slices.Clone(fillers), jinaMem)...), noFTS: true}
	res := retrieve(t, newRetriever(t, rs, cfgWith(RerankNone)), Query{Text: "JINA_API_KEY", Limit: 10})
	if res.Mode != ModeVector || len(rs.textOpts) != 0 {
		t.Errorf("mode %q after %d text searches, want vector and none", res.Mode, len(rs.textOpts))
	}
	if len(res.Candidates) == 0 {
		t.Error("no results from vector search")
	}
}

func TestSearchErrorsPropagate(t *testing.T) {
	boom := errors.New("disk on fire")
	for _, rs := range []*recordingStore{
		{Store: seedStore(t, fillers...), vecErr: boom},
		{Store: seedStore(t, fillers...), textErr: boom},
	} {
		_, err := newRetriever(t, rs, cfgWith(RerankNone)).Retrieve(context.Background(),
			Query{Text: "standup", Vector: queryVec(), Scopes: engine.AllScopes()})
		if !errors.Is(err, boom) {
			t.Errorf("error %v, want %v", err, boom)
		}
	}
}
