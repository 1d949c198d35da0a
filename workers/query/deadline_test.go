package query

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

func TestQueryContext(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "I prefer green tea over coffee in the afternoon"})

	r, d := queryOKReply[schemas.ContextDetails](t, nc, querySubj("main", "context"),
		schemas.ContextRequest{Prompt: "What do I prefer to drink in the afternoon, green tea or coffee?"})
	if d.Count != 1 || d.TimedOut || d.Skipped != "" || !strings.Contains(d.PrependContext, "<relevant-memories>") ||
		!strings.Contains(d.PrependContext, "green tea") || r.text() != d.PrependContext {
		t.Fatalf("context: %q %+v", r.text(), d)
	}
	r, d = queryOKReply[schemas.ContextDetails](t, nc, querySubj("main", "context"), schemas.ContextRequest{Prompt: "hi"})
	if d.Skipped == "" || d.PrependContext != "" || r.text() != "" {
		t.Fatalf("greeting: %q %+v", r.text(), d)
	}
	queryWantError(t, nc, querySubj("main", "context"), `{"prompt":"x","timeoutMs":-1}`, schemas.CodeInvalid)
}

// querySlowEmbedder stands for an embedding backend that hangs: query
// embeddings take delay whatever the context says.
type querySlowEmbedder struct {
	embed.Embedder
	delay   time.Duration
	release chan struct{}
}

func newQuerySlowEmbedder(t testing.TB, delay time.Duration) *querySlowEmbedder {
	e := &querySlowEmbedder{Embedder: queryLocalEmbedder(t), delay: delay, release: make(chan struct{})}
	// Let abandoned calls finish before the store closes.
	t.Cleanup(func() { close(e.release) })
	return e
}

func (e *querySlowEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	select {
	case <-time.After(e.delay):
	case <-e.release:
	}
	return e.Embedder.EmbedQuery(ctx, text)
}

func TestQueryContextDeadline(t *testing.T) {
	eng := queryTestEngine(t, newQuerySlowEmbedder(t, 3*time.Second))
	cfg := DefaultConfig()
	cfg.MaxContextTimeout = 400 * time.Millisecond
	nc, _ := queryStart(t, eng, cfg)
	prompt := "What do I prefer to drink in the afternoon, green tea or coffee?"
	for _, tc := range []struct {
		name      string
		timeoutMs int
		want      time.Duration
	}{
		{"default", 0, 400 * time.Millisecond}, // the default 1.5 s is clamped to the maximum
		{"requested", 150, 150 * time.Millisecond},
		{"clamped", 60_000, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, d := queryOKReply[schemas.ContextDetails](t, nc, querySubj("main", "context"), schemas.ContextRequest{Prompt: prompt, TimeoutMs: tc.timeoutMs})
			took := time.Since(start)
			if !d.TimedOut || d.PrependContext != "" {
				t.Fatalf("details %+v, want timedOut and no block", d)
			}
			// The embedder hangs for 3 s; the reply must not wait for it.
			if took < tc.want-50*time.Millisecond || took >= time.Second {
				t.Fatalf("reply after %v, want about %v and under 1 s", took, tc.want)
			}
		})
	}
}

func TestQueryDefaultContextDeadline(t *testing.T) {
	eng := queryTestEngine(t, newQuerySlowEmbedder(t, 3*time.Second))
	cfg := DefaultConfig()
	cfg.DefaultContextTimeout = 300 * time.Millisecond
	nc, _ := queryStart(t, eng, cfg)
	start := time.Now()
	_, d := queryOKReply[schemas.ContextDetails](t, nc, querySubj("main", "context"),
		schemas.ContextRequest{Prompt: "What did we decide about the staging database password last week?"})
	if took := time.Since(start); !d.TimedOut || took >= time.Second {
		t.Fatalf("timedOut=%v after %v; want a timed-out reply in < 1 s", d.TimedOut, took)
	}
}

// TestQuerySlowRequestsRunConcurrently: a hung recall holds one worker, not
// the endpoint, and not the service.
func TestQuerySlowRequestsRunConcurrently(t *testing.T) {
	const delay = 600 * time.Millisecond
	eng := queryTestEngine(t, newQuerySlowEmbedder(t, delay))
	nc, _ := queryStart(t, eng, DefaultConfig())
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			msg, err := nc.Request(querySubj("main", "recall"), []byte(`{"query":"tea"}`), 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			if strings.Contains(string(msg.Data), `"isError":true`) {
				t.Errorf("recall failed: %s", msg.Data)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	fast := time.Now()
	queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), nil)
	queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), nil)
	if took := time.Since(fast); took > delay/2 {
		t.Fatalf("stats and list took %v behind slow recalls", took)
	}
	wg.Wait()
	if took := time.Since(start); took > 2*delay {
		t.Fatalf("4 recalls of %v each took %v: they ran one after another", delay, took)
	}
}
