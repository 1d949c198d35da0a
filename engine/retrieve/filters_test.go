package retrieve

import (
	"context"
	"slices"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func TestScopeFilter(t *testing.T) {
	s := seedStore(t,
		tm{key: 1, text: "kubernetes upgrade for team A", cos: 0.7, scope: "agent:a"},
		tm{key: 2, text: "kubernetes is the shared platform", cos: 0.6, scope: "global"},
		tm{key: 3, text: "legacy memory without a scope mentions nothing", cos: 0.5},
		// Agent b's memories are the best matches on both sides; none may leak.
		tm{key: 4, text: "kubernetes kubernetes secrets of team B", cos: 0.99, scope: "agent:b"},
		tm{key: 5, text: "kubernetes admin password of team B", cos: -0.9, scope: "agent:b"},
		tm{key: 6, text: "agent b private note", cos: 0.95, scope: "agent:b"},
	)
	cfg := cfgWith(RerankNone)
	r := newRetriever(t, s, cfg)
	tests := []struct {
		name   string
		scopes engine.ScopeFilter
		want   []int // keys expected, any order
	}{
		// Agent b's kubernetes memories are BM25 matches too: a text
		// search that ignored scopes would bring them in as BM25-only hits.
		{"a and global", engine.InScopes("agent:a", "global"), []int{1, 2, 3}},
		{"b only", engine.InScopes("agent:b"), []int{4, 5, 6}},
		{"global only", engine.InScopes("global"), []int{2, 3}},
		{"unknown scope", engine.InScopes("agent:zzz"), nil},
		{"zero filter denies all", engine.ScopeFilter{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Retrieve(context.Background(), Query{Text: "kubernetes", Vector: queryVec(), Scopes: tt.scopes, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			var keys []int
			for _, c := range res.Candidates {
				if !tt.scopes.Allows(c.Memory.Scope) {
					t.Errorf("returned %s from scope %q outside %v", c.Memory.ID, c.Memory.Scope, tt.scopes)
				}
				keys = append(keys, keyOf(c.Memory.ID))
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.want) {
				t.Errorf("keys %v, want %v", keys, tt.want)
			}
		})
	}
}

func TestCategoryFilter(t *testing.T) {
	s := seedStore(t,
		tm{key: 1, text: "The user prefers oolong tea", cos: 0.5, category: schemas.CategoryPreference},
		tm{key: 2, text: "The user prefers dark mode", cos: 0.6, category: schemas.CategoryPreference},
		tm{key: 3, text: "The tea shop closes at six", cos: 0.95, category: schemas.CategoryFact},
		tm{key: 4, text: "We decided to drop the tea budget", cos: 0.9, category: schemas.CategoryDecision},
		tm{key: 5, text: "Tea: oolong, green, black", cos: -0.5, category: schemas.CategoryFact},
	)
	cfg := cfgWith(RerankNone)
	r := newRetriever(t, s, cfg)
	for _, cat := range []schemas.Category{schemas.CategoryPreference, schemas.CategoryFact, schemas.CategoryDecision, schemas.CategoryEntity} {
		res := retrieve(t, r, Query{Text: "tea oolong", Category: cat, Limit: 10})
		want := map[schemas.Category]int{schemas.CategoryPreference: 2, schemas.CategoryFact: 2, schemas.CategoryDecision: 1}[cat]
		if len(res.Candidates) != want {
			t.Errorf("%s: %d results, want %d", cat, len(res.Candidates), want)
		}
		for _, c := range res.Candidates {
			if c.Memory.Category != cat {
				t.Errorf("%s: got a %s memory %q", cat, c.Memory.Category, c.Memory.Text)
			}
		}
	}
}

func TestMinScores(t *testing.T) {
	ms := []tm{
		{key: 1, text: "Memory alpha about the payments queue", cos: 0.95},
		{key: 2, text: "Memory bravo about the payments queue", cos: 0.6},
		{key: 3, text: "Memory charlie about the payments queue", cos: 0.2, ageDays: 90},
		{key: 4, text: "Memory delta about the payments queue", cos: 0, ageDays: 400, importance: 0.1},
		{key: 5, text: "Memory echo about the payments queue", cos: -0.8, ageDays: 400, importance: 0.1},
	}
	s := seedStore(t, ms...)
	zero := 0.0
	all := retrieve(t, newRetriever(t, s, cfgWith(RerankNone, func(c *Config) { c.HardMinScore = 0 })), Query{Limit: 10})
	if len(all.Candidates) != len(ms) {
		t.Fatalf("hard minimum 0 returned %d of %d", len(all.Candidates), len(ms))
	}
	finals := map[string]float64{}
	for _, c := range all.Candidates {
		finals[c.Memory.ID] = c.Score
	}
	survivors := func(min float64) []string {
		var ids []string
		for id, f := range finals {
			if f >= min {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	got := func(res Result) []string {
		ids := candIDs(res.Candidates)
		slices.Sort(ids)
		return ids
	}
	tests := []struct {
		name     string
		hardMin  float64  // config
		override *float64 // Query.MinScore
		min      float64  // effective
	}{
		// Finals ≈ 1, 0.814, 0.340, 0.183, 0.131.
		{"config default 0.35", 0.35, nil, 0.35},
		{"config 0.15", 0.15, nil, 0.15},
		{"config 0.9", 0.9, nil, 0.9},
		{"override lowers", 0.9, &zero, 0},
		{"override raises", 0, ptr(0.3), 0.3},
		{"override 1", 0.35, ptr(1.0), 1},
	}
	distinct := map[int]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRetriever(t, s, cfgWith(RerankNone, func(c *Config) { c.HardMinScore = tt.hardMin }))
			res := retrieve(t, r, Query{Limit: 10, MinScore: tt.override})
			if g, w := got(res), survivors(tt.min); !slices.Equal(g, w) {
				t.Errorf("kept %v, want %v (finals %v)", g, w, finals)
			}
			for _, c := range res.Candidates {
				if c.Score < tt.min {
					t.Errorf("%s scored %v < %v", c.Memory.ID, c.Score, tt.min)
				}
			}
			distinct[len(res.Candidates)] = true
		})
	}
	// The thresholds must actually cut at different places, or this test
	// proves nothing.
	if len(distinct) < 3 {
		t.Errorf("the thresholds did not separate the memories: result sizes %v, finals %v", distinct, finals)
	}

	// minScore applies to fused scores, before rerank: cosine 0 is a
	// vector score of 0.5.
	r := newRetriever(t, s, cfgWith(RerankNone, func(c *Config) { c.MinScore, c.HardMinScore = 0.6, 0 }))
	res := retrieve(t, r, Query{Limit: 10})
	for _, c := range res.Candidates {
		if c.Sources.Fused < 0.6 {
			t.Errorf("%s fused %v passed minScore 0.6", c.Memory.ID, c.Sources.Fused)
		}
	}
	if len(res.Candidates) != 2 {
		t.Errorf("minScore 0.6 kept %d, want 2 (cosines 0.95, 0.6; the next is 0.556)", len(res.Candidates))
	}
}

func ptr[T any](v T) *T { return &v }

// With clawmem's defaults an old but relevant memory is never cut off:
// recall returns the best `limit` memories whatever their age, while the
// seed's settings, given explicitly, still drop them (its hard minimum
// after time decay).
func TestDefaultsKeepOldMemoriesReachable(t *testing.T) {
	s := seedStore(t,
		tm{key: 1, text: "We adopted a beagle called Pepper", cos: 0.55, ageDays: 300},
		tm{key: 2, text: "Pepper chewed the running shoes", cos: 0.45, ageDays: 250, importance: 0.7},
		tm{key: 3, text: "Lunch at the new ramen place", cos: 0.1, ageDays: 1},
	)
	q := Query{Text: "dog beagle", Vector: queryVec(), Limit: 5}
	res := retrieve(t, newRetriever(t, s, DefaultConfig()), q)
	if len(res.Candidates) != 3 || keyOf(res.Candidates[0].Memory.ID) != 1 || keyOf(res.Candidates[1].Memory.ID) != 2 {
		t.Fatalf("defaults: %v", keys(res))
	}
	res = retrieve(t, newRetriever(t, s, SeedConfig()), q)
	for _, c := range res.Candidates {
		if keyOf(c.Memory.ID) == 2 {
			t.Fatalf("the seed's settings kept a 250-day-old memory at %.3f", c.Score)
		}
	}
}
