package workers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
)

// A stage settles a batch while it handles the next, one batch at a time,
// and a stage told to stop returns only once the batch in hand is handled
// and every handled message is acknowledged: none is handled twice.
func TestStageSettlesEveryBatchBeforeItReturns(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	const n = 300
	var handled atomic.Int64
	var seen sync.Map
	var dup atomic.Bool
	runCtx, stop := context.WithCancel(ctx)
	s := &stage{name: "t", js: js, stream: "T", subjects: []string{"t.>"}, cfg: StageConfig{Batch: 16, AckWait: time.Second},
		metrics: NewStageMetrics(nil), log: slog.New(slog.DiscardHandler),
		handle: func(_ context.Context, msgs []jetstream.Msg) []error {
			for _, m := range msgs {
				if _, loaded := seen.LoadOrStore(string(m.Data()), true); loaded {
					dup.Store(true)
				}
			}
			time.Sleep(2 * time.Millisecond)
			if handled.Add(int64(len(msgs))) >= n/2 {
				stop() // mid-stream: the batch in hand must still be settled
			}
			return make([]error, len(msgs))
		}}
	for i := range n {
		if _, err := js.Publish(ctx, "t.x", fmt.Appendf(nil, "%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.run(runCtx); err != nil {
		t.Fatal(err)
	}
	info, err := js.Consumer(ctx, "T", "t")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := info.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every handled message is acknowledged (those fetched but not
	// handled are pending, and come again after the ack wait).
	if ci.AckFloor.Stream != uint64(handled.Load()) {
		t.Fatalf("after the stage returned: acked up to %d, %d handled", ci.AckFloor.Stream, handled.Load())
	}
	// A second run takes the rest, each message once.
	rest, stop2 := context.WithCancel(ctx)
	defer stop2()
	done := make(chan error, 1)
	s.handle = func(_ context.Context, msgs []jetstream.Msg) []error {
		for _, m := range msgs {
			if _, loaded := seen.LoadOrStore(string(m.Data()), true); loaded {
				dup.Store(true)
			}
		}
		if handled.Add(int64(len(msgs))) == n {
			stop2()
		}
		return make([]error, len(msgs))
	}
	go func() { done <- s.run(rest) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the second run handled %d of %d", handled.Load(), n)
	}
	if dup.Load() || handled.Load() != n {
		t.Fatalf("handled %d of %d, a duplicate: %v", handled.Load(), n, dup.Load())
	}
}
