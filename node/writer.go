package node

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
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
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
	"github.com/clawmem/clawmem/workers/memlog"
	"github.com/clawmem/clawmem/workers/query"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/store"
)

// writerIDFile holds the data dir's writer identity: a restart of the same
// writer (the same store) takes its own lease back at once.
const writerIDFile = "writer-id"

// writer is the store role: a process that writes the memories of the
// partitions it holds (a lease each, shared out among the writers present,
// memlog.Share) and follows the memory log for the others, so its store
// has every memory and it takes a partition over with it all in hand.
type writer struct {
	cfg     *config.Config
	nc      *nats.Conn
	js      jetstream.JetStream
	eng     *memory.Engine
	st      storeopen.EngineStore
	reg     prometheus.Registerer
	metrics *stage.Metrics
	log     *slog.Logger
	query   bool // also answer the public query subjects
	// ready is closed once this process is a writer and answers: it has
	// taken its first share of the partitions, and its endpoints are
	// registered.
	ready     chan struct{}
	readyOnce sync.Once
}

func (w *writer) run(ctx context.Context) error {
	var err error
	if cl, ok := w.st.(engine.ChangeLogger); ok {
		err = w.runShared(ctx, cl)
	} else {
		err = w.runAlone(ctx)
	}
	if ctx.Err() != nil {
		return nil // shutting down: whatever was cut short resumes at the next start
	}
	return err
}

func (w *writer) markReady(ctx context.Context, waits ...<-chan struct{}) {
	for _, ready := range waits {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
	}
	if w.ready != nil {
		w.readyOnce.Do(func() { close(w.ready) })
	}
}

// consolidation is the scheduled consolidation job over the scopes only
// accepts (nil: all), and the merge judge when an LLM is configured.
func (w *writer) consolidation(only func(string) bool) (*jobs.Consolidation, memory.MergeJudge, error) {
	cj := w.cfg.Jobs.Consolidate
	copts := memory.ConsolidateOptions{MergeMin: cj.MergeMin, ArchiveFloor: cj.ArchiveFloor,
		ArchiveHalfLifeDays: cj.ArchiveHalfLifeDays, Only: only}
	llm, err := distill.NewLLM(w.cfg.LLMConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("consolidation judge: %w", err)
	}
	if llm != nil {
		copts.Judge = jobs.LLMJudge(llm)
	}
	job, err := jobs.NewConsolidation(w.eng, cj.Schedule, copts, w.log)
	return job, copts.Judge, err
}

// runAlone writes every partition without a memory log (a store backend
// that records no changes): the one writer of its store, unreplicated.
func (w *writer) runAlone(ctx context.Context) error {
	w.log.Warn("memory log off: this store backend records no changes", "backend", w.cfg.Store.Backend)
	g := newGroup(ctx, w.log)
	defer g.cancel()
	backup, err := jobs.NewBackup(w.st, w.js, storeopen.BackupConfig(w.cfg, ""), w.log)
	if err != nil {
		return err
	}
	g.start("backup", backup.Run)
	consolidate, judge, err := w.consolidation(nil)
	if err != nil {
		return err
	}
	g.start("consolidate", consolidate.Run)
	sw := store.New(w.js, w.eng, stage.Config{}, w.metrics, w.reg, w.log)
	sw.Partitions = w.cfg.NATS.Partitions
	g.start(RoleStore, sw.Run)
	waits := []<-chan struct{}{backup.Ready()}
	if w.query {
		qcfg := query.DefaultConfig()
		qcfg.MergeJudge = judge
		svc := query.New(w.nc, w.eng, qcfg, w.reg, w.log)
		g.start(RoleQuery, svc.Run)
		waits = append(waits, svc.Ready())
	}
	w.markReady(g.ctx, waits...)
	return g.wait()
}

