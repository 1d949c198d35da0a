package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/cmd/clawmem/internal/config"
	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/workers"
	"github.com/clawmem/clawmem/workers/query"
)

// runFile records how to reach a running `clawmem up`, so other clawmem
// commands with the same data dir find it without flags.
const runFile = "run.json"

type runInfo struct {
	PID       int    `json:"pid"`
	NATSURL   string `json:"natsUrl"`
	IngestURL string `json:"ingestUrl,omitempty"`
	Started   string `json:"started"`
}

// Roles `clawmem up` runs and `clawmem worker` runs one of.
const (
	roleCapture = "capture"
	roleStore   = "store"
	roleQuery   = "query"
	roleIngest  = "ingest"
	roleDistill = "distill"
	roleWatch   = "watch"
)

func (a *app) upCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run everything: NATS (embedded), store, capture, distill, query service, hook ingest and the session watcher",
		Long: `Runs the whole pipeline in one process. With no --nats-url it embeds a NATS server with
JetStream under <data-dir>/nats, listening on 127.0.0.1:4244; other clawmem commands using the
same data dir find it. The hook ingest endpoint listens on 127.0.0.1:7433 (POST /v1/hooks/{kind},
GET /healthz, GET /metrics). Session files under OpenClaw's state dir (watch.stateDir) are
followed into the transcript stream, ended sessions are distilled into lessons, and the cursor
distiller runs on distill.schedule. SIGINT/SIGTERM drain in-flight work and stop cleanly.`,
		Example: "  clawmem up\n  clawmem up --data-dir /srv/clawmem\n  clawmem up --nats-url nats://nats.internal:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), a.natsURL, []string{roleStore, roleQuery, roleCapture, roleIngest, roleDistill, roleWatch}, true)
		},
	}
	return cmd
}

func (a *app) workerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker capture|store|query|ingest|distill|watch",
		Short: "Run one role of the pipeline against an external NATS",
		Long: `Runs a single role, for deployments that scale roles apart. The store role owns the
store and also serves queries (they share its in-memory vector index): run exactly one
store worker per store. capture, distill and ingest are stateless: run as many as you like
(distill also runs the scheduled cursor distiller; its cursors are compare-and-set, so
several are safe). watch follows one machine's OpenClaw session files: run one per machine.`,
		Example:   "  clawmem worker store --nats-url nats://nats:4222\n  clawmem worker capture --nats-url nats://nats:4222",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{roleCapture, roleStore, roleQuery, roleIngest, roleDistill, roleWatch},
		RunE: func(cmd *cobra.Command, args []string) error {
			roles := []string{args[0]}
			switch args[0] {
			case roleStore, roleQuery:
				roles = []string{roleStore, roleQuery}
			case roleCapture, roleIngest, roleDistill, roleWatch:
			default:
				return fmt.Errorf("unknown role %q: want capture, store, query, ingest, distill or watch", args[0])
			}
			return a.serve(cmd.Context(), a.natsURL, roles, false)
		},
	}
	return cmd
}

