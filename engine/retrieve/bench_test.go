package retrieve

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// The recall benchmarks run the whole pipeline (vector + BM25 search,
// fusion, the scoring stages, noise filter, MMR; rerank "none" so no network
// is involved) against a real sqlitestore holding n memories of benchDim
// dimensions. Loading 100k memories takes tens of seconds, so each size is
// built once per process, on first use, and shared by every sub-benchmark;
// TestMain removes the directories at exit.
//
//	go test -run '^$' -bench HybridRecall -benchtime 200x ./engine/retrieve/

const (
	benchDim      = 1024
	benchClusters = 1000 // topics: vector clusters that also pick the nouns
	benchQueries  = 256
	benchBatch    = 1000 // memories per Import transaction
)

// benchNow is the benchmarks' clock; memories are up to two years older.
var benchNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// TestMain closes and deletes the benchmark stores (hundreds of MB on disk
// at 100k memories) once every test and benchmark has run.
func TestMain(m *testing.M) {
	code := m.Run()
	fixtures.mu.Lock()
	for _, f := range fixtures.byN {
		f.close()
	}
	fixtures.mu.Unlock()
	os.Exit(code)
}

var fixtures struct {
	mu  sync.Mutex
	byN map[int]*benchFixture
}

type benchQuery struct {
	text     string // a question: its common words match nearly every memory
	keywords string // only the question's two content words
	vector   []float32
	target   string // id of the memory the query was made from
}

type benchFixture struct {
	n       int
	dir     string
	store   *sqlitestore.Store
	mode    vecindex.Mode
	queries []benchQuery
	load    time.Duration
}

// fixture returns the n-memory store, opened with the given index mode.
// Only one handle can own a store directory, so switching modes closes and
// reopens it (reopening in IVF mode trains the index: sqlitestore builds at
// open). Sub-benchmarks run in sequence, so the switch happens at most once
// per sub-benchmark.
func fixture(b *testing.B, n int, mode vecindex.Mode) *benchFixture {
	if testing.Short() {
		b.Skip("recall benchmarks need a large store; skipped in -short mode")
	}
	b.StopTimer()
	defer b.StartTimer()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if fixtures.byN == nil {
		fixtures.byN = map[int]*benchFixture{}
	}
	f := fixtures.byN[n]
	if f == nil {
		var err error
		if f, err = buildFixture(n); err != nil {
			b.Fatal(err)
		}
		fixtures.byN[n] = f
		b.Logf("loaded %d memories × %d dims in %v", n, benchDim, f.load.Round(time.Millisecond))
	}
	if f.mode != mode || f.store == nil {
		if f.store != nil {
			f.store.Close()
			f.store = nil
		}
		t0 := time.Now()
		s, err := sqlitestore.Open(context.Background(), f.dir, sqlitestore.Options{Dimensions: benchDim, Index: vecindex.Options{Mode: mode}})
		if err != nil {
			b.Fatal(err)
		}
		s.WaitIndex()
		f.store, f.mode = s, mode
		b.Logf("opened %d memories in %s mode (index built) in %v", n, modeName(mode), time.Since(t0).Round(time.Millisecond))
	}
	return f
}

func (f *benchFixture) close() {
	if f.store != nil {
		f.store.Close()
	}
	os.RemoveAll(f.dir)
}

func modeName(m vecindex.Mode) string {
	if m == vecindex.IVF {
		return "ivf"
	}
	return "exact"
}

// corpus generates memories deterministically: memory i's text and vector
// depend only on i, so queries can be made from any memory without keeping
// the 400 MB of vectors around.
type corpus struct {
	centres [][]float32
}

