// Package memlog is the memory log: the writer's side publishes every
// committed change of its store (read from the store's change log) to the
// stream schemas.StreamMemories; the reader's side applies the log to a
// store of its own, a query replica's or a rebuild. The log, replicated by
// JetStream, is the source of truth; a SQLite store is a view of it.
package memlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/jsbound"
	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/schemas"
)

// batch is how many changes go to JetStream, and are acknowledged, at once.
const batch = 512

// ErrAckLost is a batch whose acknowledgements did not come in time; it
// goes again (its Msg-Ids make the copies JetStream has no-ops).
var ErrAckLost = errors.New("memory log acknowledgement lost")

// Publisher publishes a store's changes to the memory log.
type Publisher struct {
	js         jetstream.JetStream
	store      engine.ChangeLogger
	partitions int
	log        *slog.Logger
	// Poll is how often the change log is read when it was empty.
	Poll time.Duration
	// Writer, when set, names this writer in each entry (its Msg-Id and
	// schemas.HeaderLogWriter), so that its own follower skips what its
	// store has, and another writer's revisions never collide with its
	// Msg-Ids.
	Writer string
	// Holds, when set, says whether this writer holds the partition of a
	// scope now. A change to a scope it does not hold (made before a crash,
	// in a partition another writer has since taken over) is dropped, not
	// published over that writer's: it was never acknowledged to anyone.
	Holds func(scope string) bool
	// AckWait bounds the wait for a batch's acknowledgements. An ack lost
	// in a restart of the stream's leader is never coming, and a batch
	// waiting for it holds every later Flush (the store worker's durable
	// step) behind it: the batch fails instead and goes again.
	AckWait time.Duration

	// mu makes batches one at a time, so that a Flush that finds the
	// change log empty knows every change before it is acknowledged.
	mu      sync.Mutex
	lastSeq atomic.Uint64 // the highest log sequence acknowledged
}

// NewPublisher publishes store's changes with partitions partitions.
func NewPublisher(js jetstream.JetStream, store engine.ChangeLogger, partitions int, log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{js: js, store: store, partitions: max(partitions, 1), log: log, Poll: 5 * time.Millisecond, AckWait: jsbound.Timeout}
}

