package stage

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/workpool"
)

// settleParallelism bounds a batch's concurrent settles (acks, naks, dead
// letters), each a server round trip.
const settleParallelism = 16

// batchRun is a batch in flight: the messages still to handle, the
// outcome of each message, and its time limit and heartbeat.
type batchRun struct {
	start   time.Time
	ctx     context.Context
	cancel  context.CancelFunc
	stop    func() // the heartbeat
	live    []jetstream.Msg
	liveIdx []int
	results []string
}

// begin starts a batch: messages whose deliveries are used up go to the
// DLQ, and the rest are kept alive by a heartbeat until end.
func (s *Stage) begin(ctx context.Context, msgs []jetstream.Msg) *batchRun {
	b := &batchRun{start: time.Now(), results: make([]string, len(msgs))}
	for i, m := range msgs {
		md, err := m.Metadata()
		if err == nil && s.attempts(md) > s.Config.MaxDeliver {
			// Earlier attempts timed out or crashed without an answer.
			b.results[i] = s.deadLetter(ctx, m, fmt.Sprintf("no result after %d deliveries (handler timed out or crashed)", md.NumDelivered-1))
			continue
		}
		b.live = append(b.live, m)
		b.liveIdx = append(b.liveIdx, i)
	}
	b.ctx, b.cancel = context.WithTimeout(ctx, s.Config.MaxDuration)
	b.stop = s.heartbeat(b.live)
	return b
}

// end stops the batch's heartbeat and returns the function that settles
// it (acks, naks, dead letters) with errs, one per live message, and
// records its metrics.
func (b *batchRun) end(s *Stage, errs []error) (settle func()) {
	b.stop()
	b.cancel()
	ctx := context.WithoutCancel(b.ctx)
	if errs == nil {
		errs = make([]error, len(b.live))
	}
	return func() {
		// Each settle is a server round trip (DoubleAck waits for the
		// ack to be recorded); one after another they, not the handler,
		// would bound a stage's throughput.
		workpool.Run(settleParallelism, len(b.live), func(_, j int) { b.results[b.liveIdx[j]] = s.settle(ctx, b.live[j], errs[j]) })
		for _, r := range b.results {
			s.Metrics.Messages.WithLabelValues(s.label(), r).Inc()
		}
		s.Metrics.Duration.WithLabelValues(s.label()).Observe(time.Since(b.start).Seconds())
		// Progress is a message done with (acked, or dead-lettered): a
		// stage that only hands its batches back (not the writer, an
		// outage) moves nothing on.
		if slices.ContainsFunc(b.results, func(r string) bool { return r == "ok" || r == "dlq" }) {
			s.State.progress.Store(time.Now().UnixNano())
		}
	}
}

// safely runs a handler's phase for n messages, turning a panic into a
// retryable failure of each; a result of the wrong length panics.
func (s *Stage) safely(n int, fn func() []error) (errs []error) {
	defer func() {
		if r := recover(); r != nil {
			s.Log.Error("handler panic", "stage", s.Name, "panic", r)
			errs = make([]error, n)
			for i := range errs {
				errs[i] = fmt.Errorf("handler panic: %v", r)
			}
		}
	}()
	if n == 0 {
		return nil
	}
	errs = fn()
	if errs != nil && len(errs) != n {
		panic(fmt.Sprintf("stage %s: handler returned %d results for %d messages", s.Name, len(errs), n))
	}
	return errs
}
