package memlog

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/schemas"
)

// Share is one writer's share of the partitions. Every partition has a
// lease (schemas.LeaseKey); each writer also renews a presence key, and
// from the writers present each aims at an even share, ceil(partitions /
// writers): it takes free partitions while it holds fewer, and gives the
// ones beyond it up while it holds more. A writer that dies stops renewing
// both, so after the TTL the others count one writer less and take its
// partitions over.
type Share struct {
	kv         jetstream.KeyValue
	id         string
	partitions int
	ttl        time.Duration
	log        *slog.Logger
	// Take prepares a partition just taken (its lease held), before its
	// work starts: a writer catches up with the log here, so that it writes
	// on top of everything the partition's previous writer logged.
	Take func(ctx context.Context, partition int) error
	// Work runs a held partition's work until ctx ends (the partition is
	// given up, or its lease lost); an error gives the partition up.
	Work func(ctx context.Context, partition int) error
	// Give, after a partition's work stopped and before its lease is
	// released, makes what it wrote durable (the log's publish), so the
	// next writer takes it over with every change in the log.
	Give func(ctx context.Context, partition int) error

	mu      sync.Mutex
	held    map[int]*heldPartition
	writers map[string]time.Time // presence keys seen, when last renewed
	round   chan struct{}        // closed and replaced after each round
}

type heldPartition struct {
	lease  *Lease
	cancel context.CancelFunc
	done   chan error
}

// NewShare is writer id's share of partitions leases in kv, whose TTL is
// ttl.
func NewShare(kv jetstream.KeyValue, id string, partitions int, ttl time.Duration, log *slog.Logger) *Share {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Share{kv: kv, id: id, partitions: max(partitions, 1), ttl: ttl, log: log,
		held: map[int]*heldPartition{}, writers: map[string]time.Time{}, round: make(chan struct{})}
}

// Holds reports whether this writer holds partition now.
func (s *Share) Holds(partition int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[partition]
	return ok
}

// Sure reports whether this writer surely still holds partition: its
// lease renewed recently enough that no one else can have it.
func (s *Share) Sure(partition int) bool {
	s.mu.Lock()
	h, ok := s.held[partition]
	s.mu.Unlock()
	return ok && h.lease.Held()
}

// HoldsScope reports whether this writer holds the partition of scope.
func (s *Share) HoldsScope(scope string) bool {
	return s.Holds(schemas.ScopePartition(scope, s.partitions))
}

// Held lists the partitions held, in order.
func (s *Share) Held() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for p := range s.held {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Rounds is closed after the next round of taking and giving up.
func (s *Share) Rounds() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.round
}

// watch watches the writers' presences. While a node is down the watch's
// consumer may not be created for a while (its request times out): that
// is waited out rather than stopping the node.
func (s *Share) watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	return jsretry.Open(ctx, s.log, "writers' presence", func(ctx context.Context) (jetstream.KeyWatcher, error) {
		return s.kv.Watch(ctx, schemas.PresencePrefix+".*")
	})
}

// quietRounds is how many rounds that renewed this writer's presence a
// watch may report nothing before it is taken for stale: a TTL's worth.
// Sooner, a watch that only lags under load (a CI machine running a
// race-built suite) is made again, and while it is the rounds wait.
const quietRounds = 6

// Run shares the partitions out until ctx ends, then stops every held
// partition's work and releases its lease, so another writer takes over
// at once rather than after the TTL.
//
// The presence watch is watched itself: it ends when its consumer is lost
// and nats.go cannot make it again, and after a server restart it may go
// quiet for up to 20 s before nats.go notices missed heartbeats, while
// other writers come and go unseen. Each round renews this writer's own
// presence, which a working watch reports, so a watch that reports
// nothing for rounds is stale. Either way the presences are watched
// again, after a pause that grows while watches keep failing at once.
func (s *Share) Run(ctx context.Context) error {
	watch, err := s.watch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("writers' presence: %w", err)
	}
	defer func() {
		if watch != nil {
			_ = watch.Stop()
		}
	}()
	defer s.giveAll(context.WithoutCancel(ctx))
	_ = s.kv.Delete(ctx, schemas.PresenceKey(s.id)) // a presence left by an earlier life
	every := s.ttl / 6
	t := time.NewTicker(every)
	defer t.Stop()
	pause := jsretry.Backoff.First
	quiet := 0 // rounds that renewed this writer's presence since the watch last reported
	// again stops the watch and, after pause, watches the presences anew.
	again := func(why string) error {
		s.log.Warn("writers' presence: watching again", "why", why, "in", pause)
		_ = watch.Stop()
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		pause = min(pause*2, jsretry.Backoff.Max)
		quiet = 0
		if watch, err = s.watch(ctx); err != nil && ctx.Err() == nil {
			return fmt.Errorf("writers' presence: %w", err)
		}
		return nil
	}
	for first := true; ; first = false {
		if s.balance(ctx, first) {
			quiet++
		}
		s.mu.Lock()
		close(s.round)
		s.round = make(chan struct{})
		s.mu.Unlock()
		if quiet > quietRounds {
			if err := again("the watch reports nothing, not even this writer's renewals"); err != nil || ctx.Err() != nil {
				return err
			}
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return nil
			case e, ok := <-watch.Updates():
				if !ok {
					if err := again("the watch ended"); err != nil || ctx.Err() != nil {
						return err
					}
					continue
				}
				quiet = 0
				s.seen(e)
			case <-t.C:
				waiting = false
				if quiet == 0 {
					pause = jsretry.Backoff.First
				}
			}
		}
	}
}

