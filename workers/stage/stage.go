// Package stage runs the pipeline's consuming stages: a durable JetStream
// pull consumer whose batches are kept alive while they are handled,
// acknowledged when they succeed, retried with backoff when they fail, held
// through a provider's outage, and dead-lettered when they fail for good.
// Capture, the store worker and the distill worker are each a Stage with
// their own handler.
package stage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/jsretry"
)

// BatchHandler processes a batch and returns one error per message.
type BatchHandler func(ctx context.Context, msgs []jetstream.Msg) []error

// PrepareHandler processes a batch in two phases: it prepares the batch,
// which may run while the previous batch commits, and returns the commit,
// which runs after the previous batch's and returns one error per
// message. A nil commit means nothing is left to do and no error.
type PrepareHandler func(ctx context.Context, msgs []jetstream.Msg) (commit func(ctx context.Context) []error)

// Stage runs one durable pull consumer: it fetches batches, keeps them
// alive with InProgress while they are handled, acks what succeeded, naks
// with backoff what failed, and dead-letters what failed for good.
type Stage struct {
	Name string // the durable consumer's
	// Kind names the stage in dead letters and metrics when several
	// consumers do one stage's work (the store's partitions); default Name.
	Kind string
	// Partition marks one partition's consumer of a stage split over
	// partitions: its start is logged at Debug, since the writer logs the
	// partitions it takes and a node runs one such consumer per partition.
	Partition bool
	JS        jetstream.JetStream
	Stream    string
	Subjects  []string
	// Config is the stage's tuning; Run fills in its defaults.
	Config Config
	Handle BatchHandler
	// Prepare, when set instead of Handle, pipelines the stage: batch
	// n+1 is fetched and prepared while batch n commits.
	Prepare PrepareHandler
	Metrics *Metrics
	Log     *slog.Logger
	// State is what this process knows of the consumer beyond one run.
	// A run makes its own unless given one that outlives it: the store
	// worker keeps one per partition, so a partition that changes hands
	// within the process keeps it. Loops of one consumer share it, and
	// one of them watches for stalls: the others are Unwatched.
	State     *State
	Unwatched bool
	// Probe, when set, asks the stage's provider whether it is up (a
	// request of its own, not a message's): a message that fails on a
	// provider that answers the probe is the message's fault, and counts.
	Probe func(ctx context.Context) error
}

// State is a consumer's, kept by this process across its stage's runs.
// The zero State is ready to use.
type State struct {
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

func (s *Stage) label() string {
	if s.Kind != "" {
		return s.Kind
	}
	return s.Name
}

func (s *Stage) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        s.Name,
		FilterSubjects: s.Subjects,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        s.Config.AckWait,
		// Deliveries are counted here, not by the server: a message whose
		// attempts are used up goes to the DLQ instead of silently stopping.
		MaxDeliver:    -1,
		MaxAckPending: s.Config.Batch * 4,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	}
}

// pullExpiry is how long each of a stage's pull requests stays open.
const pullExpiry = 5 * time.Second

// Run consumes until ctx ends, then finishes the batch in hand.
func (s *Stage) Run(ctx context.Context) error {
	s.Config = s.Config.withDefaults()
	if s.State == nil {
		s.State = new(State)
	}
	// A stage restarted soon after it stopped (its partition lost and
	// taken back) has not moved meanwhile: its stall goes on counting.
	if stopped := s.State.stopped.Load(); stopped == 0 || time.Since(time.Unix(0, stopped)) > s.Config.StallAfter {
		s.State.progress.Store(time.Now().UnixNano())
	}
	defer func() { s.State.stopped.Store(time.Now().UnixNano()) }()
	cons, err := jsretry.Do(ctx, s.Log, s.Name+" consumer", func(ctx context.Context) (jetstream.Consumer, error) {
		return s.JS.CreateOrUpdateConsumer(ctx, s.Stream, s.consumerConfig())
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: consumer: %w", s.Name, err)
	}
	// A pull request the server no longer holds while the client counts
	// it open (seen under load: the consumer waiting on no request, the
	// iterator waiting for its answer) is noticed only by missed
	// heartbeats, twice the heartbeat after the last message: with the
	// default 30 s expiry that stalled a stage for 30 s. A short expiry
	// bounds the stall to pullExpiry, and costs a request every few
	// seconds while idle.
	it, err := cons.Messages(jetstream.PullMaxMessages(s.Config.Batch*2), jetstream.PullExpiry(pullExpiry))
	if err != nil {
		return fmt.Errorf("%s: consume: %w", s.Name, err)
	}
	defer s.handBack(it)
	level := slog.LevelInfo
	if s.Partition {
		level = slog.LevelDebug
	}
	s.Log.Log(ctx, level, "stage started", "stage", s.Name, "stream", s.Stream)
	if !s.Unwatched {
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
	if s.Prepare != nil {
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
		if s.Prepare == nil {
			settleNext(b.end(s, s.waitOut(ctx, b)))
			continue
		}
		var commit func(context.Context) []error
		errs := s.safely(len(b.live), func() []error {
			commit = s.Prepare(b.ctx, b.live)
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
func (s *Stage) fetch(ctx context.Context, it jetstream.MessagesContext) ([]jetstream.Msg, bool) {
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
				s.Log.Debug("pull lost; asking again", "stage", s.Name)
				continue
			}
			s.Log.Warn("fetch failed", "stage", s.Name, "err", err)
			select {
			case <-ctx.Done():
				return nil, false
			case <-time.After(200 * time.Millisecond):
			}
			continue
		}
		msgs := []jetstream.Msg{first}
		deadline := time.Now().Add(s.Config.Linger)
		for len(msgs) < s.Config.Batch {
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
