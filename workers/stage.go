package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/internal/workpool"
	"github.com/clawmem/clawmem/schemas"
)

// permanentError marks a failure no retry can fix (a malformed message);
// the stage dead-letters it at once.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// Permanent wraps err so the stage sends the message to the DLQ without
// retrying.
func Permanent(err error) error { return permanentError{err} }

// IsPermanent reports a Permanent error.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// StageConfig tunes a consuming stage.
type StageConfig struct {
	Batch       int           // messages handled together; default 64
	Linger      time.Duration // how long a partial batch waits for more; default 5 ms
	AckWait     time.Duration // default 30 s; heartbeats keep slow work alive
	MaxDeliver  int           // deliveries before a failing message goes to the DLQ; default 5
	Backoff     []time.Duration
	MaxDuration time.Duration // one batch's time limit; default 2 min
	// StallAfter is how long messages may wait without a batch of the
	// stage being settled before it counts as stalled; default 2×AckWait.
	StallAfter time.Duration
}

func (c StageConfig) withDefaults() StageConfig {
	if c.Batch <= 0 {
		c.Batch = 64
	}
	if c.Linger <= 0 {
		c.Linger = 5 * time.Millisecond
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if len(c.Backoff) == 0 {
		c.Backoff = []time.Duration{time.Second, 5 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = 2 * time.Minute
	}
	if c.StallAfter <= 0 {
		c.StallAfter = 2 * c.AckWait
	}
	return c
}

// batchHandler processes a batch and returns one error per message.
type batchHandler func(ctx context.Context, msgs []jetstream.Msg) []error

// prepareHandler processes a batch in two phases: it prepares the batch,
// which may run while the previous batch commits, and returns the commit,
// which runs after the previous batch's and returns one error per
// message. A nil commit means nothing is left to do and no error.
type prepareHandler func(ctx context.Context, msgs []jetstream.Msg) (commit func(ctx context.Context) []error)

// stage runs one durable pull consumer: it fetches batches, keeps them
// alive with InProgress while they are handled, acks what succeeded, naks
// with backoff what failed, and dead-letters what failed for good.
type stage struct {
	name string // the durable consumer's
	// kind names the stage in dead letters and metrics when several
	// consumers do one stage's work (the store's partitions); default name.
	kind     string
	js       jetstream.JetStream
	stream   string
	subjects []string
	cfg      StageConfig
	handle   batchHandler
	// prepare, when set instead of handle, pipelines the stage: batch
	// n+1 is fetched and prepared while batch n commits.
	prepare prepareHandler
	metrics *StageMetrics
	log     *slog.Logger
	// state is what this process knows of the consumer beyond one run.
	// A run makes its own unless given one that outlives it: the store
	// worker keeps one per partition, so a partition that changes hands
	// within the process keeps it. Loops of one consumer share it, and
	// one of them watches for stalls: the others are unwatched.
	state     *consumerState
	unwatched bool
	// probe, when set, asks the stage's provider whether it is up (a
	// request of its own, not a message's): a message that fails on a
	// provider that answers the probe is the message's fault, and counts.
	probe func(ctx context.Context) error
}

// consumerState is a consumer's, kept by this process across its stage's
// runs.
type consumerState struct {
	// uncounted counts, by stream sequence, the deliveries of a message
	// that were not its fault: they ended in a provider's outage, or the
	// message was handed back because the stage stopped or lost its
	// partition, or its ack was lost. They do not count towards
	// MaxDeliver.
	uncounted sync.Map // uint64 -> int
	// progress is when a run last acked or dead-lettered a message, or
	// found nothing waiting; stopped is when a run last stopped (unix
	// nanoseconds).
	progress, stopped atomic.Int64
}

// StageMetrics are the per-stage Prometheus series.
type StageMetrics struct {
	Messages *prometheus.CounterVec   // stage, result: ok, retry, unavailable, dlq
	Duration *prometheus.HistogramVec // stage
	// Stalled is 1 while a stage's consumer (stage: its name, store-3)
	// has messages waiting and the stage settled none for StallAfter.
	Stalled *prometheus.GaugeVec
}

// NewStageMetrics registers the stage series with reg (nil: unregistered),
// reusing the ones registered before.
func NewStageMetrics(reg prometheus.Registerer) *StageMetrics {
	m := &StageMetrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "stage_messages_total",
			Help: "Messages handled by each pipeline stage, by result."}, []string{"stage", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "clawmem", Name: "stage_batch_seconds",
			Help: "Time to handle one batch, per stage.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"stage"}),
		Stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "clawmem", Name: "stage_stalled",
			Help: "1 while a stage's consumer has messages waiting and the stage has settled none for longer than its bound " +
				"(twice its ack wait)."}, []string{"stage"}),
	}
	m.Messages = promreg.Register(reg, m.Messages, nil, "stage")
	m.Duration = promreg.Register(reg, m.Duration, nil, "stage")
	m.Stalled = promreg.Register(reg, m.Stalled, nil, "stage")
	return m
}

