package retrieve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// testDim is the size of the hand-made vectors: the query is the first axis
// and each memory lies in its own plane (axis 0, axis k), so its cosine to
// the query is exactly what the test chose and two memories in different
// planes have cosine c1·c2 to each other — below MMR's 0.85 for the values
// used here, so MMR never reorders unless a test wants it to.
const testDim = 32

// scoreTol absorbs float32 storage of vectors (cosines are exact to ~1e-7).
const scoreTol = 1e-5

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// queryVec is the query embedding every hand-made test uses.
func queryVec() []float32 {
	v := make([]float32, testDim)
	v[0] = 1
	return v
}

// vecAt is a unit vector with cosine c to queryVec, in plane k (1..testDim-1).
func vecAt(c float64, k int) []float32 {
	v := make([]float32, testDim)
	v[0] = float32(c)
	v[k] = float32(math.Sqrt(1 - c*c))
	return v
}

// tm describes one test memory.
type tm struct {
	key        int // → a fixed UUID, and the plane of its vector
	text       string
	cos        float64 // cosine to queryVec
	scope      string
	category   schemas.Category
	importance float64 // 0 means 1 here, so most tests run with ×1
	ageDays    float64
}

func idOf(key int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", key) }

func keyOf(id string) int {
	var k int
	fmt.Sscanf(id[len(id)-12:], "%d", &k)
	return k
}

func (m tm) memory() schemas.Memory {
	imp := m.importance
	if imp == 0 {
		imp = 1
	}
	cat := m.category
	if cat == "" {
		cat = schemas.CategoryFact
	}
	return schemas.Memory{
		ID: idOf(m.key), Text: m.text, Vector: vecAt(m.cos, m.key), Category: cat, Scope: m.scope,
		Importance: imp, Timestamp: testNow.Add(-time.Duration(m.ageDays * float64(24*time.Hour))).UnixMilli(),
	}
}

func openStore(t testing.TB, dim int) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{Dimensions: dim, Index: vecindex.Options{Mode: vecindex.IVF}})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func seedStore(t testing.TB, ms ...tm) *sqlitestore.Store {
	t.Helper()
	if len(ms) >= testDim {
		t.Fatalf("at most %d hand-made memories", testDim-1)
	}
	s := openStore(t, testDim)
	batch := make([]schemas.Memory, len(ms))
	for i, m := range ms {
		if m.key < 1 || m.key >= testDim {
			t.Fatalf("key %d out of 1..%d", m.key, testDim-1)
		}
		batch[i] = m.memory()
	}
	if err := s.Import(context.Background(), batch...); err != nil {
		t.Fatalf("import: %v", err)
	}
	return s
}

