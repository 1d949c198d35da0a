package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

// An embedder that is down (a provider's failure of the moment) or hangs
// does not fail recall: it answers from BM25 alone and says so, and for
// EmbedDownFor it does not ask the embedder again. Any other embedding
// error still fails the recall.
func TestRecallFallsBackToBM25WhenTheEmbedderIsDown(t *testing.T) {
	ctx := context.Background()
	who := memory.Agent("main")
	for _, tc := range []struct {
		name  string
		err   error
		delay time.Duration
	}{
		{"unavailable", schemas.Unavailable(errors.New("HTTP 503")), 0},
		{"hanging", nil, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			emb := &fakeEmbedder{Embedder: localEmbedder(t)}
			e := newEngine(t, setup{emb: emb})
			want := mustStore(t, e, who, memory.StoreRequest{Text: "The staging database password rotates every Tuesday"})
			mustStore(t, e, who, memory.StoreRequest{Text: "Lunch is at noon in the blue room"})
			emb.err, emb.delay = tc.err, tc.delay
			calls := emb.callCount()
			rctx, cancel := context.WithTimeout(ctx, 4*time.Second)
			defer cancel()
			start := time.Now()
			res, err := e.Recall(rctx, who, "when does the staging database password rotate", memory.RecallOptions{})
			if err != nil {
				t.Fatalf("recall with the embedder down: %v", err)
			}
			if res.Mode != retrieve.ModeBM25 || !strings.Contains(res.Fallback, "embedding unavailable") {
				t.Fatalf("mode %q fallback %q, want bm25 and a reason", res.Mode, res.Fallback)
			}
			if len(res.Candidates) == 0 || res.Candidates[0].Memory.ID != want.ID {
				t.Fatalf("BM25 fallback answered %v, want %s first", ids(res.Candidates), want.ID)
			}
			if tc.delay > 0 && time.Since(start) > 3*time.Second {
				t.Fatalf("a hanging embedder held recall %s (half the caller's 4 s deadline at most)", time.Since(start))
			}
			// Stats, which OpenClaw's memory status shows, says so.
			if st, err := e.Stats(ctx, who, ""); err != nil || st.EmbedderOK || !strings.Contains(st.EmbedderError, "BM25 alone") {
				t.Fatalf("stats with the embedder down: ok=%v %q (%v)", st.EmbedderOK, st.EmbedderError, err)
			}
			// Within EmbedDownFor the embedder is not asked again.
			res, err = e.Recall(ctx, who, "blue room lunch", memory.RecallOptions{})
			if err != nil || res.Mode != retrieve.ModeBM25 {
				t.Fatalf("second recall: %v mode %q", err, res.Mode)
			}
			if got := emb.callCount() - calls; got != 1 {
				t.Fatalf("embedder asked %d times in two recalls, want 1", got)
			}
		})
	}
	t.Run("other errors fail", func(t *testing.T) {
		emb := &fakeEmbedder{Embedder: localEmbedder(t)}
		e := newEngine(t, setup{emb: emb})
		mustStore(t, e, who, memory.StoreRequest{Text: "The staging database password rotates every Tuesday"})
		emb.err = errors.New("model refused the input (HTTP 400)")
		if _, err := e.Recall(ctx, who, "staging password", memory.RecallOptions{}); err == nil {
			t.Fatal("a non-provider embedding error did not fail recall")
		}
	})
}