func (s *stage) label() string {
	if s.kind != "" {
		return s.kind
	}
	return s.name
}

func (s *stage) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        s.name,
		FilterSubjects: s.subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.cfg.AckWait,
		// Deliveries are counted here, not by the server: a message whose
		// attempts are used up goes to the DLQ instead of silently stopping.
		MaxDeliver:    -1,
		MaxAckPending: s.cfg.Batch * 4,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// pullExpiry is how long each of a stage's pull requests stays open.
const pullExpiry = 5 * time.Second

// run consumes until ctx ends, then finishes the batch in hand.
func (s *stage) run(ctx context.Context) error {
	s.cfg = s.cfg.withDefaults()
	if s.state == nil {
		s.state = new(consumerState)
	}
	// A stage restarted soon after it stopped (its partition lost and
	// taken back) has not moved meanwhile: its stall goes on counting.
	if stopped := s.state.stopped.Load(); stopped == 0 || time.Since(time.Unix(0, stopped)) > s.cfg.StallAfter {
		s.state.progress.Store(time.Now().UnixNano())
	}
	defer func() { s.state.stopped.Store(time.Now().UnixNano()) }()
	cons, err := jsretry.Do(ctx, s.log, s.name+" consumer", func(ctx context.Context) (jetstream.Consumer, error) {
		return s.js.CreateOrUpdateConsumer(ctx, s.stream, s.consumerConfig())
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: consumer: %w", s.name, err)
	}
	// A pull request the server no longer holds while the client counts
	// it open (seen under load: the consumer waiting on no request, the
	// iterator waiting for its answer) is noticed only by missed
	// heartbeats, twice the heartbeat after the last message: with the
	// default 30 s expiry that stalled a stage for 30 s. A short expiry
	// bounds the stall to pullExpiry, and costs a request every few
	// seconds while idle.
	it, err := cons.Messages(jetstream.PullMaxMessages(s.cfg.Batch*2), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return fmt.Errorf("%s: consume: %w", s.name, err)
	}
	defer s.handBack(it)
	s.log.Info("stage started", "stage", s.name, "stream", s.stream)
	if !s.unwatched {
		watchCtx, stopWatch := context.WithCancel(ctx)
		var watching sync.WaitGroup
		watching.Go(func() { s.watch(watchCtx, cons) })
		defer watching.Wait()
		defer stopWatch()
	}
	// A batch's acks go to the server while the next batch is handled:
	// each is a round trip, and under a busy CPU the server's answers
	// come late, which would otherwise stall the stage. One batch is
	// settled at a time, and all of it before the stage returns.
	var settling sync.WaitGroup
	defer settling.Wait()
	settleNext := func(settle func()) {
		settling.Wait()
		settling.Go(settle)
	}
	// A pipelined stage hands each prepared batch to its committer, which
	// commits them one at a time in order: the next batch is fetched and
	// prepared meanwhile, one batch ahead at most.
	var commits chan prepared
	if s.prepare != nil {
		commits = make(chan prepared)
		var committer sync.WaitGroup
		committer.Go(func() {
			for b := range commits {
				settleNext(b.run.end(s, b.commit()))
			}
		})
		defer committer.Wait()
		defer close(commits)
	}
	for {
		msgs, ok := s.fetch(ctx, it)
		if !ok {
			return nil
		}
		// In-flight work finishes even when shutdown starts: its acks must
		// reach the server or it would all be redelivered.
		b := s.begin(context.WithoutCancel(ctx), msgs)
		if s.prepare == nil {
			settleNext(b.end(s, s.waitOut(ctx, b)))
			continue
		}
		var commit func(context.Context) []error
		errs := s.safely(len(b.live), func() []error {
			commit = s.prepare(b.ctx, b.live)
			return nil
		})
		commits <- prepared{run: b, commit: func() []error {
			if errs != nil || commit == nil {
				return errs
			}
			return s.safely(len(b.live), func() []error { return commit(b.ctx) })
		}}
	}
}

// prepared is a pipelined stage's batch waiting for its commit.
type prepared struct {
	run    *batchRun
	commit func() []error
}

// fetch waits for a message, then takes more for up to the linger time,
// up to a batch. false: the stage is stopping.
func (s *stage) fetch(ctx context.Context, it jetstream.MessagesContext) ([]jetstream.Msg, bool) {
	for {
		if ctx.Err() != nil {
			return nil, false
		}
		first, err := it.Next(jetstream.NextContext(ctx))
		if err == nil && ctx.Err() != nil {
			// Next picks at random between a buffered message and the
			// stop: a stopping stage takes no new work, and hands this
			// one back at once, uncounted.
			s.notCounted(first)
			_ = first.Nak()
			return nil, false
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil, false
			}
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				// The pull was lost (see pullExpiry); the iterator
				// asks again on the next call.
				s.log.Debug("pull lost; asking again", "stage", s.name)
				continue
			}
			s.log.Warn("fetch failed", "stage", s.name, "err", err)
			select {
			case <-ctx.Done():
				return nil, false
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		msgs := []jetstream.Msg{first}
		deadline := time.Now().Add(s.cfg.Linger)
		for len(msgs) < s.cfg.Batch {
			wait := time.Until(deadline)
			if wait <= time.Millisecond {
				break
			}
			m, err := it.Next(jetstream.NextMaxWait(wait))
			if err != nil {
				break
			}
			msgs = append(msgs, m)
		}
		return msgs, true
	}
}

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
func (s *stage) begin(ctx context.Context, msgs []jetstream.Msg) *batchRun {
	b := &batchRun{start: time.Now(), results: make([]string, len(msgs))}
	for i, m := range msgs {
		md, err := m.Metadata()
		if err == nil && s.attempts(md) > s.cfg.MaxDeliver {
			// Earlier attempts timed out or crashed without an answer.
			b.results[i] = s.deadLetter(ctx, m, fmt.Sprintf("no result after %d deliveries (handler timed out or crashed)", md.NumDelivered-1))
			continue
		}
		b.live = append(b.live, m)
		b.liveIdx = append(b.liveIdx, i)
	}
	b.ctx, b.cancel = context.WithTimeout(ctx, s.cfg.MaxDuration)
	b.stop = s.heartbeat(b.live)
	return b
}

// end stops the batch's heartbeat and returns the function that settles
// it (acks, naks, dead letters) with errs, one per live message, and
// records its metrics.
func (b *batchRun) end(s *stage, errs []error) (settle func()) {
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
		workpool.Run(emitParallelism, len(b.live), func(_, j int) { b.results[b.liveIdx[j]] = s.settle(ctx, b.live[j], errs[j]) })
		for _, r := range b.results {
			s.metrics.Messages.WithLabelValues(s.label(), r).Inc()
		}
		s.metrics.Duration.WithLabelValues(s.label()).Observe(time.Since(b.start).Seconds())
		// Progress is a message done with (acked, or dead-lettered): a
		// stage that only hands its batches back (not the writer, an
		// outage) moves nothing on.
		if slices.ContainsFunc(b.results, func(r string) bool { return r == "ok" || r == "dlq" }) {
			s.state.progress.Store(time.Now().UnixNano())
		}
	}
}

