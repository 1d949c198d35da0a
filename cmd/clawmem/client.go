package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/cmd/clawmem/internal/offline"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Target is who the commands talk to (see client.Target), with the
// loaded config, --db and --nats-url.
func (a *app) Target(name string) (client.Target, error) {
	cfg, err := a.Config()
	if err != nil {
		return client.Target{}, err
	}
	t := client.Target{Config: cfg, DB: a.dbDir, NATSURL: a.natsURL, Name: name}
	ctx := a.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	if err := t.AwaitStart(ctx, startWait, func() { fmt.Fprintln(a.stderr, "clawmem is starting…") }); err != nil {
		return client.Target{}, err
	}
	return t, nil
}

// pipeline is the pipeline's client for t: over NATS when remote, else
// on the data dir (its NATS store, served by this process, and Store()'s
// store for a direct backup).
func pipeline(t client.Target, remote bool) client.Pipeline {
	if remote {
		return client.NewNATSPipeline(t.Dial)
	}
	return offline.NewPipeline(t.Store())
}

// startWait bounds how long a command waits for a `clawmem up` that is
// starting on its data dir.
var startWait = 30 * time.Second

// connect finds who answers the tool and admin operations.
func (a *app) connect(ctx context.Context) (client.Client, error) {
	t, err := a.Target("clawmem-cli")
	if err != nil {
		return nil, err
	}
	c, err := t.Client(ctx)
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a clawmem is running on %s; leave out --db to talk to it over NATS)", err, t.Store().DBPath)
	}
	return c, err
}

// Do runs one operation and prints its reply: the text, or with --json the
// whole reply. An error reply exits 1.
func (a *app) Do(cmd *cobra.Command, op, agent string, req any, render func(schemas.ToolResult) error) error {
	c, err := a.connect(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Call(cmd.Context(), op, agent, req)
	if err != nil {
		return err
	}
	switch {
	case a.jsonOut:
		if err := a.PrintJSON(res); err != nil {
			return err
		}
	case res.IsError:
		// Said once, on stderr, by the caller of Do.
	case render != nil:
		if err := render(res); err != nil {
			return err
		}
	default:
		for _, c := range res.Content {
			fmt.Fprintln(a.stdout, c.Text)
		}
	}
	if res.IsError {
		msg := "request failed"
		if len(res.Content) > 0 {
			var texts []string
			for _, c := range res.Content {
				texts = append(texts, c.Text)
			}
			msg = strings.Join(texts, "\n")
		}
		if a.jsonOut {
			return errSilent{errors.New(msg)}
		}
		return errors.New(strings.TrimPrefix(msg, "Error: "))
	}
	return nil
}

func (a *app) statsCmd() *cobra.Command {
	var scope, agent string
	cmd := &cobra.Command{
		Use:     "stats",
		Short:   "Count memories per scope and category",
		Example: "  clawmem stats\n  clawmem stats --scope global --json\n  clawmem stats --agent main",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.Do(cmd, schemas.OpStats, agent, schemas.StatsRequest{Scope: scope}, nil)
		},
	}
	cmd.Flags().StringVar(&scope, "scope", "", "only this scope")
	cmd.Flags().StringVar(&agent, "agent", "", "as this agent (its scopes only); default: every scope")
	return cmd
}

func (a *app) listCmd() *cobra.Command {
	var r schemas.ListRequest
	var agent string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List memories, newest first",
		Example: "  clawmem list\n  clawmem list --scope global --category fact --limit 50 --offset 50",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.Do(cmd, schemas.OpList, agent, r, nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&r.Scope, "scope", "", "only this scope")
	f.StringVar(&r.Category, "category", "", "only this category")
	f.IntVar(&r.Limit, "limit", 20, "memories to show")
	f.IntVar(&r.Offset, "offset", 0, "memories to skip")
	f.StringVar(&agent, "agent", "", "as this agent (its scopes only); default: every scope")
	f.BoolVar(&r.IncludeSuperseded, "history", false, "also list memories that no longer hold (superseded, archived)")
	return cmd
}

func (a *app) consolidateCmd() *cobra.Command {
	var r schemas.ConsolidateRequest
	cmd := &cobra.Command{
		Use:   "consolidate",
		Short: "Merge near-duplicate memories and archive faded ones (nothing is deleted)",
		Long: `Merges the memories of a scope that say one thing twice (vector score at least --merge-min)
into one memory — the newest text, the highest importance, the first time — which supersedes them;
with --archive-floor, archives memories whose importance × 0.5^(age / half-life) fell below it.
Superseded and archived memories stay as history (clawmem list --history; restorable). A run is
idempotent and safe to kill: the next run finishes what it started. The daily job
(jobs.consolidate) does the same.`,
		Example: "  clawmem consolidate --dry-run\n  clawmem consolidate --scope agent:main\n  clawmem consolidate --archive-floor 0.05",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.Do(cmd, schemas.OpConsolidate, "", r, nil)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&r.DryRun, "dry-run", false, "print what would change and change nothing")
	f.StringVar(&r.Scope, "scope", "", "only this scope")
	f.Float64Var(&r.MergeMin, "merge-min", 0.90, "vector score from which two memories are merged")
	f.Float64Var(&r.ArchiveFloor, "archive-floor", 0, "archive memories whose decayed importance is below this (0: none)")
	f.Float64Var(&r.HalfLifeDays, "archive-half-life-days", 180, "half-life of importance, for --archive-floor")
	return cmd
}

func (a *app) showCmd() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "show ID|PREFIX",
		Short: "Show a memory with its history: what it replaced and what replaced it",
		Long: `Prints the memory, then the chain of facts around it: the memories that replaced it
(up to the one that holds now) and the ones it replaced (back to the first).`,
		Example: "  clawmem show 3f2a9c1e\n  clawmem show 3f2a9c1e --agent main --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.Do(cmd, schemas.OpShow, agent, schemas.ShowRequest{MemoryID: args[0]}, func(res schemas.ToolResult) error {
				return client.WriteShow(a.stdout, res)
			})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "as this agent (its scopes only); default: every scope")
	return cmd
}

func (a *app) forgetCmd() *cobra.Command {
	var query, scope, agent string
	cmd := &cobra.Command{
		Use:   "forget [ID|PREFIX]",
		Short: "Delete a memory by id (or 8+ char prefix), or by query",
		Long: `Deletes one memory. By id or prefix it deletes that memory; by --query it deletes only
when exactly one memory matches with high confidence, and otherwise lists candidates.`,
		Aliases: []string{"delete"},
		Example: "  clawmem forget 3f2a9c1e\n  clawmem forget --query \"old wifi password\"",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := schemas.ForgetRequest{Query: query, Scope: scope}
			if len(args) == 1 {
				r.MemoryID = args[0]
			}
			if r.MemoryID == "" && r.Query == "" {
				return errors.New("give a memory id (or prefix) or --query")
			}
			return a.Do(cmd, schemas.OpForget, agent, r, func(res schemas.ToolResult) error {
				return client.WriteForget(a.stdout, res)
			})
		},
	}
	cmd.Flags().StringVar(&query, "query", "", "find the memory by this query")
	cmd.Flags().StringVar(&scope, "scope", "", "only this scope")
	cmd.Flags().StringVar(&agent, "agent", "", "as this agent (its scopes only)")
	return cmd
}