// runShared is a writer among writers: it catches up with the memory log,
// follows it (skipping its own entries), takes its share of the
// partitions and runs each held partition's work, publishes its changes,
// and consolidates the scopes it holds.
func (w *writer) runShared(ctx context.Context, cl engine.ChangeLogger) error {
	la, ok := w.st.(memlog.Store)
	if !ok {
		return fmt.Errorf("store backend %s records changes but cannot apply the log", w.cfg.Store.Backend)
	}
	id, err := writerID(w.cfg.DataDir)
	if err != nil {
		return err
	}
	kv, err := jsretry.Do(ctx, w.log, "writers' leases", func(ctx context.Context) (jetstream.KeyValue, error) {
		return w.js.KeyValue(ctx, schemas.BucketLeases)
	})
	if err != nil {
		return fmt.Errorf("writers' leases: %w", err)
	}
	n := w.cfg.NATS.Partitions
	follower := memlog.NewFollower(w.js, la, w.log)
	follower.Self = id
	caught, err := follower.CatchUp(ctx)
	if err != nil {
		return err
	}
	w.log.Info("writer: caught up with the memory log", "entries", caught, "logSeq", follower.Applied())
	pub := memlog.NewPublisher(w.js, cl, n, w.log)
	ttl, err := leaseTTL(ctx, kv, w.cfg, w.log)
	if err != nil {
		return err
	}
	share := memlog.NewShare(kv, id, n, ttl, w.log)
	pub.Writer, pub.Holds = id, share.HoldsScope

	g := newGroup(ctx, w.log)
	defer g.cancel()
	g.start("memory log follower", follower.Run)
	sw := store.New(w.js, w.eng, stage.Config{}, w.metrics, w.reg, w.log)
	sw.Partitions = n
	// A batch is acknowledged once its memories are in the log, and only
	// while the partition's lease is surely this writer's.
	sw.Durable = func(ctx context.Context, p int) error {
		if !share.Sure(p) {
			return fmt.Errorf("%w: %w (partition %d)", stage.ErrNotWriter, memlog.ErrLeaseLost, p)
		}
		_, err := pub.Flush(ctx)
		return err
	}
	consolidate, judge, err := w.consolidation(share.HoldsScope)
	if err != nil {
		return err
	}
	pw := partitionWork{w: w, sw: sw, pub: pub, follower: follower, judge: judge}
	share.Take = func(ctx context.Context, p int) error {
		// What the partition's previous writer logged, this store has
		// before it writes: the log as it stands now, applied.
		last, err := memlog.LastSeq(ctx, w.js, w.log)
		if err != nil {
			return err
		}
		return follower.WaitFor(ctx, last, time.Minute)
	}
	share.Work = pw.run
	share.Give = func(ctx context.Context, _ int) error { _, err := pub.Flush(ctx); return err }
	g.start("partitions", share.Run)
	// Changes are published once the first share is taken: a change
	// left from before a crash, to a partition another writer has taken
	// over since, is dropped rather than published over its writes.
	first := share.Rounds()
	g.start("memory log", func(ctx context.Context) error {
		select {
		case <-first:
		case <-ctx.Done():
			return nil
		}
		return pub.Run(ctx)
	})
	g.start("consolidate", consolidate.Run)
	waits := []<-chan struct{}{first}
	if w.query {
		qcfg := query.DefaultConfig()
		qcfg.MergeJudge = judge
		qcfg.Replication = &query.Replication{Forward: true, Partitions: n, WaitFor: follower.WaitFor,
			Position: follower.Applied, Role: "writer"}
		svc := query.New(w.nc, w.eng, qcfg, w.reg, w.log)
		g.start(RoleQuery, svc.Run)
		waits = append(waits, svc.Ready())
	}
	w.markReady(g.ctx, waits...)
	return g.wait()
}

// partitionWork is what a writer runs for a partition it holds: its
// share of the store worker, its write endpoints, and for partition 0 the
// backups (one writer makes them, of the whole store) and the move of work
// from before partitions.
type partitionWork struct {
	w        *writer
	sw       *store.Worker
	pub      *memlog.Publisher
	follower *memlog.Follower
	judge    memory.MergeJudge
}

func (pw partitionWork) run(ctx context.Context, p int) error {
	w := pw.w
	g := newGroup(ctx, w.log)
	defer g.cancel()
	g.start(RoleStore, func(ctx context.Context) error { return pw.sw.RunPartition(ctx, p) })
	n := w.cfg.NATS.Partitions
	wcfg := query.DefaultConfig()
	wcfg.Name, wcfg.QueueGroup, wcfg.MergeJudge = schemas.WriterServiceName, schemas.WriterServiceName, pw.judge
	wcfg.Prefix = schemas.WriterPrefix + "." + strconv.Itoa(p)
	wcfg.AdminPrefix = schemas.WriterAdminPrefix + "." + strconv.Itoa(p)
	wcfg.Replication = &query.Replication{Flush: pw.pub.FlushSeq, WaitFor: pw.follower.WaitFor, Position: pw.follower.Applied,
		Role: "writer", Partitions: n, PartitionWriter: true, Partition: p}
	svc := query.New(w.nc, w.eng, wcfg, nil, w.log)
	g.start("writer endpoints", svc.Run)
	if p == 0 {
		backup, err := jobs.NewBackup(w.st, w.js, storeopen.BackupConfig(w.cfg, ""), w.log)
		if err != nil {
			return err
		}
		g.start("backup", backup.Run)
		// Work queued before partitions existed goes to its partitions.
		g.start("legacy work", pw.sw.RunLegacy)
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

// leaseTTL is the TTL the leases bucket holds, which expires the leases,
// so every writer renews and trusts its leases by the same clock; a
// writer whose nats.leaseTTL differs (another writer set the bucket since)
// says so.
func leaseTTL(ctx context.Context, kv jetstream.KeyValue, cfg *config.Config, log *slog.Logger) (time.Duration, error) {
	want, err := cfg.NATS.LeaseDuration()
	if err != nil {
		return 0, err
	}
	// Asked as the node starts, maybe while another is down: a timeout
	// is waited out, not a reason to stop.
	st, err := jsretry.Do(ctx, log, "writers' leases", func(ctx context.Context) (jetstream.KeyValueStatus, error) {
		return kv.Status(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("writers' leases: %w", err)
	}
	if got := st.TTL(); got > 0 && got != want {
		log.Warn("writer: the leases bucket's TTL differs from nats.leaseTTL; using the bucket's: give every writer the same nats.leaseTTL",
			"bucket", got, "config", want)
		return got, nil
	}
	return want, nil
}
