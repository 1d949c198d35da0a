package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/eval"
	"github.com/clawmem/clawmem/internal/storeopen"
)

func (a *app) evalCmd() *cobra.Command {
	var o eval.Options
	cmd := &cobra.Command{
		Use:   "eval FILE...",
		Short: "Measure retrieval quality on conversations with annotated questions",
		Long: `Imports each conversation (one memory per turn: "speaker: text", dated at its session) into a fresh
temporary store — or into the store given with --db — asks every question as the conversation's agent, and
prints evidence recall@1/5/10 (the share of a question's evidence turns in the top k), hit rate, MRR, the same
per category, the auto-recall block's precision (injected memories that are evidence or next to it) and how
often it stays empty for questions about things never said, and the p50/p99 query latency. The retrieval
settings are the configuration's (--config compares settings). The file format is in testdata/eval/README.md.
Every file is read and checked before anything is written.`,
		Example: `  clawmem eval testdata/eval/*.json
  clawmem eval testdata/eval/*.json --config tuned.json --json
  clawmem eval testdata/eval/c1.json --explain-misses 10`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			convs, err := eval.LoadFiles(args)
			if err != nil {
				return err
			}
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if a.dbDir != "" {
				cfg.DBPath = a.dbDir
			} else {
				dir, err := os.MkdirTemp("", "clawmem-eval-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				cfg.DBPath = dir
			}
			ctx := cmd.Context()
			eng, st, err := storeopen.Engine(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if errors.Is(err, engine.ErrLocked) {
				return fmt.Errorf("%w\n(a clawmem is running on %s; evaluate into another --db)", err, cfg.DBPath)
			}
			if err != nil {
				return err
			}
			defer st.Close()
			bar, _ := a.progressBar("importing")
			n, err := eval.Import(ctx, eng, convs, bar)
			if err != nil {
				return fmt.Errorf("import into %s (%d turns written; ids are fixed, so a rerun skips them): %w", cfg.DBPath, n, err)
			}
			o.Progress, _ = a.progressBar("asking")
			rep, err := eval.Run(ctx, eng, convs, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(rep)
			}
			return rep.WriteText(a.stdout, eng.Retriever().Config().Mode, eng.Retriever().RerankMode(), eng.Embedder().Model())
		},
	}
	cmd.Flags().IntVar(&o.ExplainMisses, "explain-misses", 0, "print the N questions recalled worst, with the score sources of what came instead")
	return cmd
}