// handBack stops consuming and hands the messages fetched but not yet
// handled back at once (a nak), rather than leaving them to wait out
// AckWait: a partition's next writer takes them, and the delivery does
// not count towards MaxDeliver.
func (s *stage) handBack(it jetstream.MessagesContext) {
	it.Drain()
	n := 0
	for {
		m, err := it.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			break
		}
		s.notCounted(m)
		_ = m.Nak()
		n++
	}
	if n > 0 {
		s.log.Info("stage stopped; handed back the messages it had not handled", "stage", s.name, "messages", n)
	}
}

// notCounted records a delivery of m that does not count towards
// MaxDeliver, and returns how many of its deliveries do not.
func (s *stage) notCounted(m jetstream.Msg) int {
	md, err := m.Metadata()
	if err != nil {
		return 1
	}
	v, _ := s.state.uncounted.Load(md.Sequence.Stream)
	n, _ := v.(int)
	n++
	s.state.uncounted.Store(md.Sequence.Stream, n)
	return n
}

// watch notices a stalled stage: every quarter of StallAfter it asks the
// server what its consumer holds, and when messages wait (undelivered or
// unacknowledged) while none was acked or dead-lettered for StallAfter, it says so
// in the log and in the stage_stalled gauge, until the stage moves again.
func (s *stage) watch(ctx context.Context, cons jetstream.Consumer) {
	gauge := s.metrics.Stalled.WithLabelValues(s.name)
	gauge.Set(0)
	// The stage's consumer may be run by another process next: its
	// gauge here would be stale.
	defer s.metrics.Stalled.DeleteLabelValues(s.name)
	t := time.NewTicker(s.cfg.StallAfter / 4)
	defer t.Stop()
	stalled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, cancel := context.WithTimeout(ctx, s.cfg.StallAfter/4)
		info, err := cons.Info(ictx)
		cancel()
		if err != nil {
			continue // the server cannot say now; the next look will
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			s.state.progress.Store(time.Now().UnixNano())
		}
		idle := time.Since(time.Unix(0, s.state.progress.Load()))
		switch {
		case idle > s.cfg.StallAfter && !stalled:
			stalled = true
			gauge.Set(1)
			s.log.Warn("stage stalled: messages wait and none was settled", "stage", s.name, "for", idle.Round(time.Second),
				"pending", info.NumPending, "handling", info.NumAckPending, "redelivered", info.NumRedelivered)
		case idle <= s.cfg.StallAfter && stalled:
			stalled = false
			gauge.Set(0)
			s.log.Info("stage moving again", "stage", s.name)
		}
	}
}

