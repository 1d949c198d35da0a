package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/jsbound"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/workers/stage"
)

// Roles `clawmem up` runs and `clawmem worker` runs one of.
const (
	RoleCapture = "capture"
	RoleStore   = "store"
	RoleQuery   = "query"
	RoleIngest  = "ingest"
	RoleDistill = "distill"
	RoleWatch   = "watch"
	// RoleUI runs no pipeline role: a process of only Services (clawmem ui).
	RoleUI = "ui"
	// RoleReplica is a query replica: its own copy of the memories, built
	// and kept up from the memory log, answering reads and forwarding
	// writes to the writer (`clawmem worker query`).
	RoleReplica = "replica"
)

// Options say which roles Run runs and where.
type Options struct {
	// NATSURL is the server to use; empty: nats.url, else (Embedded) an
	// embedded server, else the local `clawmem up`'s.
	NATSURL string
	Roles   []string
	// Embedded allows starting an embedded NATS server.
	Embedded bool
	Log      *slog.Logger
	// Services run beside the roles, on the same NATS (the web console).
	Services []Service
}

// Service is something that runs beside the roles until ctx ends, given
// the roles' NATS connection and its URL, and a listener on Listen
// (listened on before the roles start, so a taken port fails the start;
// its URL goes in the run file under Name).
type Service struct {
	Name   string
	Listen string
	Run    func(ctx context.Context, nc *nats.Conn, natsURL string, ln net.Listener) error
}