// seen records a presence key's update (nil: the initial values are in).
func (s *Share) seen(e jetstream.KeyValueEntry) {
	if e == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Operation() == jetstream.KeyValuePut {
		s.writers[e.Key()] = time.Now()
	} else {
		delete(s.writers, e.Key())
	}
}

// present counts the writers whose presence was renewed within the TTL,
// this one included.
func (s *Share) present() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 1
	for k, at := range s.writers {
		if k != schemas.PresenceKey(s.id) && time.Since(at) < s.ttl {
			n++
		}
	}
	return n
}

// balance renews this writer's presence, reaps partitions whose work
// ended, then takes or gives partitions up towards an even share. It
// reports whether the presence was renewed.
//
// The first round takes every partition on a single node: its partitions
// are logged in one line, each at Debug. Later a partition taken or given
// up is one moving between writers, worth its own line.
func (s *Share) balance(ctx context.Context, first bool) bool {
	rctx, cancel := context.WithTimeout(ctx, s.ttl/3)
	_, err := s.kv.PutString(rctx, schemas.PresenceKey(s.id), time.Now().UTC().Format(time.RFC3339Nano))
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("writers' presence not renewed", "err", err)
		}
		return false
	}
	for p, h := range s.snapshot() {
		select {
		case err := <-h.done:
			s.forget(p)
			h.lease.Release(context.WithoutCancel(ctx))
			if ctx.Err() == nil {
				s.log.Warn("writer: partition given up", "partition", p, "err", err)
			}
		default:
		}
	}
	writers := s.present()
	target := (s.partitions + writers - 1) / writers
	held := s.Held()
	for len(held) > target {
		// Give up the partitions farthest from where this writer starts.
		p := held[len(held)-1]
		held = held[:len(held)-1]
		s.give(ctx, p, slog.LevelInfo)
	}
	level := slog.LevelInfo
	if first {
		level = slog.LevelDebug
	}
	var taken []int
	for _, p := range s.order() {
		if len(held) >= target || ctx.Err() != nil {
			break
		}
		if s.Holds(p) {
			continue
		}
		if s.take(ctx, p, level) {
			held = append(held, p)
			taken = append(taken, p)
		}
	}
	if first && len(taken) > 0 {
		s.log.Info("writer: took partitions", "partitions", schemas.PartitionRanges(slices.Sorted(slices.Values(taken))), "of", s.partitions)
	}
	return true
}

// order is the partitions from this writer's own starting point, so that
// writers starting together reach for different ones.
func (s *Share) order() []int {
	h := fnv.New32a()
	h.Write([]byte(s.id))
	first := int(h.Sum32() % uint32(s.partitions))
	out := make([]int, s.partitions)
	for i := range out {
		out[i] = (first + i) % s.partitions
	}
	return out
}

// take acquires partition's lease if free, prepares it and starts its
// work, logging it at level.
func (s *Share) take(ctx context.Context, p int, level slog.Level) bool {
	lease := NewLease(s.kv, schemas.LeaseKey(p), s.id, s.ttl)
	ok, _, err := lease.TryAcquire(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("writer: partition lease", "partition", p, "err", err)
	}
	if !ok {
		return false
	}
	if s.Take != nil {
		if err := s.Take(ctx, p); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("writer: partition not taken", "partition", p, "err", err)
			}
			lease.Release(context.WithoutCancel(ctx))
			return false
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	h := &heldPartition{lease: lease, cancel: cancel, done: make(chan error, 1)}
	s.mu.Lock()
	s.held[p] = h
	s.mu.Unlock()
	go func() {
		errs := make(chan error, 2)
		go func() { errs <- lease.Keep(wctx) }()
		go func() {
			if s.Work == nil {
				<-wctx.Done()
				errs <- nil
				return
			}
			errs <- s.Work(wctx, p)
		}()
		err := <-errs // the first to end ends the other
		cancel()
		err = errors.Join(err, <-errs)
		h.done <- err
	}()
	s.log.Log(ctx, level, "writer: partition taken", "partition", p)
	return true
}

// give stops partition's work, makes its writes durable and releases its
// lease, logging it at level.
func (s *Share) give(ctx context.Context, p int, level slog.Level) {
	s.mu.Lock()
	h, ok := s.held[p]
	s.mu.Unlock()
	if !ok {
		return
	}
	h.cancel()
	<-h.done
	if s.Give != nil {
		gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.ttl)
		if err := s.Give(gctx, p); err != nil {
			s.log.Warn("writer: a given-up partition's last writes are not all in the log", "partition", p, "err", err)
		}
		cancel()
	}
	s.forget(p)
	h.lease.Release(context.WithoutCancel(ctx))
	s.log.Log(ctx, level, "writer: partition given up", "partition", p)
}

func (s *Share) giveAll(ctx context.Context) {
	// The presence goes first: the other writers then aim for every
	// partition and take each as soon as its lease is released, instead
	// of sharing with this one until its presence expires.
	rctx, cancel := context.WithTimeout(ctx, s.ttl)
	_ = s.kv.Delete(rctx, schemas.PresenceKey(s.id))
	cancel()
	held := s.Held()
	for _, p := range held {
		s.give(ctx, p, slog.LevelDebug)
	}
	if len(held) > 0 {
		s.log.Info("writer: gave up partitions", "partitions", schemas.PartitionRanges(held))
	}
}

func (s *Share) snapshot() map[int]*heldPartition {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[int]*heldPartition, len(s.held))
	for p, h := range s.held {
		out[p] = h
	}
	return out
}

func (s *Share) forget(p int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, p)
}
