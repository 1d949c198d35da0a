package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers"
	"github.com/clawmem/clawmem/workers/memlog"
	"github.com/clawmem/clawmem/workers/query"
)

// writerIDFile holds the data dir's writer identity: a restart of the same
// writer (the same store) takes its own lease back at once.
const writerIDFile = "writer-id"

// LeaseTTL is how long the writer's lease outlives its last heartbeat:
// how long a standby waits for a writer that died.
var LeaseTTL = 6 * time.Second

// writer is the store role: the one process at a time that writes the
// memories, held by the writer's lease. Until it holds the lease it is a
// standby that follows the memory log into its own store, so it takes
// over with every memory in hand.
type writer struct {
	cfg     *config.Config
	nc      *nats.Conn
	js      jetstream.JetStream
	eng     *memory.Engine
	st      EngineStore
	reg     prometheus.Registerer
	metrics *workers.StageMetrics
	log     *slog.Logger
	query   bool // also answer the public query subjects
	// ready is closed once this process is the writer and answers: its
	// endpoints and the backup requests are registered.
	ready     chan struct{}
	readyOnce sync.Once
}

func (w *writer) run(ctx context.Context) error {
	err := w.runLeased(ctx)
	if ctx.Err() != nil {
		return nil // shutting down: whatever was cut short resumes at the next start
	}
	return err
}

// runLeased writes while it holds the lease. Losing it (a heartbeat that
// could not reach NATS in time, while a cluster elects new leaders) stops
// the writing at once and makes this process a standby again, which takes
// the lease back if no one else did.
func (w *writer) runLeased(ctx context.Context) error {
	if _, logged := w.st.(engine.ChangeLogger); !logged {
		return w.serve(ctx, nil)
	}
	for {
		lease, err := w.acquire(ctx)
		if err != nil || lease == nil {
			return err
		}
		err = w.serve(ctx, lease)
		lease.Release(context.WithoutCancel(ctx))
		if !errors.Is(err, memlog.ErrLeaseLost) || ctx.Err() != nil {
			return err
		}
		w.log.Warn("writer: the lease is lost; standing by", "err", err)
	}
}

// acquire returns once this process holds the writer's lease (nil when ctx
// ends first), following the log as a standby meanwhile, and caught up
// with it.
func (w *writer) acquire(ctx context.Context) (*memlog.Lease, error) {
	id, err := writerID(w.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	kv, err := jsretry.Do(ctx, w.log, "writer's lease", func(ctx context.Context) (jetstream.KeyValue, error) {
		return w.js.KeyValue(ctx, schemas.BucketLeases)
	})
	if ctx.Err() != nil {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("writer's lease: %w", err)
	}
	lease := memlog.NewLease(kv, schemas.LeaseWriter, id, LeaseTTL)
	la, _ := w.st.(memlog.Store)
	// The standby's follower runs on fctx from the first failed attempt
	// until the lease is taken.
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	var followDone chan error
	stopFollowing := func() error {
		stop()
		if followDone == nil {
			return nil
		}
		return <-followDone
	}
	for {
		ok, holder, err := lease.TryAcquire(ctx)
		switch {
		case ctx.Err() != nil:
			return nil, nil
		case err != nil:
			w.log.Warn("writer's lease", "err", err)
		case ok:
			if err := stopFollowing(); err != nil {
				return nil, err
			}
			f := memlog.NewFollower(w.js, la, w.log)
			n, err := f.CatchUp(ctx)
			if err != nil {
				return nil, err
			}
			w.log.Info("writer: holding the lease", "caughtUp", n, "logSeq", f.Applied())
			return lease, nil
		case followDone == nil && la != nil:
			w.log.Info("writer: standby, following the memory log", "holder", holder)
			followDone = make(chan error, 1)
			go func() { followDone <- memlog.NewFollower(w.js, la, w.log).Run(fctx) }()
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case err := <-followDone:
			return nil, err // a log entry this store cannot apply
		case <-time.After(LeaseTTL / 12):
		}
	}
}

// serve runs the writer's work while the lease holds: the store worker,
// the memory log's publisher, the writer's endpoints (and the public ones),
// backups and consolidation. Losing the lease stops all of it at once.
func (w *writer) serve(ctx context.Context, lease *memlog.Lease) error {
	g := newGroup(ctx, w.log)
	defer g.cancel()
	ctx, start := g.ctx, g.start
	cfg, log := w.cfg, w.log
	backup, err := workers.NewBackupJob(w.st, w.js, BackupConfig(cfg, ""), log)
	if err != nil {
		return err
	}
	start("backup", backup.Run)
	qcfg := query.DefaultConfig()
	storeWorker := workers.NewStoreWorker(w.js, w.eng, workers.StageConfig{}, w.metrics, w.reg, log)
	if cl, ok := w.st.(engine.ChangeLogger); ok {
		pub := memlog.NewPublisher(w.js, cl, cfg.NATS.Partitions, log)
		start("memory log", pub.Run)
		qcfg.Replication = &query.Replication{Flush: pub.FlushSeq, Position: pub.LastSeq}
		// A batch is acknowledged once its memories are in the log, and
		// only while the lease is surely this writer's.
		storeWorker.Durable = func(ctx context.Context) error {
			if lease != nil && !lease.Held() {
				return fmt.Errorf("%w: %w", workers.ErrNotWriter, memlog.ErrLeaseLost)
			}
			_, err := pub.Flush(ctx)
			return err
		}
	} else {
		log.Warn("memory log off: this store backend records no changes", "backend", cfg.Store.Backend)
	}
	if lease != nil {
		start("writer's lease", lease.Keep)
	}
	cj := cfg.Jobs.Consolidate
	copts := memory.ConsolidateOptions{MergeMin: cj.MergeMin, ArchiveFloor: cj.ArchiveFloor, ArchiveHalfLifeDays: cj.ArchiveHalfLifeDays}
	if llm, err := distill.NewLLM(cfg.LLMConfig()); err != nil {
		return fmt.Errorf("consolidation judge: %w", err)
	} else if llm != nil {
		copts.Judge = workers.LLMJudge(llm)
		qcfg.MergeJudge = copts.Judge
	}
	consolidate, err := workers.NewConsolidateJob(w.eng, cj.Schedule, copts, log)
	if err != nil {
		return err
	}
	start("consolidate", consolidate.Run)
	start(RoleStore, storeWorker.Run)
	waits := []<-chan struct{}{backup.Ready()}
	if w.query {
		svc := query.New(w.nc, w.eng, qcfg, w.reg, log)
		start(RoleQuery, svc.Run)
		waits = append(waits, svc.Ready())
	}
	if qcfg.Replication != nil {
		// The writer's own endpoints, where replicas forward writes.
		wcfg := qcfg
		wcfg.Prefix, wcfg.AdminPrefix, wcfg.QueueGroup = query.WriterPrefix, query.WriterAdminPrefix, "clawmem-writer"
		svc := query.New(w.nc, w.eng, wcfg, nil, log)
		start("writer endpoints", svc.Run)
		waits = append(waits, svc.Ready())
	}
	for _, ready := range waits {
		select {
		case <-ready:
		case <-ctx.Done():
		}
	}
	if ctx.Err() == nil && w.ready != nil {
		w.readyOnce.Do(func() { close(w.ready) })
	}
	return g.wait()
}

// writerID is the data dir's writer identity, made on first use.
func writerID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, writerIDFile)
	if b, err := os.ReadFile(path); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	}
	id := uuid.NewString()
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writer identity: %w", err)
	}
	return id, nil
}