// safely runs a handler's phase for n messages, turning a panic into a
// retryable failure of each; a result of the wrong length panics.
func (s *stage) safely(n int, fn func() []error) (errs []error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panic", "stage", s.name, "panic", r)
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
		panic(fmt.Sprintf("stage %s: handler returned %d results for %d messages", s.name, len(errs), n))
	}
	return errs
}

// heartbeat tells the server the batch is still being worked on, so a slow
// LLM or embedding call is not mistaken for a dead worker.
func (s *stage) heartbeat(msgs []jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// Provider outages (errors wrapping schemas.ErrUnavailable) are waited
// out: a batch is held and retried in place for up to MaxHold, then handed
// back with a delay of up to UnavailableRetry, and neither counts towards
// MaxDeliver while the message is younger than MaxOutage and the stage's
// probe (if any) says the provider is down.
const (
	UnavailableRetry = 10 * time.Second
	MaxHold          = 2 * time.Minute
	MaxOutage        = 30 * time.Minute
)

// providerUp asks the stage's probe; with none, the provider is taken to
// be down (the failure said so).
func (s *stage) providerUp(ctx context.Context) bool {
	if s.probe == nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return s.probe(pctx) == nil
}

// attempts is a message's deliveries that count towards MaxDeliver: all
// but those that ended in a provider's outage (as this process saw them).
func (s *stage) attempts(md *jetstream.MsgMetadata) int {
	v, _ := s.state.uncounted.Load(md.Sequence.Stream)
	n, _ := v.(int)
	return int(md.NumDelivered) - n
}

// unavailable reports a failure that is a provider's outage.
func unavailable(err error) bool {
	return err != nil && errors.Is(err, schemas.ErrUnavailable) && !IsPermanent(err)
}

// waitOut runs a one-phase handler on a batch and, while some of its
// messages fail on a provider's outage, runs it again on those after a
// growing wait (up to UnavailableRetry), holding them (the heartbeat keeps
// them in progress) rather than handing them back: an outage costs no
// deliveries and keeps the messages' order. It stops waiting when ctx
// (the stage's run) ends; what still failed is then settled as usual.
func (s *stage) waitOut(ctx context.Context, b *batchRun) []error {
	errs := s.safely(len(b.live), func() []error { return s.handle(b.ctx, b.live) })
	held := time.Now()
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, UnavailableRetry) {
		var idx []int
		for i, err := range errs {
			if unavailable(err) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 || time.Since(held) > MaxHold {
			return errs
		}
		if s.providerUp(ctx) {
			// The provider answers: these messages fail on their own
			// account, and their deliveries count.
			for _, i := range idx {
				errs[i] = fmt.Errorf("%s (while the provider answered a probe)", errs[i])
			}
			return errs
		}
		s.log.Warn("provider unavailable; holding the batch", "stage", s.name, "messages", len(idx), "retryIn", wait, "err", errs[idx[0]])
		select {
		case <-ctx.Done():
			return errs
		case <-time.After(wait):
		}
		again := make([]jetstream.Msg, len(idx))
		for j, i := range idx {
			again[j] = b.live[i]
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.MaxDuration)
		res := s.safely(len(again), func() []error { return s.handle(actx, again) })
		cancel()
		if res == nil {
			res = make([]error, len(again))
		}
		if errs == nil {
			errs = make([]error, len(b.live))
		}
		for j, i := range idx {
			errs[i] = res[j]
		}
	}
}

// settle acks, retries or dead-letters one message and names the outcome.
func (s *stage) settle(ctx context.Context, m jetstream.Msg, err error) string {
	if err == nil {
		if aerr := m.DoubleAck(ctx); aerr != nil {
			// The work is done: its redelivery finds it so, and is
			// not the message's failure.
			s.notCounted(m)
			s.log.Warn("ack failed; the message will be redelivered", "stage", s.name, "err", aerr)
		} else if md, merr := m.Metadata(); merr == nil {
			s.state.uncounted.Delete(md.Sequence.Stream)
		}
		return "ok"
	}
	if errors.Is(err, ErrNotWriter) {
		// Not this message's failure: the partition changed hands. Its
		// next writer takes it at once, and the attempt is not counted
		// towards the DLQ.
		s.notCounted(m)
		_ = m.Nak()
		return "retry"
	}
	md, merr := m.Metadata()
	attempts := 1
	if merr == nil {
		attempts = s.attempts(md)
	}
	if unavailable(err) && (merr != nil || time.Since(md.Timestamp) < MaxOutage) && !s.providerUp(ctx) {
		// A provider's outage is not the message's fault: the delivery is
		// not counted, and the message does not go to the DLQ for it
		// (until it is MaxOutage old).
		n := s.notCounted(m)
		delay := min(s.cfg.Backoff[min(n-1, len(s.cfg.Backoff)-1)], UnavailableRetry)
		s.log.Warn("provider unavailable; will retry", "stage", s.name, "retryIn", delay, "err", err)
		_ = m.NakWithDelay(delay)
		return "unavailable"
	}
	if IsPermanent(err) || attempts >= s.cfg.MaxDeliver {
		return s.deadLetter(ctx, m, err.Error())
	}
	delay := s.cfg.Backoff[min(attempts-1, len(s.cfg.Backoff)-1)]
	s.log.Warn("handling failed; will retry", "stage", s.name, "attempt", attempts, "retryIn", delay, "err", err)
	_ = m.NakWithDelay(delay)
	return "retry"
}

// deadLetter copies m to the DLQ with headers that say where, why and how
// often it failed, then acks it so it leaves the work stream. If the copy
// cannot be written the message is naked instead: it is never dropped.
func (s *stage) deadLetter(ctx context.Context, m jetstream.Msg, reason string) string {
	h := nats.Header{}
	for k, v := range m.Headers() {
		// The Msg-Id would be deduplicated against the original's, and a
		// publisher's expectations (Nats-Expected-Stream: the events
		// stream) make the DLQ refuse the copy.
		if k != jetstream.MsgIDHeader && !strings.HasPrefix(k, "Nats-Expected-") {
			h[k] = v
		}
	}
	attempts := "1"
	if md, err := m.Metadata(); err == nil {
		attempts = strconv.Itoa(s.attempts(md))
		defer s.state.uncounted.Delete(md.Sequence.Stream)
		h.Set(schemas.HeaderDLQStream, md.Stream)
		h.Set(schemas.HeaderDLQSequence, strconv.FormatUint(md.Sequence.Stream, 10))
	}
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	host, _ := os.Hostname()
	h.Set(schemas.HeaderDLQStage, s.label())
	h.Set(schemas.HeaderDLQReason, reason)
	h.Set(schemas.HeaderDLQAttempts, attempts)
	h.Set(schemas.HeaderDLQSubject, m.Subject())
	h.Set(schemas.HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	h.Set(schemas.HeaderDLQWorker, fmt.Sprintf("%s/%d", host, os.Getpid()))
	dlq := &nats.Msg{Subject: schemas.DLQSubjectFor(s.label(), m.Subject()), Data: m.Data(), Header: h}
	if _, err := s.js.PublishMsg(ctx, dlq); err != nil {
		s.log.Error("dead-letter failed; keeping the message", "stage", s.name, "err", err)
		_ = m.NakWithDelay(s.cfg.Backoff[len(s.cfg.Backoff)-1])
		return "retry"
	}
	s.log.Warn("message dead-lettered", "stage", s.name, "subject", m.Subject(), "attempts", attempts, "reason", reason)
	if err := m.DoubleAck(ctx); err != nil {
		s.log.Warn("ack after dead-letter failed", "stage", s.name, "err", err)
	}
	return "dlq"
}
