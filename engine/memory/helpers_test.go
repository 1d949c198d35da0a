package memory_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

const testDims = 256

// setup configures newEngine; the zero value is the local embedder, default
// scopes and the default retrieval config (cross-encoder with no reranker,
// so the cosine fallback runs).
type setup struct {
	emb     embed.Embedder
	scopes  scopes.Config
	rerank  string
	secrets redact.Mode
	// retrieval, when set, changes the retrieval config last.
	retrieval func(*retrieve.Config)
	// recallCache and recallCacheTTL: memory.WithRecallCache's (0: no cache).
	recallCache    int
	recallCacheTTL time.Duration
}

// isolationScopes is the adversarial layout: A and B have default access,
// C reads and writes only global and custom:shared.
var isolationScopes = scopes.Config{
	Definitions: map[string]scopes.Definition{"custom:shared": {Description: "shared with C"}},
	AgentAccess: map[string][]string{"C": {"global", "custom:shared"}},
}

func localEmbedder(t testing.TB) embed.Embedder {
	t.Helper()
	emb, err := embed.New(embed.Config{Provider: "local", Dimensions: testDims})
	if err != nil {
		t.Fatal(err)
	}
	return emb
}

// newEngine opens a real SQLite store in a temp dir.
func newEngine(t testing.TB, s setup) *memory.Engine {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{Dimensions: testDims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := retrieve.DefaultConfig()
	cfg.AutoRecallMinScore, cfg.AutoRecallMinMargin = 0.3, 0 // the seed's gate, for the small test embedder these fixtures were written for
	if s.rerank != "" {
		cfg.Rerank = s.rerank
	}
	if s.retrieval != nil {
		s.retrieval(&cfg)
	}
	ret, err := retrieve.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sm, err := scopes.New(s.scopes)
	if err != nil {
		t.Fatal(err)
	}
	emb := s.emb
	if emb == nil {
		emb = localEmbedder(t)
	}
	return memory.New(st, emb, ret, sm, memory.WithSecrets(s.secrets), memory.WithRecallCache(s.recallCache, s.recallCacheTTL))
}

// mustStore stores text for who (dedup off unless given) and returns the memory.
func mustStore(t testing.TB, e *memory.Engine, who memory.Who, r memory.StoreRequest) schemas.Memory {
	t.Helper()
	res, err := e.Store(context.Background(), who, r, memory.DedupTool)
	if err != nil {
		t.Fatalf("Store(%q): %v", r.Text, err)
	}
	if res.Status != memory.Created {
		t.Fatalf("Store(%q): status %s (duplicate of %s %q), want created", r.Text, res.Status, res.Memory.ID, res.Memory.Text)
	}
	return res.Memory
}

// get reads a memory as admin; ok is false when it does not exist.
func get(t testing.TB, e *memory.Engine, id string) (schemas.Memory, bool) {
	t.Helper()
	m, err := e.Backend().Get(context.Background(), id, engine.AllScopes())
	if errors.Is(err, engine.ErrNotFound) {
		return m, false
	}
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	m.Vector = nil
	return m, true
}

// all lists every memory as admin, sorted by id.
func all(t testing.TB, e *memory.Engine) []schemas.Memory {
	t.Helper()
	ms, err := e.List(context.Background(), memory.Admin(), memory.ListOptions{Limit: memory.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ms, func(a, b schemas.Memory) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return ms
}

func total(t testing.TB, e *memory.Engine) int {
	t.Helper()
	st, err := e.Stats(context.Background(), memory.Admin(), "")
	if err != nil {
		t.Fatal(err)
	}
	return st.Total
}

func ids(cs []retrieve.Candidate) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Memory.ID
	}
	return out
}

func memIDs(ms []schemas.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// fakeEmbedder wraps the local embedder: fixed vectors for chosen texts, an
// optional delay (which may ignore cancellation, like a hung HTTP client),
// an optional error, and a record of every text it was asked to embed.
type fakeEmbedder struct {
	embed.Embedder
	vecs      map[string][]float32
	delay     time.Duration
	ignoreCtx bool
	err       error

	mu      sync.Mutex
	queries []string
	calls   int
}

func (f *fakeEmbedder) wait(ctx context.Context) error {
	if f.delay <= 0 {
		return nil
	}
	if f.ignoreCtx {
		time.Sleep(f.delay)
		return nil
	}
	select {
	case <-time.After(f.delay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeEmbedder) vec(ctx context.Context, text string) ([]float32, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	if f.err != nil {
		return nil, f.err
	}
	if v, ok := f.vecs[text]; ok {
		return slices.Clone(v), nil
	}
	return f.Embedder.EmbedPassage(ctx, text)
}

func (f *fakeEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	f.mu.Lock()
	f.queries = append(f.queries, text)
	f.mu.Unlock()
	return f.vec(ctx, text)
}

func (f *fakeEmbedder) EmbedPassage(ctx context.Context, text string) ([]float32, error) {
	return f.vec(ctx, text)
}

func (f *fakeEmbedder) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, err := f.vec(ctx, t)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (f *fakeEmbedder) seenQueries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries)
}

func (f *fakeEmbedder) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