func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// serve runs roles until ctx ends. embedded allows starting a NATS server.
func (a *app) serve(ctx context.Context, natsURL string, roles []string, embedded bool) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	log := a.logger()
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return err
	}
	if natsURL == "" {
		natsURL = cfg.NATS.URL
	}
	if natsURL, err = envsubst.Expand(natsURL); err != nil {
		return fmt.Errorf("nats.url: %w", err)
	}
	var srv *natsembed.Server
	if natsURL == "" {
		if !embedded {
			if natsURL, err = a.localNATS(cfg); err != nil {
				return err
			}
		} else {
			srv, err = natsembed.Start(natsembed.Options{StoreDir: filepath.Join(cfg.DataDir, "nats"), Port: cfg.NATS.Port, Logger: log})
			if err != nil {
				return err
			}
			defer srv.Stop()
			natsURL = srv.ClientURL()
			log.Info("embedded NATS started", "url", natsURL)
		}
	}
	nc, err := connectNATS(natsURL, cfg, "clawmem-"+roles[0])
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		return fmt.Errorf("set up streams: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	stageMetrics := workers.NewStageMetrics(reg)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := func(name string, run func(context.Context) error) {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				log.Error("role failed", "role", name, "err", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
				cancel()
			}
		})
	}
	has := func(r string) bool {
		for _, x := range roles {
			if x == r {
				return true
			}
		}
		return false
	}
	if has(roleStore) {
		eng, st, err := openEngine(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer st.Close()
		timeout := checkTimeout
		// The self-tests run beside the roles: a dead embedding endpoint
		// delays nothing, it is only reported.
		start("startup checks", func(ctx context.Context) error {
			checks := startupChecks(ctx, eng, timeout, log)
			if ctx.Err() == nil {
				if err := writeStartupReport(cfg.DataDir, checks); err != nil {
					log.Warn("startup check results not saved for doctor", "err", err)
				}
			}
			return nil
		})
		backup, err := workers.NewBackupJob(st, js, backupConfig(cfg, ""), log)
		if err != nil {
			return err
		}
		start("backup", backup.Run)
		cj := cfg.Jobs.Consolidate
		qcfg := query.DefaultConfig()
		copts := memory.ConsolidateOptions{MergeMin: cj.MergeMin, ArchiveFloor: cj.ArchiveFloor, ArchiveHalfLifeDays: cj.ArchiveHalfLifeDays}
		if llm, err := distill.NewLLM(cfg.LLMConfig()); err != nil {
			return fmt.Errorf("consolidation judge: %w", err)
		} else if llm != nil {
			copts.Judge = workers.LLMJudge(llm)
			qcfg.MergeJudge = copts.Judge
		}
		consolidate, err := workers.NewConsolidateJob(eng, cj.Schedule, copts, log)
		if err != nil {
			return err
		}
		start("consolidate", consolidate.Run)
		start(roleStore, workers.NewStoreWorker(js, eng, workers.StageConfig{}, stageMetrics, reg, log).Run)
		start(roleQuery, query.New(nc, eng, qcfg, reg, log).Run)
	}
	if has(roleCapture) && *cfg.AutoCapture {
		emb, err := embed.New(cfg.EmbedConfig())
		if err != nil {
			return fmt.Errorf("embedding: %w", err)
		}
		cc := workers.CaptureConfig{CaptureAssistant: cfg.CaptureAssistant, MaxChars: cfg.CaptureMaxChars}
		if cfg.SmartExtractionOn() {
			llm, err := distill.NewLLM(cfg.LLMConfig())
			if err != nil {
				return fmt.Errorf("smart extraction: %w", err)
			}
			x := cfg.SmartExtraction
			cc.Extract = &workers.ExtractConfig{LLM: llm, TokensPerHour: x.TokensPerAgentPerHour, Parallelism: x.Parallelism,
				Similar: x.Similar, Timeout: time.Duration(x.TimeoutSeconds) * time.Second, Registerer: reg}
			log.Info("smart extraction on", "model", llm.Model())
		}
		start(roleCapture, workers.NewCapture(js, emb, cc, stageMetrics, log).Run)
	}
	if has(roleDistill) {
		d, err := newDistiller(cfg)
		if err != nil {
			return err
		}
		dc := workers.DistillConfig{Workers: cfg.Distill.Workers, StateDir: cfg.Watch.StateDir,
			SessionMemory: cfg.SessionMemory.Enabled, SessionMemoryMessages: cfg.SessionMemory.MessageCount}
		start(roleDistill, workers.NewDistillWorker(js, d, dc, stageMetrics, log).Run)
		if cfg.Distill.Schedule != "off" {
			cd, err := workers.NewCursorDistiller(js, d, cursorConfig(cfg), log)
			if err != nil {
				return err
			}
			start("cursor distiller", cd.Run)
		}
	}
	if has(roleWatch) && *cfg.Watch.Enabled {
		w, err := watcher.New(watcher.Config{StateDir: cfg.Watch.StateDir, Registerer: reg}, js, log)
		if err != nil {
			return err
		}
		start(roleWatch, w.Run)
	}
	ingestURL := ""
	if has(roleIngest) {
		token, err := envsubst.Expand(cfg.Ingest.Token)
		if err != nil {
			return fmt.Errorf("ingest.token: %w", err)
		}
		ic := ingest.Config{Addr: cfg.Ingest.Addr, Token: token}
		if err := ic.Validate(); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", cfg.Ingest.Addr)
		if err != nil {
			return fmt.Errorf("ingest: listen on %s: %w", cfg.Ingest.Addr, err)
		}
		ingestURL = "http://" + ln.Addr().String()
		srvIngest := ingest.New(ic, producers.New(js), reg, log)
		start(roleIngest, func(ctx context.Context) error { return srvIngest.Serve(ctx, ln) })
		log.Info("hook ingest listening", "url", ingestURL)
	}
	if srv != nil {
		if err := writeRunInfo(cfg.DataDir, runInfo{PID: os.Getpid(), NATSURL: natsURL, IngestURL: ingestURL,
			Started: time.Now().UTC().Format(time.RFC3339)}); err != nil {
			return err
		}
		defer os.Remove(filepath.Join(cfg.DataDir, runFile))
	}
	log.Info("clawmem running", "roles", roles, "dataDir", cfg.DataDir)
	<-ctx.Done()
	log.Info("shutting down: draining in-flight work")
	wg.Wait()
	return errors.Join(errs...)
}

