package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// MemoryID is the id a candidate with sourceID for agent is stored under
// (UUIDv5), which makes the store worker idempotent: a redelivered
// candidate maps to the id that is already stored. The derivation lives
// with purge, which traces memories back to their conversations by it.
func MemoryID(agent, sourceID string) string { return purge.MemoryID(agent, sourceID) }

// StoreWorker writes memories: it takes candidate batches from the WORK
// stream, deduplicates them against the store and each other, and writes
// each batch of messages in one transaction. Work is partitioned: one
// stage per partition (RunPartition), so partitions can be shared out
// among writers, each partition having one writer at a time.
type StoreWorker struct {
	js      jetstream.JetStream
	eng     *memory.Engine
	cfg     StageConfig
	metrics *StageMetrics
	outcome *prometheus.CounterVec
	log     *slog.Logger
	// Partitions is how many partitions there are; default
	// schemas.DefaultPartitions.
	Partitions int
	// Durable, when set, runs after a batch of a partition is committed
	// and before its messages are acknowledged: the memory log's publish.
	// A message is acknowledged only once its memory is in the replicated
	// log, so a writer killed after its commit loses nothing another
	// writer cannot redo.
	Durable func(ctx context.Context, partition int) error
	// states are each partition's consumer state (stage.state), kept
	// while this process lives: a partition given up and taken back, its
	// stage stopped and started anew, keeps its uncounted deliveries and
	// its stall's start.
	states sync.Map // partition -> *consumerState
}

// NewStoreWorker builds the store stages. Batch defaults to 256 messages.
func NewStoreWorker(js jetstream.JetStream, eng *memory.Engine, cfg StageConfig, m *StageMetrics, reg prometheus.Registerer, log *slog.Logger) *StoreWorker {
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	w := &StoreWorker{js: js, eng: eng, cfg: cfg, metrics: m, log: log,
		outcome: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "store_items_total",
			Help: "Memory candidates handled by the store worker, by outcome."}, []string{"outcome"})}
	w.outcome = promreg.Register(reg, w.outcome, log, "store")
	return w
}

func (w *StoreWorker) partitions() int { return max(w.Partitions, 1) }

