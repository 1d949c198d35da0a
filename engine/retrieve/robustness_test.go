package retrieve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

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