func writeRunInfo(dir string, info runInfo) error {
	b, _ := json.MarshalIndent(info, "", "  ")
	tmp := filepath.Join(dir, runFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, runFile))
}

// localNATS finds the NATS of the `clawmem up` using this data dir, else
// the default embedded address.
func (a *app) localNATS(cfg *config.Config) (string, error) {
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, runFile))
	if err == nil {
		var info runInfo
		if json.Unmarshal(b, &info) == nil && info.NATSURL != "" {
			return info.NATSURL, nil
		}
	}
	return fmt.Sprintf("nats://127.0.0.1:%d", cfg.NATS.Port), nil
}

func connectNATS(url string, cfg *config.Config, name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond)}
	if cfg.NATS.Credentials != "" {
		opts = append(opts, nats.UserCredentials(cfg.NATS.Credentials))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w (is `clawmem up` running?)", url, err)
	}
	return nc, nil
}

// startupChecksFile holds the self-test results of the running clawmem
// up, for doctor.
const startupChecksFile = "startup-checks.json"

// startupReport is what startupChecksFile holds.
type startupReport struct {
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
	Checks []check   `json:"checks"`
}

func writeStartupReport(dir string, checks []check) error {
	b, _ := json.MarshalIndent(startupReport{PID: os.Getpid(), Time: time.Now().UTC(), Checks: checks}, "", "  ")
	tmp := filepath.Join(dir, startupChecksFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, startupChecksFile))
}

// readStartupReport returns the running instance's self-test results, or
// false when they are not written yet (or are a stopped process's).
func readStartupReport(dir string) (startupReport, bool) {
	var r startupReport
	b, err := os.ReadFile(filepath.Join(dir, startupChecksFile))
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID <= 0 || !processAlive(r.PID) {
		return r, false
	}
	return r, true
}

// startupChecks runs the embedder and retrieval self-tests, each bounded
// by timeout (the seed's 8 s), and logs the results. Callers run it in the
// background: start-up never waits for it.
func startupChecks(ctx context.Context, eng *memory.Engine, timeout time.Duration, log *slog.Logger) []check {
	checks := selfTests(ctx, eng, timeout)
	for _, c := range checks {
		if c.OK {
			log.Info("startup check ok", "check", c.Name, "result", c.Detail)
		} else if ctx.Err() == nil {
			log.Warn("startup check failed; clawmem keeps running and retries on use", "check", c.Name, "err", c.Detail)
		}
	}
	return checks
}

// selfTests embeds the word "test" and recalls "test" through the whole
// retrieval pipeline, at the same time, each within timeout.
func selfTests(ctx context.Context, eng *memory.Engine, timeout time.Duration) []check {
	var wg sync.WaitGroup
	checks := make([]check, 2)
	wg.Go(func() { checks[0] = embedderCheck(ctx, eng.Embedder(), timeout) })
	wg.Go(func() { checks[1] = retrievalCheck(ctx, eng, timeout) })
	wg.Wait()
	return checks
}

func embedderCheck(ctx context.Context, emb embed.Embedder, timeout time.Duration) check {
	return bounded(ctx, "embedder", timeout, func(ctx context.Context) (string, error) {
		res := emb.Test(ctx)
		if !res.Success {
			return "", fmt.Errorf("%s: %s", emb.Model(), res.Error)
		}
		return fmt.Sprintf("%s answers with %d dimensions", emb.Model(), res.Dimensions), nil
	})
}

func retrievalCheck(ctx context.Context, eng *memory.Engine, timeout time.Duration) check {
	return bounded(ctx, "retrieval", timeout, func(ctx context.Context) (string, error) {
		res, err := eng.Recall(ctx, memory.Admin(), "test", memory.RecallOptions{Limit: 1})
		if err != nil {
			return "", err
		}
		fts := "full-text search on"
		if !eng.Backend().HasFullText() {
			fts = "full-text search UNAVAILABLE"
		}
		return fmt.Sprintf("a test recall answered: mode %s, rerank %s, %s", res.Mode, eng.Retriever().RerankMode(), fts), nil
	})
}

// bounded runs fn as the check name and gives up after timeout even when
// fn ignores its context (an HTTP client without a deadline, a stuck
// driver): the check then reports the timeout and fn is left to finish on
// its own.
func bounded(ctx context.Context, name string, timeout time.Duration, fn func(context.Context) (string, error)) check {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		detail string
		err    error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		d, err := fn(tctx)
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-tctx.Done():
		r.err = tctx.Err()
	}
	switch {
	case r.err == nil:
		return check{Name: name, OK: true, Detail: fmt.Sprintf("%s (%d ms)", r.detail, time.Since(start).Milliseconds())}
	case ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded):
		return check{Name: name, Detail: fmt.Sprintf("timed out after %s", timeout)}
	}
	return check{Name: name, Detail: r.err.Error()}
}
