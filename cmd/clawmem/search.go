package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) searchCmd() *cobra.Command {
	var (
		scope, category, agent string
		limit                  int
		explain                bool
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search memories with the full hybrid retrieval pipeline",
		Long: `Runs the same retrieval as recall: vector + BM25, fusion, rerank, recency, importance,
length normalisation, time decay, hard minimum, noise filter and MMR.
With --explain each result shows where its score came from.`,
		Example: `  clawmem search "dark mode"
  clawmem search "deploy server" --scope global --limit 10 --explain
  clawmem search "乌龙茶" --agent main --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			eng, st, err := openEngine(cmd.Context(), cfg, slog.New(slog.NewTextHandler(a.stderr, nil)))
			if err != nil {
				return err
			}
			defer st.Close()
			who := memory.Admin()
			if agent != "" {
				who = memory.Agent(agent)
			}
			var cat schemas.Category
			if category != "" {
				if cat, err = schemas.ParseCategory(category); err != nil {
					return err
				}
			}
			res, err := eng.Recall(cmd.Context(), who, args[0], memory.RecallOptions{Limit: limit, Scope: scope, Category: cat})
			if err != nil {
				return err
			}
			if a.jsonOut {
				for i := range res.Candidates {
					res.Candidates[i].Memory.Vector = nil
				}
				return a.printJSON(res)
			}
			printResults(a, res, explain)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&scope, "scope", "", "only this scope")
	f.StringVar(&category, "category", "", "only this category")
	f.StringVar(&agent, "agent", "", "search as this agent (its scopes only); default: every scope")
	f.IntVar(&limit, "limit", 10, "results")
	f.BoolVar(&explain, "explain", false, "show each result's score sources")
	return cmd
}

func printResults(a *app, res retrieve.Result, explain bool) {
	w := a.stdout
	if len(res.Candidates) == 0 {
		fmt.Fprintln(w, "No memories found.")
		return
	}
	fmt.Fprintf(w, "%d result(s) (mode %s, rerank %s)\n", len(res.Candidates), res.Mode, res.Rerank)
	for i, c := range res.Candidates {
		m := c.Memory
		fmt.Fprintf(w, "%2d. [%s] %.0f%% [%s:%s] %s\n", i+1, m.ID[:8], c.Score*100, m.Category, m.Scope, oneLine(m.Text, 200))
		if explain {
			s := c.Sources
			fmt.Fprintf(w, "      vector %s  bm25 %s  fused %.3f  reranked %.3f (%s)  final %.3f  cosine %.3f  importance %.2f\n",
				hit(s.VectorHit, s.Vector), hit(s.BM25Hit, s.BM25), s.Fused, s.Reranked, s.Rerank, s.Final, s.Cosine, m.Importance)
		}
	}
}

func hit(ok bool, v float64) string {
	if !ok {
		return "  -  "
	}
	return fmt.Sprintf("%.3f", v)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
