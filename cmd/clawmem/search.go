package main

import (
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) searchCmd() *cobra.Command {
	var (
		r       schemas.RecallRequest
		agent   string
		explain bool
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
			r.Query = args[0]
			return a.Do(cmd, schemas.OpRecall, agent, r, func(res schemas.ToolResult) error {
				return client.WriteRecall(a.stdout, res, explain)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Scope, "scope", "", "only this scope")
	f.StringVar(&r.Category, "category", "", "only this category")
	f.StringVar(&agent, "agent", "", "search as this agent (its scopes only); default: every scope")
	f.IntVar(&r.Limit, "limit", 10, "results")
	f.BoolVar(&explain, "explain", false, "show each result's score sources")
	f.BoolVar(&r.IncludeSuperseded, "history", false, "also search memories that no longer hold (superseded, archived)")
	return cmd
}