// Run writes every partition, and moves work from before partitions,
// until ctx ends: the one writer of a deployment.
func (w *StoreWorker) Run(ctx context.Context) error {
	if w.Partitions <= 0 {
		w.Partitions = schemas.DefaultPartitions
	}
	g := make(chan error, w.Partitions+1)
	for p := range w.Partitions {
		go func() { g <- w.RunPartition(ctx, p) }()
	}
	go func() { g <- w.RunLegacy(ctx) }()
	var first error
	for range w.Partitions + 1 {
		if err := <-g; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// RunPartition writes one partition's work until ctx ends.
func (w *StoreWorker) RunPartition(ctx context.Context, partition int) error {
	state, _ := w.states.LoadOrStore(partition, new(consumerState))
	st := stage{name: schemas.ConsumerStoreFor(partition), kind: schemas.ConsumerStore, js: w.js, stream: schemas.StreamWork,
		subjects: schemas.WorkFilters(partition), cfg: w.cfg, metrics: w.metrics, log: w.log, state: state.(*consumerState),
		prepare: func(ctx context.Context, msgs []jetstream.Msg) func(context.Context) []error {
			return w.prepare(ctx, partition, msgs)
		}}
	return st.run(ctx)
}

// RunLegacy moves work published before partitions (subjects without a
// partition) to its partitions, until ctx ends.
func (w *StoreWorker) RunLegacy(ctx context.Context) error {
	st := stage{name: schemas.ConsumerStore, js: w.js, stream: schemas.StreamWork,
		subjects: []string{schemas.LegacyWorkCandidates, schemas.LegacyWorkLessons}, cfg: w.cfg, metrics: w.metrics, log: w.log,
		prepare: func(ctx context.Context, msgs []jetstream.Msg) func(context.Context) []error {
			return w.prepare(ctx, -1, msgs)
		}}
	return st.run(ctx)
}

// prepare reads a batch of work, moves other partitions' items on and
// prepares the store of its own (checks, embeddings, duplicate searches),
// and returns the commit: the batch's invalidations, its store and its
// entry in the memory log. The stage runs a batch's preparation while the
// batch before it commits; commits keep the batches' order.
func (w *StoreWorker) prepare(ctx context.Context, partition int, msgs []jetstream.Msg) func(context.Context) []error {
	errs := make([]error, len(msgs))
	type invalidation struct {
		msg   int
		agent string
		item  schemas.CaptureItem
	}
	var invalidations []invalidation
	var items []memory.BatchItem
	owner := make([]int, 0, len(msgs)) // item index → message index
	for i, m := range msgs {
		agent, err := schemas.AgentFromSubject(m.Subject())
		if err != nil {
			errs[i] = Permanent(err)
			continue
		}
		var b schemas.WorkBatch
		if err := json.Unmarshal(m.Data(), &b); err != nil {
			errs[i] = Permanent(fmt.Errorf("work batch is not JSON: %w", err))
			continue
		}
		if b.V != schemas.Version {
			errs[i] = Permanent(fmt.Errorf("work batch version %d, this worker reads %d", b.V, schemas.Version))
			continue
		}
		mine, err := w.moveOthers(ctx, partition, m, agent, b)
		if err != nil {
			errs[i] = err
			continue
		}
		for _, it := range mine {
			if it.Invalidates != "" {
				invalidations = append(invalidations, invalidation{i, agent, it})
				continue
			}
			imp := it.Importance
			req := memory.StoreRequest{Text: it.Text, Category: it.Category, Scope: it.Scope, Importance: &imp,
				Metadata: it.Metadata, Vector: it.Vector, Supersedes: it.Supersedes, SupersedesIfCurrent: true}
			if it.SourceID != "" {
				req.ID = MemoryID(agent, it.SourceID)
			}
			items = append(items, memory.BatchItem{Who: memory.Agent(agent), Req: req, Dedup: it.Dedup})
			owner = append(owner, i)
		}
	}
	var prep *memory.PreparedBatch
	var perr error
	if len(items) > 0 {
		prep, perr = w.eng.PrepareBatch(ctx, items)
	}
	return func(ctx context.Context) []error {
		for _, v := range invalidations {
			errs[v.msg] = errors.Join(errs[v.msg], w.invalidate(ctx, v.agent, v.item))
		}
		if len(items) == 0 {
			return errs
		}
		var results []memory.StoreResult
		var itemErrs []error
		err := perr
		if err == nil {
			results, itemErrs, err = w.eng.CommitBatch(ctx, prep)
		}
		if err == nil && w.Durable != nil {
			err = w.durable(ctx, partition)
		}
		if storageFull(err) {
			// A full disk is an outage of the store, not the batch's
			// fault: its deliveries are not counted (see stage.settle).
			err = schemas.Unavailable(err)
		}
		if err != nil {
			for _, i := range owner {
				if errs[i] == nil {
					errs[i] = err
				}
			}
			return errs
		}
		for k, ierr := range itemErrs {
			switch {
			case ierr == nil:
				w.outcome.WithLabelValues(string(results[k].Status)).Inc()
			case memory.IsInputError(ierr):
				// A candidate the rules or scopes refuse is dropped, not
				// retried: retrying cannot change the answer.
				w.outcome.WithLabelValues("rejected").Inc()
				w.log.Info("candidate rejected", "agent", items[k].Who.AgentID(), "err", ierr)
			default:
				w.outcome.WithLabelValues("error").Inc()
				if errs[owner[k]] == nil {
					errs[owner[k]] = ierr
				}
			}
		}
		return errs
	}
}

// itemPartition is the partition whose writer writes it: its scope's (for
// an invalidation, the named memory's), or partition itself when that
// cannot be told here (an inaccessible scope, an unknown memory: the
// write refuses it with the reason).
func (w *StoreWorker) itemPartition(ctx context.Context, partition int, agent string, it schemas.CaptureItem) int {
	who := memory.Agent(agent)
	if it.Invalidates != "" {
		_, scope, err := w.eng.Locate(ctx, who, it.Invalidates, "")
		if err != nil {
			return w.untold(partition, agent)
		}
		return schemas.ScopePartition(scope, w.partitions())
	}
	scope, err := w.eng.TargetScope(who, it.Scope)
	if err != nil {
		return w.untold(partition, agent)
	}
	return schemas.ScopePartition(scope, w.partitions())
}

// untold is the partition of an item whose own cannot be told: the stage's
// (where the write refuses it), or, moving legacy work (-1), the agent's.
func (w *StoreWorker) untold(partition int, agent string) int {
	if partition >= 0 {
		return partition
	}
	return schemas.AgentPartition(agent, w.partitions())
}

// moveOthers publishes the items of b that another partition writes to
// that partition's work, and returns the rest. Work is published to its
// writer's partition where it is made (workRoute), so this moves only work
// from before partitions and work routed by a node whose scope rules
// disagree with this one's. The moved copies' Msg-Ids
// derive from m's stream position, so a redelivered m moves them once.
func (w *StoreWorker) moveOthers(ctx context.Context, partition int, m jetstream.Msg, agent string, b schemas.WorkBatch) ([]schemas.CaptureItem, error) {
	var mine []schemas.CaptureItem
	others := map[int][]schemas.CaptureItem{}
	for _, it := range b.Items {
		if p := w.itemPartition(ctx, partition, agent, it); p == partition {
			mine = append(mine, it)
		} else {
			others[p] = append(others[p], it)
		}
	}
	if len(others) == 0 {
		return mine, nil
	}
	md, err := m.Metadata()
	if err != nil {
		return nil, err
	}
	prefix := schemas.WorkCandidates
	if strings.HasPrefix(m.Subject(), schemas.WorkLessons+".") {
		prefix = schemas.WorkLessons
	}
	for p, its := range others {
		if err := publishBatch(ctx, w.js, schemas.WorkPartitionSubject(prefix, agent, p), fmt.Sprintf("moved-%d-%d", md.Sequence.Stream, p), agent, b.Source, its); err != nil {
			return nil, fmt.Errorf("move work to partition %d: %w", p, err)
		}
		w.outcome.WithLabelValues("moved").Add(float64(len(its)))
	}
	return mine, nil
}

// durable waits until Durable succeeds. A log that cannot be reached for a
// while (a cluster electing new leaders) is waited out here, with the
// messages kept in progress, rather than spending their deliveries and
// dead-lettering memories that are safely stored. ErrNotWriter-wrapped
// failures (the writer's lease is lost) end the wait at once.
func (w *StoreWorker) durable(ctx context.Context, partition int) error {
	wait := 50 * time.Millisecond
	for {
		err := w.Durable(ctx, partition)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNotWriter) || ctx.Err() != nil:
			return fmt.Errorf("memory log: %w", err)
		}
		w.log.Warn("memory log unreachable; the batch waits for it", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("memory log: %w", err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ErrNotWriter, from Durable, says this process may no longer write: the
// batch is left to the next writer.
var ErrNotWriter = errors.New("this process is no longer the writer")

// invalidate ends the memory an item names (smart extraction's DELETE), as
// the item's agent: a memory it cannot write, or one that is gone or ended
// already, is refused and counted, not retried.
func (w *StoreWorker) invalidate(ctx context.Context, agent string, it schemas.CaptureItem) error {
	_, err := w.eng.Archive(ctx, memory.Agent(agent), it.Invalidates)
	switch {
	case err == nil:
		w.outcome.WithLabelValues("invalidated").Inc()
		return nil
	case memory.IsInputError(err):
		w.outcome.WithLabelValues("rejected").Inc()
		w.log.Info("invalidation refused", "agent", agent, "memory", it.Invalidates, "err", err)
		return nil
	}
	w.outcome.WithLabelValues("error").Inc()
	return err
}

// storageFull reports a write that failed for want of disk space: SQLite's
// "database or disk is full" (SQLITE_FULL) or ENOSPC.
func storageFull(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || strings.Contains(err.Error(), "database or disk is full"))
}
