package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/eval"
	"github.com/clawmem/clawmem/node"
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
			var convs []*eval.Conversation
			seen := map[string]string{}
			for _, f := range args {
				c, err := eval.LoadFile(f)
				if err != nil {
					return err
				}
				if prev, dup := seen[c.ID]; dup {
					return fmt.Errorf("%w: %s: conversation id %q is also the id of %s", eval.ErrInvalid, f, c.ID, prev)
				}
				seen[c.ID] = f
				convs = append(convs, c)
			}
			cfg, err := a.config()
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
			eng, st, err := node.OpenEngine(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if errors.Is(err, engine.ErrLocked) {
				return fmt.Errorf("%w\n(a clawmem is running on %s; evaluate into another --db)", err, cfg.DBPath)
			}
			if err != nil {
				return err
			}
			defer st.Close()
			bar := a.evalBar("importing")
			n, err := eval.Import(ctx, eng, convs, bar)
			if err != nil {
				return fmt.Errorf("import into %s (%d turns written; ids are fixed, so a rerun skips them): %w", cfg.DBPath, n, err)
			}
			o.Progress = a.evalBar("asking")
			rep, err := eval.Run(ctx, eng, convs, o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
			}
			a.printEval(rep, eng.Retriever().Config().Mode, eng.Retriever().RerankMode(), eng.Embedder().Model())
			return nil
		},
	}
	cmd.Flags().IntVar(&o.ExplainMisses, "explain-misses", 0, "print the N questions recalled worst, with the score sources of what came instead")
	return cmd
}

// evalBar is a progress bar on a terminal, else nothing.
func (a *app) evalBar(what string) func(done, total int) {
	f, ok := a.stderr.(*os.File)
	if !ok || !isatty.IsTerminal(f.Fd()) {
		return nil
	}
	var bar *progressbar.ProgressBar
	return func(done, total int) {
		if bar == nil {
			bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(a.stderr), progressbar.OptionSetDescription(what),
				progressbar.OptionClearOnFinish())
		}
		_ = bar.Set(done)
		if done == total {
			_ = bar.Finish()
		}
	}
}

func (a *app) printEval(rep eval.Report, mode, rerank, model string) {
	w := a.stdout
	fmt.Fprintf(w, "%d conversations, %d memories, %d questions with evidence (retrieval %s, rerank %s, embedding %s)\n\n",
		rep.Conversations, rep.Memories, rep.Overall.Questions, mode, rerank, model)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tquestions\trecall@1\trecall@5\trecall@10\thit@10\tMRR\t")
	row := func(name string, f eval.Figures) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, f.Questions, f.Recall["@1"], f.Recall["@5"], f.Recall["@10"], f.Hit["@10"], f.MRR)
	}
	row("overall", rep.Overall)
	for _, c := range eval.Categories {
		if f, ok := rep.ByCategory[c]; ok {
			row(c, f)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nauto-recall: %d memories injected, %.1f%% evidence or next to it; evidence shown for %.1f%% of questions; "+
		"empty for %.1f%% of %d questions about things never said\n",
		rep.Context.Injected, 100*rep.Context.Precision, 100*rep.Context.EvidenceShown, 100*rep.Context.NoneEmpty, rep.Context.NoneQuestions)
	fmt.Fprintf(w, "query latency: p50 %.2f ms, p99 %.2f ms\n", rep.LatencyP50, rep.LatencyP99)
	for i, m := range rep.Misses {
		fmt.Fprintf(w, "\nmiss %d: [%s %s %s] %q (recall %.2f)\n", i+1, m.Conversation, m.Question.ID, m.Question.Category, m.Question.Text, m.Recall)
		for _, e := range m.Evidence {
			fmt.Fprintf(w, "  evidence %s %s\n", rankText(e.Rank), oneLine(e.Text, 110))
			if e.Sources != nil {
				fmt.Fprintf(w, "           %s\n", sourcesText(e.Sources))
			}
		}
		for _, r := range m.Recalled {
			fmt.Fprintf(w, "  got #%d  %s %s\n", r.Rank, r.Turn, oneLine(r.Text, 100))
			fmt.Fprintf(w, "           %s\n", sourcesText(r.Sources))
		}
	}
}

func rankText(r int) string {
	if r == 0 {
		return "(not recalled)"
	}
	return fmt.Sprintf("(#%d)", r)
}
