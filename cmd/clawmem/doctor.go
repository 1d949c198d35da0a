package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/cmd/clawmem/internal/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/producers/watcher"
)

// checkTimeout bounds each startup or doctor check, as the seed's startup
// checks do, so a dead endpoint costs seconds, not a hang. Tests shorten it.
var checkTimeout = 8 * time.Second

// check is one line of doctor's report.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

func (a *app) doctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, the embedder and the store",
		Long: `Checks that the config loads, that the embedder answers (embedding the word "test"),
and that the store opens with matching vector dimensions. Prints what is wrong and how to fix it.`,
		Example: "  clawmem doctor\n  clawmem doctor --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			checks := a.doctor(cmd.Context())
			failed := 0
			for _, c := range checks {
				if !c.OK {
					failed++
				}
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"ok": failed == 0, "checks": checks}); err != nil {
					return err
				}
			} else {
				for _, c := range checks {
					mark := "ok  "
					if !c.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(a.stdout, "[%s] %-9s %s\n", mark, c.Name, c.Detail)
					if c.Fix != "" {
						fmt.Fprintf(a.stdout, "           fix: %s\n", c.Fix)
					}
				}
			}
			if failed > 0 {
				return errSilent{fmt.Errorf("%d check(s) failed", failed)}
			}
			return nil
		},
	}
}

func (a *app) doctor(ctx context.Context) []check {
	cfg, err := a.config()
	if err != nil {
		return []check{{Name: "config", Detail: err.Error(), Fix: "correct the config file, or run without one to use the defaults"}}
	}
	checks := []check{{Name: "config", OK: true, Detail: "data dir " + cfg.DataDir + ", store " + cfg.DBPath}}
	emb, err := embed.New(cfg.EmbedConfig())
	if err != nil {
		return append(checks, check{Name: "embedder", Detail: err.Error(),
			Fix: "set embedding.model and embedding.dimensions (or embedding.provider: local) in the config"})
	}
	embedder := embedderCheck(ctx, emb, checkTimeout)
	if !embedder.OK {
		embedder.Fix = "check embedding.baseURL is reachable, embedding.apiKey (and that its ${ENV} variable is set for this process) and embedding.model"
	}
	checks = append(checks, embedder)
	checks = append(checks, storeChecks(ctx, cfg)...)
	if instanceRunning(cfg.DataDir) {
		checks = append(checks, a.transcriptChecks(ctx, cfg)...)
	}
	return checks
}

// transcriptChecks report, per agent, which OpenClaw transcript source the
// running clawmem's watcher follows and any database it cannot read.
func (a *app) transcriptChecks(ctx context.Context, cfg *config.Config) []check {
	nc, err := a.dialNATS(cfg, "clawmem-doctor")
	if err != nil {
		return []check{{Name: "watcher", Detail: "cannot reach the running clawmem: " + err.Error()}}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return []check{{Name: "watcher", Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	st, err := watcher.Status(ctx, js)
	if err != nil {
		return []check{{Name: "watcher", OK: true, Detail: "no transcript status yet (watch disabled, or the first scan has not finished)"}}
	}
	if len(st) == 0 {
		return []check{{Name: "watcher", OK: true, Detail: "no OpenClaw agents under the state dir yet"}}
	}
	var out []check
	for _, s := range st {
		c := check{Name: "watcher", OK: s.Problem == ""}
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

// storeChecks opens the store and runs a test recall on it. When a running
// clawmem holds the store, they report that instance's startup self-tests
// instead.
func storeChecks(ctx context.Context, cfg *config.Config) []check {
	dir := cfg.DBPath
	eng, s, err := openEngine(ctx, cfg, slog.New(slog.DiscardHandler))
	switch {
	case errors.Is(err, engine.ErrLocked):
		return append([]check{{Name: "store", OK: true, Detail: dir + " is open in a running clawmem"}}, runningChecks(cfg.DataDir)...)
	case errors.Is(err, engine.ErrDimensionMismatch):
		return []check{{Name: "store", Detail: err.Error(),
			Fix: "set embedding.dimensions to the stored size, or point dbPath at a new directory and run `clawmem reembed --source-db " + dir + "`"}}
	case err != nil:
		return []check{{Name: "store", Detail: err.Error(), Fix: "check that " + dir + " is writable"}}
	}
	defer s.Close()
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		return []check{{Name: "store", Detail: err.Error()}}
	}
	fts := "full-text search on"
	if !s.HasFullText() {
		fts = "full-text search UNAVAILABLE (vector-only retrieval)"
	}
	store := check{Name: "store", OK: true, Detail: fmt.Sprintf("%s: %d memories, %d dimensions, %s", dir, st.Total, s.Dimensions(), fts)}
	return []check{store, retrievalCheck(ctx, eng, checkTimeout)}
}

// runningChecks are the startup self-tests of the clawmem running on
// dataDir, as it recorded them.
func runningChecks(dataDir string) []check {
	rep, ok := readStartupReport(dataDir)
	if !ok {
		return []check{{Name: "startup", OK: true, Detail: "the running clawmem's self-tests have not finished yet"}}
	}
	var out []check
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
