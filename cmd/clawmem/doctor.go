package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/cmd/clawmem/internal/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/sqlitestore"
)

// checkTimeout bounds each startup or doctor check, as the seed's startup
// checks do, so a dead endpoint costs seconds, not a hang.
const checkTimeout = 8 * time.Second

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
	tctx, cancel := context.WithTimeout(ctx, checkTimeout)
	res := emb.Test(tctx)
	cancel()
	if res.Success {
		checks = append(checks, check{Name: "embedder", OK: true,
			Detail: fmt.Sprintf("%s answers with %d dimensions", emb.Model(), res.Dimensions)})
	} else {
		checks = append(checks, check{Name: "embedder", Detail: fmt.Sprintf("%s: %s", emb.Model(), res.Error),
			Fix: "check embedding.baseURL is reachable, embedding.apiKey (and that its ${ENV} variable is set for this process) and embedding.model"})
	}
	return append(checks, storeCheck(ctx, cfg, emb.Dimensions()))
}

func storeCheck(ctx context.Context, cfg *config.Config, dim int) check {
	dir := cfg.DBPath
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim, Index: cfg.IndexOptions()})
	switch {
	case errors.Is(err, engine.ErrLocked):
		return check{Name: "store", OK: true, Detail: dir + " is open in a running clawmem"}
	case errors.Is(err, engine.ErrDimensionMismatch):
		return check{Name: "store", Detail: err.Error(),
			Fix: "set embedding.dimensions to the stored size, or point dbPath at a new directory and run `clawmem reembed --source-db " + dir + "`"}
	case err != nil:
		return check{Name: "store", Detail: err.Error(), Fix: "check that " + dir + " is writable"}
	}
	defer s.Close()
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		return check{Name: "store", Detail: err.Error()}
	}
	fts := "full-text search on"
	if !s.HasFullText() {
		fts = "full-text search UNAVAILABLE (vector-only retrieval)"
	}
	return check{Name: "store", OK: true, Detail: fmt.Sprintf("%s: %d memories, %d dimensions, %s", dir, st.Total, s.Dimensions(), fts)}
}
