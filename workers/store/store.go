// Package store is the store worker, the pipeline's writer of memories:
// it takes candidate batches from its partitions of the WORK stream,
// deduplicates them against the store and each other, writes each batch in
// one transaction, and acknowledges its messages only once the batch is
// durable (in the memory log, when there is one).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
	"github.com/clawmem/clawmem/workers/stage"
)

// MemoryID is the id a candidate with sourceID for agent is stored under
// (UUIDv5), which makes the store worker idempotent: a redelivered
// candidate maps to the id that is already stored. The derivation lives
// with purge, which traces memories back to their conversations by it.
func MemoryID(agent, sourceID string) string { return purge.MemoryID(agent, sourceID) }

// Worker writes memories: it takes candidate batches from the WORK
// stream, deduplicates them against the store and each other, and writes
// each batch of messages in one transaction. Work is partitioned: one
// stage per partition (RunPartition), so partitions can be shared out
// among writers, each partition having one writer at a time.
type Worker struct {
	js      jetstream.JetStream
	eng     *memory.Engine
	cfg     stage.Config
	metrics *stage.Metrics
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
	// states are each partition's consumer state (stage.State), kept
	// while this process lives: a partition given up and taken back, its
	// stage stopped and started anew, keeps its uncounted deliveries and
	// its stall's start.
	states sync.Map // partition -> *stage.State
}

// New builds the store stages. Batch defaults to 256 messages.
func New(js jetstream.JetStream, eng *memory.Engine, cfg stage.Config, m *stage.Metrics, reg prometheus.Registerer, log *slog.Logger) *Worker {
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	w := &Worker{js: js, eng: eng, cfg: cfg, metrics: m, log: log,
		outcome: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "store_items_total",
			Help: "Memory candidates handled by the store worker, by outcome."}, []string{"outcome"})}
	w.outcome = promreg.Register(reg, w.outcome, log, "store")
	return w
}

func (w *Worker) partitions() int { return max(w.Partitions, 1) }

// Run writes every partition, and moves work from before partitions,
// until ctx ends: the one writer of a deployment.
func (w *Worker) Run(ctx context.Context) error {
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
func (w *Worker) RunPartition(ctx context.Context, partition int) error {
	state, _ := w.states.LoadOrStore(partition, new(stage.State))
	st := stage.Stage{Name: schemas.ConsumerStoreFor(partition), Kind: schemas.ConsumerStore, Partition: true, JS: w.js, Stream: schemas.StreamWork,
		Subjects: schemas.WorkFilters(partition), Config: w.cfg, Metrics: w.metrics, Log: w.log, State: state.(*stage.State),
		Prepare: func(ctx context.Context, msgs []jetstream.Msg) func(context.Context) []error {
			return w.prepare(ctx, partition, msgs)
		}}
	return st.Run(ctx)
}

// RunLegacy moves work published before partitions (subjects without a
// partition) to its partitions, until ctx ends.
func (w *Worker) RunLegacy(ctx context.Context) error {
	st := stage.Stage{Name: schemas.ConsumerStore, JS: w.js, Stream: schemas.StreamWork,
		Subjects: []string{schemas.LegacyWorkCandidates, schemas.LegacyWorkLessons}, Config: w.cfg, Metrics: w.metrics, Log: w.log,
		Prepare: func(ctx context.Context, msgs []jetstream.Msg) func(context.Context) []error {
			return w.prepare(ctx, -1, msgs)
		}}
	return st.Run(ctx)
}

// prepare reads a batch of work, moves other partitions' items on and
// prepares the store of its own (checks, embeddings, duplicate searches),
// and returns the commit: the batch's invalidations, its store and its
// entry in the memory log. The stage runs a batch's preparation while the
// batch before it commits; commits keep the batches' order.
func (w *Worker) prepare(ctx context.Context, partition int, msgs []jetstream.Msg) func(context.Context) []error {
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
			errs[i] = stage.Permanent(err)
			continue
		}
		var b schemas.WorkBatch
		if err := json.Unmarshal(m.Data(), &b); err != nil {
			errs[i] = stage.Permanent(fmt.Errorf("work batch is not JSON: %w", err))
			continue
		}
		if b.V != schemas.Version {
			errs[i] = stage.Permanent(fmt.Errorf("work batch version %d, this worker reads %d", b.V, schemas.Version))
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
			// fault: its deliveries are not counted (the stage waits it out).
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