// ListenError is a listener Run could not bind at start (a taken port),
// returned before anything started, so that the command which chose the
// address can say how to choose another.
type ListenError struct {
	Name string // the role or service that listens: ingest, console
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("%s: listen on %s: %v", e.Name, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// Run runs the roles until ctx ends, then drains in-flight work.
func Run(ctx context.Context, cfg *config.Config, o Options) error {
	log, roles, natsURL := o.Log, o.Roles, o.NATSURL
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var err error
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	if natsURL == "" {
		natsURL = cfg.NATS.URL
	}
	if natsURL, err = envsubst.Expand(natsURL); err != nil {
		return fmt.Errorf("nats.url: %w", err)
	}
	if natsURL == "" && o.Embedded {
		// Until the run file is written, this marker makes other commands
		// wait for this instance rather than open its store themselves.
		if err := instance.MarkStarting(cfg.DataDir); err != nil {
			return err
		}
		defer instance.UnmarkStarting(cfg.DataDir)
	}
	// Every listener is bound before anything starts: a taken port is then
	// the one error, not one among the failures of roles stopped halfway.
	var ingestLn net.Listener
	if slices.Contains(roles, RoleIngest) {
		if ingestLn, err = net.Listen("tcp", cfg.Ingest.Addr); err != nil {
			return &ListenError{Name: RoleIngest, Addr: cfg.Ingest.Addr, Err: err}
		}
		defer ingestLn.Close()
	}
	svcLns := make([]net.Listener, len(o.Services))
	for i, svc := range o.Services {
		if svcLns[i], err = net.Listen("tcp", svc.Listen); err != nil {
			return &ListenError{Name: svc.Name, Addr: svc.Listen, Err: err}
		}
		defer svcLns[i].Close()
	}
	var srv *natsembed.Server
	if natsURL == "" {
		if !o.Embedded {
			natsURL = instance.LocalNATS(cfg)
		} else {
			always, interval, err := cfg.NATS.SyncPolicy()
			if err != nil {
				return fmt.Errorf("nats.sync is %w", err)
			}
			syncPolicy := natsembed.Sync{Always: always, Interval: interval}
			storeDir := filepath.Join(cfg.DataDir, "nats")
			if moved, err := natsauth.MigrateStore(storeDir); err != nil {
				return err
			} else if moved {
				log.Info("JetStream state moved into clawmem's account (the embedded server now requires credentials)")
			}
			// The server admits only holders of the data dir's seeds:
			// clawmem's own processes, and each agent given credentials by
			// `clawmem agent add`.
			srv, err = natsembed.Start(natsembed.Options{StoreDir: storeDir, Port: cfg.NATS.Port, Logger: log, Sync: syncPolicy,
				Base: func() (*server.Options, error) { return natsauth.ServerOptions(cfg.DataDir) }})
			if err != nil {
				return err
			}
			defer srv.Stop()
			natsURL = srv.ClientURL()
			log.Info("embedded NATS started", "url", natsURL)
			// A full disk fails JetStream's writes for good until the
			// server restarts: the guard restarts it once there is room.
			guardCtx, stopGuard := context.WithCancel(ctx)
			var guard sync.WaitGroup
			guard.Go(func() { srv.Guard(guardCtx, time.Second) })
			defer guard.Wait()
			defer stopGuard()
		}
	}
	nc, err := instance.Connect(natsURL, cfg, "clawmem-"+roles[0])
	if err != nil {
		return err
	}
	defer nc.Close()
	if srv != nil {
		sub, err := serveAuthReload(nc, srv, log)
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
	}
	// An asynchronous publish whose ack is lost fails after the bound
	// too, rather than holding its place among the pending publishes.
	rawJS, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(jsbound.Timeout))
	if err != nil {
		return err
	}
	// Every publish and KV call of the roles gets its own deadline: a
	// reply lost in a reconnect must fail the call, not stall the stage.
	js := jsbound.Wrap(rawJS, jsbound.Timeout)
	tc := TopologyConfig(cfg, log)
	if !slices.Contains(roles, RoleStore) {
		// The lease TTL is the writers': a node without one leaves it as
		// the writers set it (nats.leaseTTL on a capture or query node
		// would otherwise change how long the writers' leases last).
		tc.LeaseTTL = 0
	}
	if err := topology.Ensure(ctx, js, tc); err != nil {
		return fmt.Errorf("set up streams: %w", err)
	}
	reg := prometheus.NewRegistry()
	promreg.Register(reg, collectors.NewGoCollector(), log, "go runtime")
	promreg.Register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), log, "process")
	stageMetrics := stage.NewMetrics(reg)

	g := newGroup(ctx, log)
	defer g.cancel()
	ctx = g.ctx
	n := &nodeRun{cfg: cfg, roles: roles, nc: nc, js: js, reg: reg, metrics: stageMetrics, log: log, srv: srv, ingestLn: ingestLn, g: g}
	// What a role opened (a store) closes when Run returns, after the
	// roles have stopped.
	defer func() {
		for i := len(n.closers) - 1; i >= 0; i-- {
			n.closers[i]()
		}
	}()
	for _, r := range roleStarters {
		if slices.Contains(roles, r.role) {
			if err := r.start(ctx, n); err != nil {
				return err
			}
		}
	}
	writerReady, ingestURL := n.writerReady, n.ingestURL
	urls := map[string]string{}
	for i, svc := range o.Services {
		ln := svcLns[i]
		urls[svc.Name] = "http://" + ln.Addr().String()
		g.start(svc.Name, func(ctx context.Context) error { return svc.Run(ctx, nc, natsURL, ln) })
		log.Info(svc.Name+" listening", "url", urls[svc.Name])
	}
	if srv != nil {
		// Other commands find this instance by its run file: write it once
		// the writer answers (a standby of the embedded server's own is
		// impossible, so this is at once after start-up).
		if writerReady != nil {
			select {
			case <-writerReady:
			case <-ctx.Done():
				return g.wait()
			}
		}
		if err := instance.WriteRunInfo(cfg.DataDir, instance.RunInfo{PID: os.Getpid(), NATSURL: natsURL, IngestURL: ingestURL, URLs: urls,
			Started: time.Now().UTC().Format(time.RFC3339)}); err != nil {
			return err
		}
		defer os.Remove(filepath.Join(cfg.DataDir, instance.RunFile))
	}
	log.Info("clawmem running", "roles", roles, "dataDir", cfg.DataDir)
	<-ctx.Done()
	log.Info("shutting down: draining in-flight work")
	return g.wait()
}
