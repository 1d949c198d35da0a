package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/internal/textutil"
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
			return a.do(cmd, schemas.OpRecall, agent, r, func(res schemas.ToolResult) error {
				return a.printRecall(res, explain)
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

func (a *app) printRecall(res schemas.ToolResult, explain bool) error {
	raw, err := json.Marshal(res.Details)
	if err != nil {
		return err
	}
	// Sources is typed here; the wire type leaves it open.
	var d struct {
		Mode, Rerank string
		Memories     []struct {
			schemas.MemoryView
			Sources *retrieve.Sources `json:"sources"`
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return fmt.Errorf("unexpected recall reply: %w", err)
	}
	w := a.stdout
	if len(d.Memories) == 0 {
		fmt.Fprintln(w, "No memories found.")
		return nil
	}
	fmt.Fprintf(w, "%d result(s) (mode %s, rerank %s)\n", len(d.Memories), d.Mode, d.Rerank)
	for i, m := range d.Memories {
		fmt.Fprintf(w, "%2d. [%s] %.0f%% [%s:%s] %s%s\n", i+1, m.ID[:8], m.Score*100, m.Category, m.Scope, textutil.OneLine(m.Text, 200), lifeNote(m.MemoryView))
		if explain && m.Sources != nil {
			fmt.Fprintf(w, "      %s  importance %.2f\n", m.Sources, m.Importance)
		}
	}
	return nil
}
