package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// idNamespace derives memory ids from source ids (UUIDv5), which makes the
// store worker idempotent: a redelivered candidate maps to the id that is
// already stored.
var idNamespace = uuid.MustParse("6f1d6c2e-8a59-4b4e-9c53-6b8f3f0e2a11")

// MemoryID is the id a candidate with sourceID for agent is stored under.
func MemoryID(agent, sourceID string) string {
	return uuid.NewSHA1(idNamespace, []byte(agent+"\x00"+sourceID)).String()
}

// StoreWorker is the single writer: it takes candidate batches from the
// WORK stream, deduplicates them against the store and each other, and
// writes each batch of messages in one transaction.
type StoreWorker struct {
	eng     *memory.Engine
	st      stage
	outcome *prometheus.CounterVec
	log     *slog.Logger
	// Durable, when set, runs after a batch is committed and before its
	// messages are acknowledged: the memory log's publish. A message is
	// acknowledged only once its memory is in the replicated log, so a
	// writer killed after its commit loses nothing a standby cannot redo.
	Durable func(context.Context) error
}

// NewStoreWorker builds the store stage. Batch defaults to 256 messages.
func NewStoreWorker(js jetstream.JetStream, eng *memory.Engine, cfg StageConfig, m *StageMetrics, reg prometheus.Registerer, log *slog.Logger) *StoreWorker {
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	w := &StoreWorker{eng: eng, log: log,
		outcome: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "store_items_total",
			Help: "Memory candidates handled by the store worker, by outcome."}, []string{"outcome"})}
	if reg != nil {
		reg.MustRegister(w.outcome)
	}
	w.st = stage{name: schemas.ConsumerStore, js: js, stream: schemas.StreamWork,
		subjects: []string{schemas.WorkCandidatesAll, schemas.WorkLessonsAll}, cfg: cfg, handle: w.handle, metrics: m, log: log}
	return w
}

// Run consumes until ctx ends.
func (w *StoreWorker) Run(ctx context.Context) error { return w.st.run(ctx) }

func (w *StoreWorker) handle(ctx context.Context, msgs []jetstream.Msg) []error {
	errs := make([]error, len(msgs))
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
		for _, it := range b.Items {
			if it.Invalidates != "" {
				errs[i] = errors.Join(errs[i], w.invalidate(ctx, agent, it))
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
	if len(items) == 0 {
		return errs
	}
	results, itemErrs, err := w.eng.StoreBatch(ctx, items)
	if err == nil && w.Durable != nil {
		err = w.durable(ctx)
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

// durable waits until Durable succeeds. A log that cannot be reached for a
// while (a cluster electing new leaders) is waited out here, with the
// messages kept in progress, rather than spending their deliveries and
// dead-lettering memories that are safely stored. ErrNotWriter-wrapped
// failures (the writer's lease is lost) end the wait at once.
func (w *StoreWorker) durable(ctx context.Context) error {
	wait := 50 * time.Millisecond
	for {
		err := w.Durable(ctx)
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