// logInfo is the memory log's state, retried while the cluster is briefly
// unavailable.
func logInfo(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (*jetstream.StreamInfo, error) {
	info, err := jsretry.Do(ctx, log, "memory log", func(ctx context.Context) (*jetstream.StreamInfo, error) {
		s, err := js.Stream(ctx, schemas.StreamMemories)
		if err != nil {
			return nil, err
		}
		return s.Info(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("memory log: %w", err)
	}
	return info, nil
}

// LastSeq is the sequence of the memory log's last entry now (0: none).
func LastSeq(ctx context.Context, js jetstream.JetStream, log *slog.Logger) (uint64, error) {
	info, err := logInfo(ctx, js, log)
	if err != nil || info.State.Msgs == 0 {
		return 0, err // a log with no entry (new, or purged): nothing to wait for
	}
	return info.State.LastSeq, nil
}

// Bootstrap logs every memory of the store when the log is empty and the
// store is not: a store from before the log, or a log lost with its
// cluster. It says how many it logged.
func (p *Publisher) Bootstrap(ctx context.Context) (int, error) {
	info, err := logInfo(ctx, p.js, p.log)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs > 0 || info.State.LastSeq > 0 {
		return 0, nil
	}
	return p.store.LogAll(ctx)
}

// Run publishes until ctx ends, then publishes what is left (bounded by a
// few seconds: what remains goes at the next start).
func (p *Publisher) Run(ctx context.Context) error {
	if la, ok := p.store.(engine.LogApplier); ok {
		if seq, err := la.LogSeq(ctx); err == nil {
			p.lastSeq.Store(seq) // how far the log had this store's writes
		}
	}
	if n, err := p.Bootstrap(ctx); err != nil {
		return err
	} else if n > 0 {
		p.log.Info("memory log: logging the store's memories into an empty log", "memories", n)
	}
	backoff := p.Poll
	for {
		n, err := p.publishBatch(ctx)
		switch {
		case ctx.Err() != nil:
			fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := p.Flush(fctx); err != nil {
				p.log.Warn("memory log: changes left for the next start", "err", err)
			}
			return nil
		case err != nil:
			p.log.Warn("memory log: publish failed; retrying", "err", err)
			backoff = min(2*backoff, 2*time.Second)
		case n > 0:
			backoff = p.Poll
			continue
		default:
			backoff = p.Poll
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}

// FlushSeq publishes every change recorded so far and returns the log
// sequence that holds them: a write's reply says it, and a replica that
// has applied it has the write.
func (p *Publisher) FlushSeq(ctx context.Context) (uint64, error) {
	if _, err := p.Flush(ctx); err != nil {
		return 0, err
	}
	return p.lastSeq.Load(), nil
}

// LastSeq is the highest log sequence this publisher has had
// acknowledged.
func (p *Publisher) LastSeq() uint64 { return p.lastSeq.Load() }

// Flush publishes every change recorded so far and says how many.
func (p *Publisher) Flush(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := p.publishBatch(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// publishBatch publishes the oldest changes and trims them once JetStream
// has stored every one. A failure trims nothing: the batch goes again, and
// its Msg-Ids make the copies JetStream already has no-ops.
func (p *Publisher) publishBatch(ctx context.Context) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changes, err := p.store.Changes(ctx, 0, batch)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	futures := make([]jetstream.PubAckFuture, 0, len(changes))
	dropped := 0
	for _, c := range changes {
		if p.Holds != nil && !p.Holds(c.Scope) {
			dropped++
			continue
		}
		msg, err := Message(c, p.partitions, p.Writer)
		if err != nil {
			return 0, err
		}
		f, err := p.js.PublishMsgAsync(msg)
		if err != nil {
			return 0, fmt.Errorf("publish %s: %w", msg.Subject, err)
		}
		futures = append(futures, f)
	}
	ackWait := p.AckWait
	if ackWait <= 0 {
		ackWait = jsbound.Timeout
	}
	wait := time.NewTimer(ackWait)
	defer wait.Stop()
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Sequence > p.lastSeq.Load() {
				p.lastSeq.Store(ack.Sequence) // batches are one at a time
			}
		case err := <-f.Err():
			return 0, fmt.Errorf("publish %s: %w", f.Msg().Subject, err)
		case <-wait.C:
			return 0, fmt.Errorf("publish %s: %w: no acknowledgement within %s", f.Msg().Subject, ErrAckLost, ackWait)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if dropped > 0 {
		p.log.Warn("memory log: changes to partitions another writer holds are dropped", "changes", dropped)
	}
	// How far the store has the log is its follower's to say (what this
	// writer published is not all there is), so the trim leaves it be.
	if err := p.store.TrimChanges(ctx, changes[len(changes)-1].Rev, 0); err != nil {
		return 0, err
	}
	return len(changes), nil
}

// Message is the log message of change c, by writer (optional).
func Message(c engine.Change, partitions int, writer string) (*nats.Msg, error) {
	e := schemas.LogEntry{V: schemas.LogVersion, Op: schemas.LogDelete, ID: c.ID, Rev: c.Rev}
	if !c.Deleted {
		m := c.Memory
		e.Op, e.Vector = schemas.LogPut, schemas.EncodeVector(m.Vector)
		m.Vector = nil
		e.Memory = &m
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	// A deletion goes to the subject of the memory's last state, which it
	// replaces there: the stream keeps one message per subject.
	msg := nats.NewMsg(schemas.MemoryLogSubject(schemas.Partition(schemas.PartitionKey(c.Scope), partitions), c.Scope, c.ID))
	msg.Data = data
	msgID := fmt.Sprintf("%s@%d", c.ID, c.Rev)
	if writer != "" {
		msgID = writer + ":" + msgID
		msg.Header.Set(schemas.HeaderLogWriter, writer)
	}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	return msg, nil
}

// ErrStale is returned by WaitFor when the replica does not reach a log
// sequence in time.
var ErrStale = errors.New("the replica has not applied that change yet")
