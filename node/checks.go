package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/producers/watcher"
)

// CheckTimeout bounds each startup or doctor check, as the seed's startup
// checks do, so a dead endpoint costs seconds, not a hang. Tests shorten it.
var CheckTimeout = 8 * time.Second

// Checks is doctor's report.
type Checks []Check

// Failed counts the checks that did not pass.
func (cs Checks) Failed() int {
	n := 0
	for _, c := range cs {
		if !c.OK {
			n++
		}
	}
	return n
}

// WriteText prints one line per check, and how to fix a failed one.
func (cs Checks) WriteText(w io.Writer) error {
	for _, c := range cs {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "[%s] %-9s %s\n", mark, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "           fix: %s\n", c.Fix)
		}
	}
	return nil
}

// Check is one line of doctor's report.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// TranscriptChecks report, per agent, which OpenClaw transcript source the
// running clawmem's watcher follows and any database it cannot read; nc
// is a connection to that clawmem's NATS, or the error dialling it.
func TranscriptChecks(ctx context.Context, nc *nats.Conn, dialErr error) []Check {
	if dialErr != nil {
		return []Check{{Name: "watcher", Detail: "cannot reach the running clawmem: " + dialErr.Error()}}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return []Check{{Name: "watcher", Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	st, err := watcher.Status(ctx, js)
	if err != nil {
		return []Check{{Name: "watcher", OK: true, Detail: "no transcript status yet (the watcher's first scan has not finished)"}}
	}
	if len(st) == 0 {
		return []Check{{Name: "watcher", OK: true, Detail: "no OpenClaw agents under the state dir yet"}}
	}
	var out []Check
	for _, s := range st {
		c := Check{Name: "watcher", OK: s.Problem == ""}
		switch s.Source {
		case "sqlite":
			c.Detail = fmt.Sprintf("agent %s: OpenClaw SQLite transcripts %s (cursor at row %d)", s.Agent, s.Path, s.RowID)
		case "jsonl":
			c.Detail = fmt.Sprintf("agent %s: OpenClaw JSONL session files in %s", s.Agent, s.Path)
		default:
			c.Detail = fmt.Sprintf("agent %s: no transcripts found yet (hook events still carry messages)", s.Agent)
		}
		if s.Problem != "" {
			c.Detail += ": " + s.Problem
			c.Fix = "the watcher retries on every change; hook events still carry the messages. If OpenClaw was upgraded, check clawmem's release notes for its transcript schema"
		}
		out = append(out, c)
	}
	return out
}

// StoreChecks opens the store and runs a test recall on it. When a running
// clawmem holds the store, they report that instance's startup self-tests
// instead. A store that does not exist yet is not made: the checks run on
// a scratch store, removed after.
func StoreChecks(ctx context.Context, cfg *config.Config) []Check {
	dir := cfg.DBPath
	if cfg.Store.Backend != "lancedb" {
		// A check must not make the store it checks.
		ok, err := sqlitestore.Exists(ctx, dir)
		if err != nil {
			return []Check{{Name: "store", Detail: err.Error(), Fix: "point dbPath (or --data-dir) at a directory of clawmem's own"}}
		}
		if !ok {
			// Run the checks on a scratch store instead, which proves
			// the embedder, full-text search and recall all the same.
			scratch, err := os.MkdirTemp("", "clawmem-doctor-")
			if err != nil {
				return []Check{{Name: "store", Detail: err.Error()}}
			}
			defer os.RemoveAll(scratch)
			c := *cfg
			c.DBPath = scratch
			checks := openStoreChecks(ctx, &c)
			for i := range checks {
				if checks[i].Name == "store" && checks[i].OK {
					checks[i].Detail = "no store at " + dir + " yet (`clawmem up` creates it); a scratch store passed: " + checks[i].Detail
				}
			}
			return checks
		}
	}
	return openStoreChecks(ctx, cfg)
}

// openStoreChecks opens the store at cfg.DBPath, creating it when absent,
// and checks it.
func openStoreChecks(ctx context.Context, cfg *config.Config) []Check {
	dir := cfg.DBPath
	eng, s, err := storeopen.Engine(ctx, cfg, slog.New(slog.DiscardHandler))
	switch {
	case errors.Is(err, engine.ErrLocked):
		return append([]Check{{Name: "store", OK: true, Detail: dir + " is open in a running clawmem"}}, RunningChecks(cfg.DataDir)...)
	case errors.Is(err, engine.ErrDimensionMismatch):
		return []Check{{Name: "store", Detail: err.Error(),
			Fix: "set embedding.dimensions to the stored size, or point dbPath at a new directory and run `clawmem reembed --source-db " + dir + "`"}}
	case err != nil:
		return []Check{{Name: "store", Detail: err.Error(), Fix: "Check that " + dir + " is writable"}}
	}
	defer s.Close()
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		return []Check{{Name: "store", Detail: err.Error()}}
	}
	fts := "full-text search on"
	if !s.HasFullText() {
		fts = "full-text search UNAVAILABLE (vector-only retrieval)"
	}
	store := Check{Name: "store", OK: true, Detail: fmt.Sprintf("%s: %s, %d dimensions, %s", dir, st.Counted(), s.Dimensions(), fts)}
	checks := []Check{store}
	if ss, ok := s.(*sqlitestore.Store); ok {
		checks = append(checks, VectorsCheck(ss.Vectors()))
	}
	return append(checks, RetrievalCheck(ctx, eng, CheckTimeout))
}

// VectorsCheck says where an open loaded the vectors from: the segment a
// clean close wrote, or the database, and why (a damaged segment is
// reported, and costs only time: the database is the truth).
func VectorsCheck(v sqlitestore.VectorSource) Check {
	c := Check{Name: "vectors", OK: true, Detail: fmt.Sprintf("loaded from the %s in %d ms", v.From, v.Took.Milliseconds())}
	if v.Why != "" {
		c.Detail += " (" + v.Why + ")"
	}
	if v.Memory == "int8" {
		state := "mapped"
		if !v.Mapped {
			state = "NOT yet mapped"
		}
		c.Detail += "; int8 memory mode, float32 vectors " + state + " from the segment"
	}
	if v.SpillError != "" {
		c.OK = false
		c.Detail += "; moving vectors to the segment failed: " + v.SpillError
		c.Fix = "check the store directory has room for the segment (about 4 bytes per dimension per memory); until then the vectors stay in memory"
	}
	return c
}

// RunningChecks are the startup self-tests of the clawmem running on
// dataDir, as it recorded them.
func RunningChecks(dataDir string) []Check {
	rep, ok := ReadStartupReport(dataDir)
	if !ok {
		return []Check{{Name: "startup", OK: true, Detail: "the running clawmem's self-tests have not finished yet"}}
	}
	var out []Check
	for _, c := range rep.Checks {
		c.Detail = fmt.Sprintf("%s: %s (clawmem up, pid %d, %s)", c.Name, c.Detail, rep.PID, rep.Time.Local().Format(time.DateTime))
		c.Name = "startup"
		if !c.OK && strings.HasPrefix(c.Detail, "embedder") {
			c.Fix = "check embedding.baseURL is reachable from the clawmem process, and restart it once fixed"
		}
		out = append(out, c)
	}
	return out
}

// StartupChecksFile holds the self-test results of the running clawmem
// up, for doctor.
const StartupChecksFile = "startup-checks.json"

// StartupReport is what StartupChecksFile holds.
type StartupReport struct {
	PID    int       `json:"pid"`
	Time   time.Time `json:"time"`
	Checks []Check   `json:"checks"`
}

func writeStartupReport(dir string, checks []Check) error {
	b, _ := json.MarshalIndent(StartupReport{PID: os.Getpid(), Time: time.Now().UTC(), Checks: checks}, "", "  ")
	tmp := filepath.Join(dir, StartupChecksFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, StartupChecksFile))
}

// ReadStartupReport returns the running instance's self-test results, or
// false when they are not written yet (or are a stopped process's).
func ReadStartupReport(dir string) (StartupReport, bool) {
	var r StartupReport
	b, err := os.ReadFile(filepath.Join(dir, StartupChecksFile))
	if err != nil || json.Unmarshal(b, &r) != nil || r.PID <= 0 || !instance.ProcessAlive(r.PID) {
		return r, false
	}
	return r, true
}

// StartupChecks runs the embedder and retrieval self-tests, each bounded
// by timeout (the seed's 8 s), and logs the results. Callers run it in the
// background: start-up never waits for it.
func StartupChecks(ctx context.Context, eng *memory.Engine, timeout time.Duration, log *slog.Logger) []Check {
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
func selfTests(ctx context.Context, eng *memory.Engine, timeout time.Duration) []Check {
	var wg sync.WaitGroup
	checks := make([]Check, 2)
	wg.Go(func() { checks[0] = EmbedderCheck(ctx, eng.Embedder(), timeout) })
	wg.Go(func() { checks[1] = RetrievalCheck(ctx, eng, timeout) })
	wg.Wait()
	return checks
}

func EmbedderCheck(ctx context.Context, emb embed.Embedder, timeout time.Duration) Check {
	return bounded(ctx, "embedder", timeout, func(ctx context.Context) (string, error) {
		res := emb.Test(ctx)
		if !res.Success {
			return "", fmt.Errorf("%s: %s", emb.Model(), res.Error)
		}
		return fmt.Sprintf("%s answers with %d dimensions", emb.Model(), res.Dimensions), nil
	})
}

func RetrievalCheck(ctx context.Context, eng *memory.Engine, timeout time.Duration) Check {
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
func bounded(ctx context.Context, name string, timeout time.Duration, fn func(context.Context) (string, error)) Check {
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
		return Check{Name: name, OK: true, Detail: fmt.Sprintf("%s (%d ms)", r.detail, time.Since(start).Milliseconds())}
	case ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded):
		return Check{Name: name, Detail: fmt.Sprintf("timed out after %s", timeout)}
	}
	return Check{Name: name, Detail: r.err.Error()}
}

// Doctor checks that the embedder answers and that the store opens and
// recalls; with a clawmem running on the data dir, it reports that
// instance's self-tests and its watcher's transcript sources (dial reaches
// its NATS).
func Doctor(ctx context.Context, cfg *config.Config, dial func() (*nats.Conn, error)) Checks {
	checks := []Check{{Name: "config", OK: true, Detail: "data dir " + cfg.DataDir + ", store " + cfg.DBPath}}
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return append(checks, Check{Name: "embedder", Detail: err.Error(),
			Fix: "set embedding.model and embedding.dimensions (or embedding.provider: local) in the config"})
	}
	embedder := EmbedderCheck(ctx, emb, CheckTimeout)
	if !embedder.OK {
		embedder.Fix = "check embedding.baseURL is reachable, embedding.apiKey (and that its ${ENV} variable is set for this process) and embedding.model"
	}
	checks = append(checks, embedder)
	checks = append(checks, StoreChecks(ctx, cfg)...)
	if instance.Running(cfg.DataDir) {
		checks = append(checks, WatchChecks(ctx, cfg.Watch, dial)...)
	}
	return checks
}

