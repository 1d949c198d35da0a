package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/workers/capture"
	"github.com/clawmem/clawmem/workers/lessons"
	"github.com/clawmem/clawmem/workers/stage"
)

// nodeRun is what Run gives the roles it starts: the node's configuration,
// connection, metrics and group, and what the roles hand back.
type nodeRun struct {
	cfg      *config.Config
	roles    []string
	nc       *nats.Conn
	js       jetstream.JetStream
	reg      *prometheus.Registry
	metrics  *stage.Metrics
	log      *slog.Logger
	srv      *natsembed.Server // the embedded server, or nil
	ingestLn net.Listener      // bound before anything starts, with the ingest role
	g        *group

	// closers run, last first, when Run returns (after the roles stop).
	closers []func()
	// writerReady closes once the writer answers; nil without a writer.
	writerReady chan struct{}
	ingestURL   string
}

// roleStarters start each role Run is asked for, in this order: the
// writer first, since the run file waits for it.
var roleStarters = []struct {
	role  string
	start func(ctx context.Context, n *nodeRun) error
}{
	{RoleStore, startWriter},
	{RoleReplica, startReplica},
	{RoleCapture, startCapture},
	{RoleDistill, startDistill},
	{RoleWatch, startWatch},
	{RoleIngest, startIngest},
}

// holdStore closes a role's store when Run returns, after halting the
// roles: a failed start returns with roles running, and they stop before
// the store closes under them.
func (n *nodeRun) holdStore(closeStore func()) {
	n.closers = append(n.closers, closeStore, n.g.halt)
}

func startWriter(ctx context.Context, n *nodeRun) error {
	eng, st, err := storeopen.WriterEngine(ctx, n.cfg, n.log)
	if err != nil {
		return err
	}
	n.holdStore(func() { st.Close() })
	// The self-tests run beside the roles: a dead embedding endpoint
	// delays nothing, it is only reported.
	n.g.start("startup checks", func(ctx context.Context) error {
		checks := StartupChecks(ctx, eng, CheckTimeout, n.log)
		if ctx.Err() == nil {
			if err := writeStartupReport(n.cfg.DataDir, checks); err != nil {
				n.log.Warn("startup check results not saved for doctor", "err", err)
			}
		}
		return nil
	})
	w := &writer{cfg: n.cfg, nc: n.nc, js: n.js, eng: eng, st: st, reg: n.reg, metrics: n.metrics, log: n.log,
		query: slices.Contains(n.roles, RoleQuery), ready: make(chan struct{})}
	n.g.start(RoleStore, w.run)
	n.writerReady = w.ready
	return nil
}

func startReplica(ctx context.Context, n *nodeRun) error {
	run, closeStore, err := replica(ctx, n.cfg, n.nc, n.js, n.reg, n.log)
	if err != nil {
		return err
	}
	n.holdStore(closeStore)
	n.g.start(RoleReplica, run)
	return nil
}

func startCapture(_ context.Context, n *nodeRun) error {
	cfg := n.cfg
	if !*cfg.AutoCapture {
		return nil
	}
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return fmt.Errorf("embedding: %w", err)
	}
	sm, err := scopes.New(cfg.Scopes)
	if err != nil {
		return err
	}
	cc := capture.Config{CaptureAssistant: cfg.CaptureAssistant, MaxChars: cfg.CaptureMaxChars,
		Partitions: cfg.NATS.Partitions, Scopes: sm, Secrets: cfg.SecretsMode()}
	if cfg.SmartExtractionOn() {
		llm, err := distill.NewLLM(cfg.LLMConfig())
		if err != nil {
			return fmt.Errorf("smart extraction: %w", err)
		}
		x := cfg.SmartExtraction
		cc.Extract = &capture.ExtractConfig{LLM: llm, TokensPerHour: x.TokensPerAgentPerHour, Parallelism: x.Parallelism,
			Similar: x.Similar, Timeout: time.Duration(x.TimeoutSeconds) * time.Second, Registerer: n.reg}
		n.log.Info("smart extraction on", "model", llm.Model())
	}
	n.g.start(RoleCapture, capture.New(n.js, emb, cc, n.metrics, n.log).Run)
	return nil
}

