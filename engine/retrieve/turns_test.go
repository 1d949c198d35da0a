package retrieve

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rerank"
)

// Retrievals take turns (WithConcurrency): at most n compute at once, a
// waiting one gives up when its context ends, and a cross-encoder's answer
// is awaited outside a turn.

// heldStore is a real store whose vector search waits for release, and
// which counts the searches in progress and the most there ever were.
// Embedding only engine.Store hides the store's optional searchers, so
// every retrieval searches through VectorSearch.
type heldStore struct {
	engine.Store
	release      chan struct{}
	inside, most atomic.Int32
	entered      chan struct{}
}

func newHeldStore(t *testing.T) *heldStore {
	return &heldStore{Store: seedStore(t, rerankMems...), release: make(chan struct{}),
		entered: make(chan struct{}, 64)}
}

func (h *heldStore) VectorSearch(ctx context.Context, q []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	n := h.inside.Add(1)
	defer h.inside.Add(-1)
	for m := h.most.Load(); n > m && !h.most.CompareAndSwap(m, n); m = h.most.Load() {
	}
	h.entered <- struct{}{}
	select {
	case <-h.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return h.Store.VectorSearch(ctx, q, o)
}

// wait receives from ch or fails the test after a generous while.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestRetrievalsTakeTurns(t *testing.T) {
	h := newHeldStore(t)
	r := newRetriever(t, h, cfgWith(RerankNone), WithConcurrency(2))
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := r.Retrieve(context.Background(), Query{Text: "home city", Vector: queryVec(), Scopes: engine.AllScopes()})
			errs <- err
		})
	}
	wait(t, h.entered, "the first search")
	wait(t, h.entered, "the second search")
	// Two are held inside their search; the other four must be waiting for
	// a turn, not searching. Give them time to get in if the gate let them.
	time.Sleep(100 * time.Millisecond)
	if got := h.most.Load(); got != 2 {
		t.Fatalf("%d searches at once with 2 turns", got)
	}
	close(h.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Retrieve: %v", err)
		}
	}
	if got := h.most.Load(); got != 2 {
		t.Fatalf("%d searches at once with 2 turns", got)
	}
	if len(r.slots) != 0 {
		t.Fatalf("%d turns still taken after every retrieval returned", len(r.slots))
	}
}

func TestRetrievalWaitingForTurnEndsWithContext(t *testing.T) {
	h := newHeldStore(t)
	r := newRetriever(t, h, cfgWith(RerankNone), WithConcurrency(1))
	first := make(chan error, 1)
	go func() {
		_, err := r.Retrieve(context.Background(), Query{Text: "home city", Vector: queryVec(), Scopes: engine.AllScopes()})
		first <- err
	}()
	wait(t, h.entered, "the first search")

	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := r.Retrieve(ctx, Query{Text: "home city", Vector: queryVec(), Scopes: engine.AllScopes()})
		second <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a retrieval cancelled while waiting returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a retrieval cancelled while waiting for its turn did not return")
	}
	if got := h.most.Load(); got != 1 {
		t.Fatalf("%d searches at once with 1 turn", got)
	}
	close(h.release)
	if err := <-first; err != nil {
		t.Fatalf("the first retrieval: %v", err)
	}
	// The cancelled one took no turn: the next retrieval gets one at once.
	res := retrieve(t, r, Query{Text: "home city"})
	if len(res.Candidates) == 0 {
		t.Fatal("no candidates after the cancelled wait")
	}
}

// While one retrieval waits for the cross-encoder, another computes: with
// a single turn, the second's search runs before the first's rerank
// returns.
func TestCrossEncoderAwaitedOutsideTurn(t *testing.T) {
	s := seedStore(t, rerankMems...)
	counted := &countingStore{Store: s}
	inRerank := make(chan struct{}, 8)
	answer := make(chan struct{})
	srv := newRerankServer(t, func(w http.ResponseWriter, r *http.Request, req jinaRequest) {
		inRerank <- struct{}{}
		select {
		case <-answer:
		case <-r.Context().Done():
			return
		}
		scoreByText(map[string]float64{"Alpha": 0.9})(w, r, req)
	})
	client, err := rerank.New(rerank.Config{Provider: "jina", Endpoint: srv.URL, APIKey: "k", Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := newRetriever(t, counted, cfgWith(RerankCrossEncoder, noBoost), WithReranker(client), WithConcurrency(1))
	results := make(chan Result, 2)
	for range 2 {
		go func() {
			res, err := r.Retrieve(context.Background(), Query{Text: "home city", Vector: queryVec(), Scopes: engine.AllScopes()})
			if err != nil {
				t.Errorf("Retrieve: %v", err)
			}
			results <- res
		}()
	}
	// Both searches finish and both reranks are called while the first
	// rerank has not answered: neither waits for a turn held across it.
	wait(t, inRerank, "the first rerank call")
	wait(t, inRerank, "the second rerank call")
	if got := counted.searches.Load(); got != 2 {
		t.Fatalf("%d searches ran, want 2", got)
	}
	close(answer)
	for range 2 {
		res := <-results
		if res.Rerank != RerankCrossEncoder || len(res.Candidates) == 0 {
			t.Fatalf("rerank %q with %d candidates, want cross-encoder results", res.Rerank, len(res.Candidates))
		}
	}
	if len(r.slots) != 0 {
		t.Fatalf("%d turns still taken after every retrieval returned", len(r.slots))
	}
}

// countingStore is a real store that counts vector searches.
type countingStore struct {
	engine.Store
	searches atomic.Int32
}

func (c *countingStore) VectorSearch(ctx context.Context, q []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	c.searches.Add(1)
	return c.Store.VectorSearch(ctx, q, o)
}