func newCorpus() *corpus {
	rng := rand.New(rand.NewPCG(42, 1))
	c := &corpus{centres: make([][]float32, benchClusters)}
	for i := range c.centres {
		v := make([]float32, benchDim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		c.centres[i] = v
	}
	return c
}

// Word lists for realistic-ish memories: a few words (the, user, in) occur
// in nearly every text, nouns follow the memory's topic, and ticket numbers
// make a long tail of rare terms, as identifiers do in real memories.
var (
	benchSubjects = []string{"The user", "Alice", "Bob", "The team", "Our client", "Maria", "The on-call engineer",
		"Dana", "Kenji", "Priya", "The product owner", "Tomás", "The security lead", "Wei", "The designer"}
	benchVerbs = []string{"prefers", "decided to use", "asked about", "works on", "dislikes", "mentioned", "scheduled",
		"fixed", "reviewed", "deployed", "owns", "is migrating", "wants", "forgot", "documented", "tested", "renamed",
		"archived", "recommended", "booked", "benchmarked", "rolled back", "approved", "questioned", "paired on"}
	benchAdjectives = []string{"new", "old", "shared", "private", "flaky", "slow", "fast", "internal", "public",
		"legacy", "experimental", "stable", "broken", "weekly", "nightly", "regional", "encrypted", "cheap",
		"expensive", "temporary", "primary", "secondary", "offline", "hosted", "quarterly", "critical", "minor"}
	benchNouns = []string{"database", "dashboard", "invoice", "pipeline", "cluster", "runbook", "budget", "laptop",
		"contract", "roadmap", "certificate", "backup", "schema", "release", "sprint", "vendor", "office", "printer",
		"router", "firewall", "webhook", "queue", "cache", "index", "migration", "incident", "postmortem", "workshop",
		"offsite", "hackathon", "interview", "onboarding", "payroll", "expense", "travel", "flight", "hotel",
		"conference", "keynote", "newsletter", "podcast", "library", "framework", "compiler", "debugger", "profiler",
		"container", "kernel", "driver", "firmware", "sensor", "camera", "microphone", "headset", "monitor",
		"keyboard", "desk", "chair", "garden", "kitchen", "coffee", "tea", "lunch", "dinner", "recipe", "bakery",
		"gym", "marathon", "bicycle", "car", "train", "apartment", "lease", "mortgage", "insurance", "dentist",
		"doctor", "pharmacy", "birthday", "anniversary", "wedding", "vacation", "passport", "visa", "tax", "refund",
		"subscription", "license", "trademark", "patent", "lawsuit", "audit", "compliance", "policy", "password",
		"token", "secret", "key", "vault", "domain", "website", "blog", "forum", "chatbot", "model", "dataset",
		"embedding", "reranker", "prompt", "agent", "plugin", "extension", "theme", "font", "logo", "brochure",
		"spreadsheet", "slide", "report", "memo", "ticket", "bug", "feature", "milestone", "deadline", "meeting"}
	benchTails = []string{"on Monday", "before the release", "in the staging cluster", "for the Q3 roadmap",
		"during the offsite", "after the incident", "with the vendor", "at the Berlin office", "for next quarter",
		"in the shared drive", "since last spring", "until further notice", "for the mobile app", "in production",
		"for the board meeting", "over the weekend", "at the customer site", "for the audit", "in the wiki",
		"on the team calendar", "in Lisbon", "from home", "for the launch", "in the old repository"}
)

// memory returns memory i of an n-memory corpus.
func (c *corpus) memory(i int) schemas.Memory {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	topic := rng.IntN(benchClusters)
	noun := func(k int) string { return benchNouns[(topic*7+k*13+rng.IntN(3))%len(benchNouns)] }
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s the %s %s %s %s",
		benchSubjects[rng.IntN(len(benchSubjects))], benchVerbs[rng.IntN(len(benchVerbs))],
		benchAdjectives[rng.IntN(len(benchAdjectives))], noun(0), noun(1), benchTails[rng.IntN(len(benchTails))])
	if rng.IntN(3) == 0 {
		fmt.Fprintf(&b, " and linked the %s %s", benchAdjectives[rng.IntN(len(benchAdjectives))], noun(2))
	}
	if rng.IntN(4) == 0 {
		fmt.Fprintf(&b, " (ticket OPS-%d)", rng.IntN(20000))
	}
	b.WriteByte('.')

	// Members of a topic have cosine ≈ 0.5 to each other, as memories on
	// one subject do with real embeddings.
	v := make([]float32, benchDim)
	for j, x := range c.centres[topic] {
		v[j] = x + float32(rng.NormFloat64())
	}
	scope := schemas.GlobalScope
	switch r := rng.IntN(10); {
	case r < 3:
		scope = "agent:main"
	case r < 4:
		scope = "agent:other"
	}
	return schemas.Memory{
		Text:       b.String(),
		Vector:     v,
		Category:   schemas.Categories[rng.IntN(5)],
		Scope:      scope,
		Importance: 0.3 + 0.7*rng.Float64(),
		Timestamp:  benchNow.Add(-time.Duration(rng.Float64() * 730 * float64(24*time.Hour))).UnixMilli(),
	}
}

// query makes a question about memory m: its vector plus noise (cosine ≈
// 0.94 to m, ≈ 0.47 to the rest of its topic) and a few of its words wrapped
// in the common words people ask with.
func (c *corpus) query(m schemas.Memory, seed int) benchQuery {
	rng := rand.New(rand.NewPCG(uint64(seed), 99))
	v := slices.Clone(m.Vector)
	for j := range v {
		v[j] += float32(0.5 * rng.NormFloat64())
	}
	// The content words are the memory's nouns (it has at least two).
	var nouns []string
	for _, w := range strings.Fields(strings.Trim(m.Text, ".")) {
		if slices.Contains(benchNouns, w) && !slices.Contains(nouns, w) {
			nouns = append(nouns, w)
		}
	}
	w1, w2 := nouns[rng.IntN(len(nouns))], nouns[rng.IntN(len(nouns))]
	return benchQuery{text: fmt.Sprintf("what did we say about the %s %s", w1, w2), keywords: w1 + " " + w2, vector: v, target: m.ID}
}

