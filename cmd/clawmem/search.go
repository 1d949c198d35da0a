package main

import (
	"errors"

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

func (a *app) contextCmd() *cobra.Command {
	var (
		r     schemas.ContextRequest
		agent string
	)
	cmd := &cobra.Command{
		Use:   "context PROMPT",
		Short: "Print the memories block auto-recall would give the model for a prompt",
		Long: `Asks the query service what an agent's auto-recall (clawmem.v1.<agent>.context, the request
the OpenClaw plugin sends before each prompt) answers for PROMPT, and prints the block the model
would get: the <relevant-memories> text prepended to the prompt, exactly. Memories below the
auto-recall gate (retrieval.autoRecallMinScore, autoRecallMinMargin) are left out; when none
passes, nothing is printed and stderr says why. --json prints the whole reply (memoryIds, coreIds,
skipped, timedOut).`,
		Example: `  clawmem context "which database should the new service use?"
  clawmem context "plan my week" --agent main --budget 200
  clawmem context "dark mode" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Prompt = args[0]
			if r.TokenBudget < 0 {
				return errors.New("--budget must be positive (0: retrieval.recallTokenBudget)")
			}
			return a.Do(cmd, schemas.OpContext, agent, r, func(res schemas.ToolResult) error {
				return client.WriteContext(a.stdout, a.stderr, res)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "main", "the agent whose auto-recall to run (its scopes only)")
	f.IntVar(&r.TokenBudget, "budget", 0, "token budget of the block, framing included (default retrieval.recallTokenBudget)")
	f.IntVar(&r.TimeoutMs, "timeout-ms", 0, "the deadline auto-recall answers within (default: the service's, as the plugin gets)")
	return cmd
}
