package retrieve

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// TestSourcesAndRerankNone checks every explanation field against values
// computed from the hand-made cosines, through the whole pipeline with the
// default stages active (ages, importances and lengths vary).
func TestSourcesAndRerankNone(t *testing.T) {
	ms := []tm{
		{key: 1, text: "The user drinks oolong tea every morning", cos: 0.8, importance: 0.9, ageDays: 3},
		{key: 2, text: "Weekly sync is on Thursdays", cos: 0.7, importance: 0.5, ageDays: 30},
		{key: 3, text: strings.Repeat("Long design notes on the oolong ingestion path. ", 30), cos: 0.75, ageDays: 1},
		{key: 4, text: "Oolong is the codename of the search project", cos: -0.3, importance: 0.8, ageDays: 100},
	}
	s := seedStore(t, ms...)
	cfg := cfgWith(RerankNone, func(c *Config) { c.HardMinScore = 0 })
	res := retrieve(t, newRetriever(t, s, cfg), Query{Text: "oolong", Limit: 10})
	if res.Rerank != RerankNone || res.Mode != ModeHybrid {
		t.Errorf("rerank %q mode %q, want none/hybrid", res.Rerank, res.Mode)
	}
	if len(res.Candidates) != len(ms) {
		t.Fatalf("%d results, want %d", len(res.Candidates), len(ms))
	}
	got := byID(res.Candidates)
	for _, m := range ms {
		c := got[idOf(m.key)].Sources
		wantBM := strings.Contains(strings.ToLower(m.text), "oolong")
		if !c.VectorHit || c.BM25Hit != wantBM {
			t.Errorf("key %d: hits vector=%v bm25=%v, want true/%v", m.key, c.VectorHit, c.BM25Hit, wantBM)
		}
		v := 1 / (2 - m.cos)
		fused := v
		if wantBM {
			fused = math.Min(1, math.Max(v*1.15, math.Max(c.BM25, 0.5)))
			// FTS5 floors the IDF of a term in most documents at a tiny
			// positive value, so the normalised score may be just above 0.5.
			if !(c.BM25 >= 0.5 && c.BM25 < 1) {
				t.Errorf("key %d: bm25 %v not a normalised positive score", m.key, c.BM25)
			}
		}
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"cosine", c.Cosine, m.cos},
			{"vector", c.Vector, v},
			{"fused", c.Fused, fused},
			{"reranked", c.Reranked, fused}, // none leaves scores alone
		} {
			if math.Abs(f.got-f.want) > scoreTol {
				t.Errorf("key %d: %s %v, want %v", m.key, f.name, f.got, f.want)
			}
		}
	}
	checkFinal(t, cfg, res)
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 5, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"}, // é is 2 bytes: never cut inside it
		{"记记", 4, "记"},
		{"记记", 2, ""},
		{"\xff\xffab", 3, "\xff\xffa"}, // invalid bytes count as rune starts
	}
	for _, tt := range tests {
		if got := Truncate(tt.in, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// TestNoiseAndMMRInPipeline: noise memories never come back, and a
// near-duplicate is moved behind a distinct memory that scores lower.
func TestNoiseAndMMRInPipeline(t *testing.T) {
	s := openStore(t, testDim)
	dup := vecAt(0.9, 1)
	dup[2] = 0.05 // cosine to memory 1 ≈ 0.999
	batch := []schemas.Memory{
		tm{key: 1, text: "The user's cat is called Miso", cos: 0.9}.memory(),
		{ID: idOf(2), Text: "The user has a cat named Miso", Vector: dup, Category: schemas.CategoryFact, Importance: 1, Timestamp: testNow.UnixMilli()},
		tm{key: 3, text: "The user's dog is called Pixel", cos: 0.7}.memory(),
		tm{key: 4, text: "I don't have any information about that", cos: 0.99}.memory(),
		tm{key: 5, text: "HEARTBEAT", cos: 0.98}.memory(),
	}
	if err := s.Import(context.Background(), batch...); err != nil {
		t.Fatal(err)
	}
	res := retrieve(t, newRetriever(t, s, cfgWith(RerankNone)), Query{Text: "pet names", Limit: 10})
	if ids := candIDs(res.Candidates); !slices.Equal(ids, []string{idOf(1), idOf(3), idOf(2)}) {
		t.Errorf("order %v, want cat, dog, then the near-duplicate cat", ids)
	}
	// With the filter off the noise comes back (so the check above is real).
	res = retrieve(t, newRetriever(t, s, cfgWith(RerankNone, func(c *Config) { c.FilterNoise = false })), Query{Text: "pet names", Limit: 10})
	if len(res.Candidates) != 5 {
		t.Errorf("filterNoise false: %d results, want 5", len(res.Candidates))
	}
}

// Session-neighbour expansion: the turn after the one a question matches
// (the answer, which shares no word with the question) is recalled, scored
// below the hit and marked with it; a neighbour in another scope, or of
// another category when one is asked for, never is; with neighborHits 0
// nothing is added.
func TestNeighbourExpansion(t *testing.T) {
	at := func(m tm, minutes float64) tm { m.ageDays = 300 + minutes/(24*60); return m }
	s := seedStore(t,
		at(tm{key: 1, text: "Why did you leave the Bristol job?", cos: 0.8, scope: "global"}, 0),
		at(tm{key: 2, text: "Graham took credit for my scheme in front of the board", cos: 0.05, scope: "global"}, -1),
		at(tm{key: 3, text: "Totally unrelated other scope", cos: 0.05, scope: "agent:b"}, -0.5),
		at(tm{key: 4, text: "Lunch was great", cos: 0.1, scope: "global"}, 5000),
	)
	scopes := engine.InScopes("global")
	cfg := DefaultConfig()
	q := Query{Text: "Bristol job", Vector: queryVec(), Limit: 3, Scopes: scopes}
	res := retrieve(t, newRetriever(t, s, cfg), q)
	if len(res.Candidates) < 2 || keyOf(res.Candidates[0].Memory.ID) != 1 || keyOf(res.Candidates[1].Memory.ID) != 2 {
		t.Fatalf("expansion: %v", keys(res))
	}
	hit, nb := res.Candidates[0], res.Candidates[1]
	if nb.Sources.Neighbor != hit.Memory.ID || math.Abs(nb.Score-hit.Score*cfg.NeighborFactor) > 0.02 {
		t.Fatalf("neighbour %+v of hit %.3f", nb.Sources, hit.Score)
	}
	for _, c := range res.Candidates {
		if k := keyOf(c.Memory.ID); k == 3 || (k == 4 && c.Sources.Neighbor != "") {
			t.Fatalf("memory %d brought in as a neighbour (other scope, or outside the window): %v", k, keys(res))
		}
	}
	q.Category = schemas.CategoryDecision
	if res := retrieve(t, newRetriever(t, s, cfg), q); len(res.Candidates) != 0 {
		t.Fatalf("category filter let neighbours in: %v", keys(res))
	}
	q.Category = ""
	q.Direct = true // auto-recall's query: direct matches only
	for _, c := range retrieve(t, newRetriever(t, s, cfg), q).Candidates {
		if c.Sources.Neighbor != "" {
			t.Fatal("a direct query brought in a neighbour")
		}
	}
	q.Direct = false
	cfg.NeighborHits = 0
	for _, c := range retrieve(t, newRetriever(t, s, cfg), q).Candidates {
		if keyOf(c.Memory.ID) == 2 && c.Sources.Neighbor != "" {
			t.Fatal("neighborHits 0 still expands")
		}
	}
}

// The background a stale fact must stand above to lift its successor: the
// median of the pool, a small pool padded with what an unrelated memory
// scores (0.5 at the default weights, less when the vector weight is cut).
func TestBackground(t *testing.T) {
	pool := func(scores ...float64) []Candidate {
		cs := make([]Candidate, len(scores))
		for i, s := range scores {
			cs[i].Score = s
		}
		return cs
	}
	twelve := pool(0.9, 0.8, 0.75, 0.7, 0.66, 0.64, 0.62, 0.6, 0.58, 0.56, 0.54, 0.52)
	for _, tc := range []struct {
		name   string
		vector float64
		cs     []Candidate
		want   float64
	}{
		{"empty", 0.7, nil, 0.5},
		{"three strong matches do not set it", 0.7, pool(0.95, 0.9, 0.85), 0.5},
		{"a small store's unrelated memories", 0.7, pool(0.65, 0.5, 0.5, 0.49, 0.5), 0.5},
		{"six of ten above the unrelated level", 0.7, pool(0.9, 0.8, 0.7, 0.65, 0.6, 0.55), (0.55 + 0.6) / 2},
		{"a full pool: its median", 0.7, twelve, (0.64 + 0.62) / 2},
		{"odd pool", 0.7, twelve[:11], 0.64},
		{"vector weight cut: unrelated scores less", 0.35, pool(0.9), 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRetriever(t, openStore(t, 8), cfgWith(RerankNone, func(c *Config) { c.VectorWeight, c.BM25Weight = tc.vector, 1-tc.vector }))
			if got := r.background(tc.cs); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("background = %.4f, want %.4f", got, tc.want)
			}
		})
	}
}