func buildFixture(n int) (*benchFixture, error) {
	dir, err := os.MkdirTemp("", "clawmem-recall-bench-")
	if err != nil {
		return nil, err
	}
	f := &benchFixture{n: n, dir: dir}
	ctx := context.Background()
	t0 := time.Now()
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: benchDim})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	f.store, f.mode = s, vecindex.Exact
	c := newCorpus()
	// Every n/benchQueries-th memory is a query target; ids are fixed so
	// the targets are known without reading the store back.
	step := max(1, n/benchQueries)
	batch := make([]schemas.Memory, 0, benchBatch)
	for i := range n {
		m := c.memory(i)
		m.ID = fmt.Sprintf("%08x-0000-4000-8000-%012x", n, i)
		if i%step == 0 && len(f.queries) < benchQueries {
			f.queries = append(f.queries, c.query(m, i))
		}
		batch = append(batch, m)
		if len(batch) == benchBatch || i == n-1 {
			if err := s.Import(ctx, batch...); err != nil {
				f.close()
				return nil, fmt.Errorf("load memory %d: %w", i, err)
			}
			batch = batch[:0]
		}
	}
	f.load = time.Since(t0)
	return f, nil
}

// runRecall times one Retrieve per iteration and reports latency
// percentiles, plus how often the memory a query was made from comes back
// in the top 5 (a guard against measuring a pipeline that finds nothing).
func runRecall(b *testing.B, f *benchFixture, cfg Config, keywords bool) {
	r, err := New(f.store, cfg, WithClock(func() time.Time { return benchNow }), WithLogger(quietLog))
	if err != nil {
		b.Fatal(err)
	}
	scopes := engine.InScopes(schemas.GlobalScope, "agent:main", "agent:other")
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	found, results := 0, 0
	for i := 0; b.Loop(); i++ {
		q := f.queries[i%len(f.queries)]
		text := q.text
		if keywords {
			text = q.keywords
		}
		t0 := time.Now()
		res, err := r.Retrieve(ctx, Query{Text: text, Vector: q.vector, Scopes: scopes, Limit: 5})
		lat = append(lat, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
		results += len(res.Candidates)
		if slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return c.Memory.ID == q.target }) {
			found++
		}
	}
	reportLatency(b, lat)
	b.ReportMetric(100*float64(found)/float64(len(lat)), "hit@5-%")
	b.ReportMetric(float64(results)/float64(len(lat)), "results/op")
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[max(0, int(math.Ceil(p*float64(len(lat))))-1)]) / 1e6
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// runTextSearch times the store's BM25 search alone, as the pipeline calls
// it (pool 20, three scopes), to show how much of a hybrid query it is.
func runTextSearch(b *testing.B, f *benchFixture) {
	scopes := engine.InScopes(schemas.GlobalScope, "agent:main", "agent:other")
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if _, err := f.store.TextSearch(ctx, f.queries[i%len(f.queries)].text, engine.SearchOptions{Scopes: scopes, Limit: 20}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat)
}

func benchConfig(mode string) Config {
	c := DefaultConfig()
	c.Rerank = RerankNone
	c.Mode = mode
	return c
}

// BenchmarkHybridRecall: 100k memories × 1024 dims, precomputed query
// vectors, rerank none; exact and IVF vector search. The extra
// sub-benchmarks split the cost: IVF without BM25, IVF with only the
// question's content words as text, and the store's BM25 search alone.
func BenchmarkHybridRecall(b *testing.B) {
	const n = 100_000
	b.Run("exact", func(b *testing.B) { runRecall(b, fixture(b, n, vecindex.Exact), benchConfig(ModeHybrid), false) })
	b.Run("ivf", func(b *testing.B) { runRecall(b, fixture(b, n, vecindex.IVF), benchConfig(ModeHybrid), false) })
	b.Run("ivf-vector-only", func(b *testing.B) { runRecall(b, fixture(b, n, vecindex.IVF), benchConfig(ModeVector), false) })
	b.Run("ivf-keywords", func(b *testing.B) { runRecall(b, fixture(b, n, vecindex.IVF), benchConfig(ModeHybrid), true) })
	b.Run("textsearch-only", func(b *testing.B) { runTextSearch(b, fixture(b, n, vecindex.IVF)) })
}

// BenchmarkHybridRecallGrowth compares 10k with 100k memories: exact search
// should grow about linearly with n, IVF well below it. Within each size
// the mode the store is already open in runs first, to save a reopen.
func BenchmarkHybridRecallGrowth(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		for _, mode := range []vecindex.Mode{vecindex.IVF, vecindex.Exact} {
			b.Run(fmt.Sprintf("n=%d/%s", n, modeName(mode)), func(b *testing.B) {
				runRecall(b, fixture(b, n, mode), benchConfig(ModeHybrid), false)
			})
		}
	}
}