// quietLog keeps expected rerank failures out of the test output.
var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func newRetriever(t testing.TB, s engine.Store, cfg Config, opts ...Option) *Retriever {
	t.Helper()
	r, err := New(s, cfg, append([]Option{WithClock(func() time.Time { return testNow }), WithLogger(quietLog)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// cfgWith is DefaultConfig with rerank set and changes applied.
// cfgWith is the seed's configuration (the stage semantics these tests
// pin down) with rerankMode and changes.
func cfgWith(rerankMode string, change ...func(*Config)) Config {
	c := SeedConfig()
	c.Rerank = rerankMode
	for _, f := range change {
		f(&c)
	}
	return c
}

func retrieve(t testing.TB, r *Retriever, q Query) Result {
	t.Helper()
	if q.Vector == nil {
		q.Vector = queryVec()
	}
	if q.Scopes.Denies() { // unset: tests that care about scopes set them
		q.Scopes = engine.AllScopes()
	}
	res, err := r.Retrieve(context.Background(), q)
	if err != nil {
		t.Fatalf("Retrieve(%q): %v", q.Text, err)
	}
	return res
}

func byID(cs []Candidate) map[string]Candidate {
	m := make(map[string]Candidate, len(cs))
	for _, c := range cs {
		m[c.Memory.ID] = c
	}
	return m
}

// postRerank applies the seed's stages after rerank to a reranked score,
// written out independently of stages.go.
func postRerank(cfg Config, now time.Time, m schemas.Memory, s float64) float64 {
	st := postRerankStages(cfg, now, m, s)
	return st[len(st)-1]
}

// postRerankStages is the score after each post-rerank stage in turn:
// recency, importance, length normalisation, time decay.
func postRerankStages(cfg Config, now time.Time, m schemas.Memory, s float64) []float64 {
	age := math.Max(0, float64(now.UnixMilli()-m.Timestamp)/864e5)
	if cfg.RecencyHalfLifeDays > 0 && cfg.RecencyWeight > 0 {
		s = math.Min(1, s+math.Exp(-age/cfg.RecencyHalfLifeDays)*cfg.RecencyWeight)
	}
	out := []float64{s}
	s *= 0.7 + 0.3*m.Importance
	out = append(out, s)
	if cfg.LengthNormAnchor > 0 {
		n := float64(len([]rune(m.Text)))
		s /= 1 + 0.5*math.Log2(math.Max(n/cfg.LengthNormAnchor, 1))
	}
	out = append(out, s)
	if cfg.TimeDecayHalfLifeDays > 0 {
		s *= 0.5 + 0.5*math.Exp(-age/cfg.TimeDecayHalfLifeDays)
	}
	return append(out, s)
}

// checkFinal asserts the invariants every returned candidate must meet:
// Final is the score, it follows from Reranked by the post-rerank stages,
// and the list is sorted (MMR never fires with the hand-made vectors).
func checkFinal(t *testing.T, cfg Config, res Result) {
	t.Helper()
	for i, c := range res.Candidates {
		if c.Sources.Final != c.Score {
			t.Errorf("%s: Final %v != Score %v", c.Memory.ID, c.Sources.Final, c.Score)
		}
		if want := postRerank(cfg, testNow, c.Memory, c.Sources.Reranked); math.Abs(c.Score-want) > scoreTol {
			t.Errorf("%s: final %v, want %v from reranked %v", c.Memory.ID, c.Score, want, c.Sources.Reranked)
		}
		// Each stage's score is recorded as the stage left it.
		want := postRerankStages(cfg, testNow, c.Memory, c.Sources.Reranked)
		for j, got := range []float64{c.Sources.AfterRecency, c.Sources.AfterImportance, c.Sources.AfterLengthNorm, c.Sources.AfterTimeDecay} {
			if math.Abs(got-want[j]) > scoreTol {
				t.Errorf("%s: stage %d recorded %v, want %v", c.Memory.ID, j, got, want[j])
			}
		}
		if c.Sources.Rerank != res.Rerank {
			t.Errorf("%s: Sources.Rerank %q, Result.Rerank %q", c.Memory.ID, c.Sources.Rerank, res.Rerank)
		}
		if i > 0 && res.Candidates[i-1].Score < c.Score {
			t.Errorf("not sorted at %d: %v < %v", i, res.Candidates[i-1].Score, c.Score)
		}
	}
}

// fillers are vector-near memories with no keyword in common with the
// keyword tests' queries.
var fillers = []tm{
	{key: 1, text: "The user prefers dark mode in every editor", cos: 0.9},
	{key: 2, text: "Standup meetings happen at 9:30 on weekdays", cos: 0.85},
	{key: 3, text: "The staging cluster runs in eu-west-1", cos: 0.8},
	{key: 4, text: "Alice owns the billing service migration", cos: 0.75},
	{key: 5, text: "Deploys are frozen during the last week of December", cos: 0.7},
}

// jinaMem holds the keyword but points away from the query vector.
var jinaMem = tm{key: 9, text: "Export JINA_API_KEY before starting the reranker sidecar", cos: -0.5}

// farFillers are 12 memories all nearer the query than jinaMem (cosines 0.3
// down to -0.25) but with vector scores below 0.6, so a BM25-only hit
// (fused ≥ 0.5) can outrank most of them.
func farFillers() []tm {
	ms := make([]tm, 12)
	for i := range ms {
		ms[i] = tm{key: 10 + i, text: fmt.Sprintf("Unrelated memory %d about lunch orders", i), cos: 0.3 - 0.05*float64(i)}
	}
	return ms
}

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

func TestBadInput(t *testing.T) {
	srv := newRerankServer(t, scoreByText(map[string]float64{"": 0.5}))
	s := seedStore(t, append(slices.Clone(fillers), jinaMem)...)
	long := strings.Repeat("deploy frozen December ", 100*1024/23+1) // > 100 KB
	tests := []struct {
		name     string
		text     string
		wantMode string
	}{
		{"empty text: vector only", "", ModeVector},
		{"100 KB", long, ModeHybrid},
		{"100 KB of one rune, cut mid-rune", strings.Repeat("记", 40*1024), ModeHybrid},
		{"pure emoji", "🙂🚀🔥👍🏽", ModeHybrid},
		{"quote", `"`, ModeHybrid},
		{"unbalanced quotes", `"JINA_API_KEY`, ModeHybrid},
		{"star", "*", ModeHybrid},
		{"prefix star", "dep*", ModeHybrid},
		{"NEAR(", "NEAR(", ModeHybrid},
		{"NEAR expression", "NEAR(deploy frozen, 2)", ModeHybrid},
		{"boolean ops", "deploy AND NOT OR frozen", ModeHybrid},
		{"column filter", "body:deploy text:x", ModeHybrid},
		{"caret and braces", "^deploy {a b} (c", ModeHybrid},
		{"invalid UTF-8", "\xff\xfe JINA_API_KEY \xc3", ModeHybrid},
		{"NUL byte", "dep\x00loy", ModeHybrid},
		{"only punctuation", "?!.,;:-_", ModeHybrid},
		{"whitespace", " \t\n ", ModeHybrid},
	}
	for _, mode := range []string{RerankCrossEncoder, RerankLightweight} {
		r := newRetriever(t, s, cfgWith(mode), WithReranker(srv.client(t)))
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				res, err := r.Retrieve(context.Background(), Query{Text: tt.text, Vector: queryVec(), Scopes: engine.AllScopes(), Limit: 10})
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if res.Mode != tt.wantMode {
					t.Errorf("mode %q, want %q", res.Mode, tt.wantMode)
				}
				if len(res.Candidates) < 3 {
					t.Errorf("only %d results: vector hits must survive any text", len(res.Candidates))
				}
				for _, c := range res.Candidates {
					if math.IsNaN(c.Score) || c.Score < 0 || c.Score > 1 {
						t.Errorf("score %v out of [0,1]", c.Score)
					}
				}
			})
		}
	}
	// Every query that reached the reranker was cut to MaxQueryBytes.
	srv.mu.Lock()
	for _, req := range srv.reqs {
		if len(req.Query) > MaxQueryBytes+8 { // +8: U+FFFD for invalid bytes
			t.Errorf("reranker got a %d-byte query", len(req.Query))
		}
	}
	srv.mu.Unlock()

	r := newRetriever(t, s, cfgWith(RerankNone))
	badVectors := []struct {
		name string
		vec  []float32
		is   error // nil: any error
	}{
		{"nil", nil, schemas.ErrInvalid},
		{"empty", []float32{}, schemas.ErrInvalid},
		{"wrong dimension", []float32{1, 0, 0}, nil},
		{"NaN", append([]float32{float32(math.NaN())}, make([]float32, testDim-1)...), nil},
		{"Inf", append([]float32{float32(math.Inf(1))}, make([]float32, testDim-1)...), nil},
	}
	for _, tt := range badVectors {
		_, err := r.Retrieve(context.Background(), Query{Text: "deploy", Vector: tt.vec, Scopes: engine.AllScopes()})
		if err == nil || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("%s vector: error %v, want %v", tt.name, err, tt.is)
		}
	}
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

// TestLocalEmbedder runs the pipeline the way the service does offline: the
// deterministic lexical embedder for both memories and queries.
func TestLocalEmbedder(t *testing.T) {
	ctx := context.Background()
	e, err := embed.New(embed.Config{Provider: "local", Dimensions: 256})
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"The user prefers oolong tea over coffee in the afternoon",
		"Set JINA_API_KEY in the environment before starting the rerank sidecar",
		"The staging database lives on db-staging-02 in eu-west-1",
		"Standup meetings happen at 9:30 on weekdays",
		"The user's daughter is called Mia and loves drawing",
		"We decided to migrate the billing service to Go in Q3",
		"用户最喜欢喝乌龙茶",
		"Deploys are frozen during the last week of December",
	}
	s, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{Dimensions: e.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	vecs, err := e.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	batch := make([]schemas.Memory, len(texts))
	for i, text := range texts {
		batch[i] = schemas.Memory{ID: idOf(i + 1), Text: text, Vector: vecs[i], Importance: 0.7, Timestamp: testNow.UnixMilli()}
	}
	if err := s.Import(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	r := newRetriever(t, s, cfgWith(RerankLightweight))
	tests := []struct{ query, want string }{
		{"what tea does the user prefer", texts[0]},
		{"JINA_API_KEY", texts[1]},
		{"staging database host", texts[2]},
		{"when is standup", texts[3]},
		{"乌龙茶", texts[6]},
	}
	for _, tt := range tests {
		qv, err := e.EmbedQuery(ctx, tt.query)
		if err != nil {
			t.Fatal(err)
		}
		res := retrieve(t, r, Query{Text: tt.query, Vector: qv, Limit: 3})
		if len(res.Candidates) == 0 || res.Candidates[0].Memory.Text != tt.want {
			var got []string
			for _, c := range res.Candidates {
				got = append(got, fmt.Sprintf("%.3f %s", c.Score, c.Memory.Text))
			}
			t.Errorf("%q: top %q, want %q", tt.query, got, tt.want)
		}
	}
}

// TestConcurrentRetrieve runs queries in parallel, for the race detector:
// the BM25 search runs on its own goroutine inside every call.
func TestConcurrentRetrieve(t *testing.T) {
	srv := newRerankServer(t, scoreByText(map[string]float64{"The": 0.7, "Standup": 0.2}))
	s := seedStore(t, append(slices.Clone(fillers), jinaMem)...)
	r := newRetriever(t, s, cfgWith(RerankCrossEncoder), WithReranker(srv.client(t)))
	var wg sync.WaitGroup
	errs := make(chan error, 8*10)
	for g := range 8 {
		wg.Go(func() {
			for i := range 10 {
				q := []string{"JINA_API_KEY", "standup", "", "dark mode"}[(g+i)%4]
				if _, err := r.Retrieve(context.Background(), Query{Text: q, Vector: queryVec(), Scopes: engine.AllScopes()}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCanceledContext: a caller that has gone away gets an error or a
// result, never a hang or a panic.
func TestCanceledContext(t *testing.T) {
	s := seedStore(t, fillers...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRetriever(t, s, cfgWith(RerankNone))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Retrieve(ctx, Query{Text: "standup", Vector: queryVec(), Scopes: engine.AllScopes()})
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Retrieve hung on a canceled context")
	}
}

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

func keys(res Result) []int {
	var out []int
	for _, c := range res.Candidates {
		out = append(out, keyOf(c.Memory.ID))
	}
	return out
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
