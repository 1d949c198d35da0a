package retrieve

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
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

func keys(res Result) []int {
	var out []int
	for _, c := range res.Candidates {
		out = append(out, keyOf(c.Memory.ID))
	}
	return out
}
