package node

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
	"github.com/clawmem/clawmem/workers/query"
)

// replica opens a query replica's store and returns its role: catch up
// with the memory log, then answer reads from the copy while following the
// log, forwarding writes to the writer. A log entry it cannot apply ends
// the role, and with it the process: a replica must not answer from a
// state the log does not say.
func replica(ctx context.Context, cfg *config.Config, nc *nats.Conn, js jetstream.JetStream, reg prometheus.Registerer, log *slog.Logger) (func(context.Context) error, func(), error) {
	eng, st, err := storeopen.ReplicaEngine(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	lag := promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "clawmem_replica_lag",
		Help: "Memory log entries the replica has not applied yet."}), log, "replica")
	run := func(ctx context.Context) error {
		f := memlog.NewFollower(js, st, log)
		start := time.Now()
		n, err := f.CatchUp(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		log.Info("replica caught up with the memory log", "entries", n, "seq", f.Applied(), "memories", st.Len(), "took", time.Since(start).Round(time.Millisecond))
		qcfg := query.DefaultConfig()
		qcfg.Replication = &query.Replication{Forward: true, Partitions: cfg.NATS.Partitions, WaitFor: f.WaitFor, Position: f.Applied, Role: "replica"}
		svc := query.New(nc, eng, qcfg, reg, log)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		served := make(chan error, 1)
		go func() { served <- svc.Run(ctx) }()
		go reportLag(ctx, js, f, lag)
		followed := f.Run(ctx)
		cancel()
		return errors.Join(followed, <-served)
	}
	return run, func() { st.Close() }, nil
}

// reportLag sets the lag gauge each second: the log's last sequence less
// the replica's.
func reportLag(ctx context.Context, js jetstream.JetStream, f *memlog.Follower, lag prometheus.Gauge) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s, err := js.Stream(ctx, schemas.StreamMemories)
		if err != nil {
			continue
		}
		if info, err := s.Info(ctx); err == nil {
			lag.Set(float64(info.State.LastSeq) - float64(min(f.Applied(), info.State.LastSeq)))
		}
	}
}