func startDistill(_ context.Context, n *nodeRun) error {
	cfg := n.cfg
	d, err := NewDistiller(cfg)
	if err != nil {
		return err
	}
	cc := TranscriptConfig(cfg)
	dc := lessons.Config{Workers: cfg.Distill.Workers, StateDir: cfg.Watch.StateDir,
		SessionMemory: cfg.SessionMemory.Enabled, SessionMemoryMessages: cfg.SessionMemory.MessageCount,
		Partitions: cc.Partitions, Scopes: cc.Scopes}
	n.g.start(RoleDistill, lessons.NewWorker(n.js, d, dc, n.metrics, n.log).Run)
	if cfg.Distill.Schedule != "off" {
		cd, err := lessons.NewTranscriptDistiller(n.js, d, cc, n.log)
		if err != nil {
			return err
		}
		n.g.start("cursor distiller", cd.Run)
	}
	return nil
}

func startWatch(_ context.Context, n *nodeRun) error {
	if !*n.cfg.Watch.Enabled {
		return nil
	}
	w, err := watcher.New(watcher.Config{StateDir: n.cfg.Watch.StateDir, Registerer: n.reg, Secrets: n.cfg.SecretsMode()}, n.js, n.log)
	if err != nil {
		return err
	}
	n.g.start(RoleWatch, w.Run)
	return nil
}

func startIngest(_ context.Context, n *nodeRun) error {
	cfg := n.cfg
	token, err := envsubst.Expand(cfg.Ingest.Token)
	if err != nil {
		return fmt.Errorf("ingest.token: %w", err)
	}
	if token == "" && !cfg.Ingest.Insecure {
		// Hooks of this machine's user read it from the data dir.
		if token, err = authdir.Token(cfg.DataDir, authdir.IngestToken); err != nil {
			return fmt.Errorf("ingest token: %w", err)
		}
	}
	ic := ingest.Config{Addr: cfg.Ingest.Addr, Token: token, Insecure: cfg.Ingest.Insecure, AllowedHosts: cfg.Ingest.AllowedHosts}
	agentTokens := make(map[string]string, len(cfg.Ingest.AgentTokens))
	for agent, tok := range cfg.Ingest.AgentTokens {
		if agentTokens[agent], err = envsubst.Expand(tok); err != nil {
			return fmt.Errorf("ingest.agentTokens.%s: %w", agent, err)
		}
	}
	tokens, err := httpapi.NewTokens(cfg.DataDir, agentTokens)
	if err != nil {
		return err
	}
	// The HTTP API asks the query service as the token's agent, over this
	// node's connection: the same subjects and checks as every client.
	ic.API = httpapi.New(client.NewNATS(n.nc), tokens, httpapi.WithLogger(n.log))
	if n.srv != nil {
		ic.Admit = n.srv.CheckDisk
	}
	if err := ic.Validate(); err != nil {
		return err
	}
	n.ingestURL = "http://" + n.ingestLn.Addr().String()
	srvIngest := ingest.New(ic, producers.New(n.js, producers.WithSecrets(cfg.SecretsMode())), n.reg, n.log)
	n.g.start(RoleIngest, func(ctx context.Context) error { return srvIngest.Serve(ctx, n.ingestLn) })
	// Agents hand in their hook events over NATS here (they may not
	// write the events stream themselves).
	hooks := producers.NewHookService(producers.New(n.js, producers.WithSecrets(cfg.SecretsMode())), n.log)
	n.g.start("hook service", func(ctx context.Context) error { return hooks.Run(ctx, n.nc) })
	n.log.Info("hook ingest listening", "url", n.ingestURL)
	return nil
}