// WatchChecks report what the running clawmem's session watcher follows:
// nothing when watching is off or OpenClaw's state dir does not exist (a
// machine without OpenClaw, normal for a first try), else the transcript
// sources the watcher reported (dial reaches its NATS).
func WatchChecks(ctx context.Context, w config.Watch, dial func() (*nats.Conn, error)) []Check {
	if w.Enabled != nil && !*w.Enabled {
		return []Check{{Name: "watcher", OK: true, Detail: "off (watch.enabled is false): only hook events carry messages"}}
	}
	if _, err := os.Stat(w.StateDir); errors.Is(err, os.ErrNotExist) {
		return []Check{{Name: "watcher", OK: true, Detail: "no OpenClaw data dir at " + homeRelative(w.StateDir) +
			": nothing to watch (if OpenClaw keeps it elsewhere, set watch.stateDir or $OPENCLAW_STATE_DIR)"}}
	}
	nc, err := dial()
	if err == nil {
		defer nc.Close()
	}
	return TranscriptChecks(ctx, nc, err)
}

// homeRelative writes a path under the user's home as ~/…, as people
// (and the docs) name ~/.openclaw.
func homeRelative(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return path
	}
	if rel, err := filepath.Rel(home, path); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		return filepath.Join("~", rel)
	}
	return path
}
