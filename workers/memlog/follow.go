package memlog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/schemas"
)

// Store is a store built from the log.
type Store interface {
	engine.LogApplier
	Dimensions() int
}

// Follower applies the memory log to a store, in the log's order, each
// fetched batch in one transaction with the sequence it reached, so a
// restart goes on from there and nothing is applied half-way.
type Follower struct {
	js    jetstream.JetStream
	store Store
	log   *slog.Logger
	// Self, on a writer, is its name (Publisher.Writer): its own entries
	// are skipped, its store having them already (and perhaps newer).
	Self string

	mu      sync.Mutex
	applied uint64
	changed chan struct{} // closed and replaced at each applied batch
}

// NewFollower follows the log into store.
func NewFollower(js jetstream.JetStream, store Store, log *slog.Logger) *Follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Follower{js: js, store: store, log: log, changed: make(chan struct{})}
}

// Applied is the last log sequence applied.
func (f *Follower) Applied() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// CatchUp applies everything the log holds now and returns how many
// entries it applied.
func (f *Follower) CatchUp(ctx context.Context) (int, error) {
	return f.follow(ctx, true)
}

// Run applies the log as it grows, until ctx ends. An entry that does not
// decode, or that the store refuses, stops it with that error: a replica
// must stop serving rather than answer from a state the log does not say.
func (f *Follower) Run(ctx context.Context) error {
	_, err := f.follow(ctx, false)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// follow applies entries for ever, or with catchUp until the log's last
// entry as it stands now.
func (f *Follower) follow(ctx context.Context, catchUp bool) (int, error) {
	info, err := logInfo(ctx, f.js, f.log)
	if err != nil {
		return 0, err
	}
	var until uint64 // 0: for ever
	if catchUp {
		if info.State.Msgs == 0 {
			return 0, nil // no entry (a new or purged log): nothing to catch up with
		}
		until = info.State.LastSeq
	}
	start, err := f.store.LogSeq(ctx)
	if err != nil {
		return 0, err
	}
	if start > info.State.LastSeq {
		// The log is younger than this store's position in it: it was
		// lost with its cluster and logged anew. Every entry is applied
		// again (a put replaces a memory whole, so that is safe).
		f.log.Warn("memory log: the log is behind this store's position; applying it from the start", "storeSeq", start, "logSeq", info.State.LastSeq)
		start = 0
	}
	f.setApplied(start)
	if until > 0 && start >= until {
		return 0, nil
	}
	cc := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if start > 0 {
		cc = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start + 1}
	}
	cons, err := jsretry.Do(ctx, f.log, "memory log consumer", func(ctx context.Context) (jetstream.Consumer, error) {
		return f.js.OrderedConsumer(ctx, schemas.StreamMemories, cc)
	})
	if err != nil {
		return 0, fmt.Errorf("memory log: %w", err)
	}
	// Messages prefetches: Next answers from what is buffered, so a batch
	// is whatever has arrived, applied at once, and a single new entry is
	// applied as soon as it comes.
	it, err := cons.Messages(jetstream.PullMaxMessages(batch))
	if err != nil {
		return 0, fmt.Errorf("memory log: %w", err)
	}
	defer it.Stop()
	total := 0
	for ctx.Err() == nil {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return total, fmt.Errorf("memory log: %w", err)
		}
		got := []jetstream.Msg{m}
		for len(got) < batch {
			m, err := it.Next(jetstream.NextMaxWait(time.Millisecond))
			if err != nil {
				break // nothing more buffered
			}
			got = append(got, m)
		}
		seq, err := f.apply(ctx, got)
		if err != nil {
			return total, err
		}
		total += len(got)
		if until > 0 && seq >= until {
			return total, nil
		}
	}
	return total, ctx.Err()
}

// apply decodes a batch and applies each memory's last entry in it.
func (f *Follower) apply(ctx context.Context, msgs []jetstream.Msg) (uint64, error) {
	last := map[string]int{}
	entries := make([]schemas.LogEntry, len(msgs))
	mems := make([]schemas.Memory, len(msgs))
	var seq uint64
	own := make([]bool, len(msgs))
	keys := make([]string, len(msgs))
	for i, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			return 0, err
		}
		seq = md.Sequence.Stream
		// The subject ends with the memory's id: entries are told apart by
		// it before they are decoded, this writer's own among them.
		keys[i] = m.Subject()[strings.LastIndexByte(m.Subject(), '.')+1:]
		last[keys[i]] = i
		if own[i] = f.Self != "" && m.Headers().Get(schemas.HeaderLogWriter) == f.Self; own[i] {
			continue
		}
		if entries[i], mems[i], err = schemas.DecodeLogEntry(m.Data(), f.store.Dimensions()); err != nil {
			return 0, fmt.Errorf("memory log sequence %d (%s): %w", seq, m.Subject(), err)
		}
		if schemas.SubjectToken(entries[i].ID) != keys[i] {
			return 0, fmt.Errorf("memory log sequence %d (%s): the entry is memory %s", seq, m.Subject(), entries[i].ID)
		}
	}
	var puts []schemas.Memory
	var dels []string
	for i, e := range entries {
		// A memory's last entry in the batch is its state; this writer's
		// own is in its store already.
		if last[keys[i]] != i || own[i] {
			continue
		}
		if e.Op == schemas.LogDelete {
			dels = append(dels, e.ID)
		} else {
			puts = append(puts, mems[i])
		}
	}
	if err := f.store.ApplyLog(ctx, seq, puts, dels); err != nil {
		return 0, fmt.Errorf("apply memory log up to %d: %w", seq, err)
	}
	f.setApplied(seq)
	return seq, nil
}

func (f *Follower) setApplied(seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = seq
	close(f.changed)
	f.changed = make(chan struct{})
}

// WaitFor waits until the follower has applied seq, at most timeout; then
// it answers ErrStale.
func (f *Follower) WaitFor(ctx context.Context, seq uint64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		applied, changed := f.applied, f.changed
		f.mu.Unlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("%w: at %d of %d", ErrStale, applied, seq)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RebuildReport is what Rebuild did.
type RebuildReport struct {
	Entries  int    `json:"entries"`  // log entries applied
	LogSeq   uint64 `json:"logSeq"`   // the last one
	Memories int    `json:"memories"` // in the rebuilt store
	LogBytes uint64 `json:"logBytes"` // the log's size
}

// Rebuild applies the whole log to store (an empty one, or one to bring up
// to date) and reports what it holds after.
func Rebuild(ctx context.Context, js jetstream.JetStream, store interface {
	Store
	Stats(context.Context, engine.ScopeFilter) (engine.Stats, error)
}, log *slog.Logger) (RebuildReport, error) {
	f := NewFollower(js, store, log)
	n, err := f.CatchUp(ctx)
	rep := RebuildReport{Entries: n, LogSeq: f.Applied()}
	if err != nil {
		return rep, err
	}
	st, err := store.Stats(ctx, engine.AllScopes())
	if err != nil {
		return rep, err
	}
	rep.Memories = st.Total + st.History
	if s, err := js.Stream(ctx, schemas.StreamMemories); err == nil {
		if info, err := s.Info(ctx); err == nil {
			rep.LogBytes = info.State.Bytes
		}
	}
	return rep, nil
}
