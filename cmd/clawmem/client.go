package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
)

// requestTimeout bounds one CLI request to a running instance.
const requestTimeout = 30 * time.Second

// connect finds who answers: --db opens that store directly; otherwise a
// running instance (its run file, --nats-url or nats.url) over NATS; with
// none running, the data dir's store directly.
func (a *app) connect(ctx context.Context) (client.Client, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	if a.dbDir != "" {
		cfg.DBPath = a.dbDir
		return a.direct(ctx, cfg)
	}
	if !a.running(cfg) {
		return a.direct(ctx, cfg)
	}
	nc, err := a.dialNATS(cfg, "clawmem-cli")
	if err != nil {
		return nil, err
	}
	return client.NewNATS(nc), nil
}

// natsURLFor is the NATS server commands talk to: --nats-url, else
// nats.url, else the local `clawmem up`'s (its run file, else the
// configured port). named reports whether a server was given explicitly.
func (a *app) natsURLFor(cfg *config.Config) (url string, named bool) {
	if url = a.natsURL; url == "" {
		url = cfg.NATS.URL
	}
	if url != "" {
		return url, true
	}
	url = node.LocalNATS(cfg)
	return url, false
}

// running reports whether commands should go over NATS: a server was
// named, or a local instance runs on the data dir.
func (a *app) running(cfg *config.Config) bool {
	_, named := a.natsURLFor(cfg)
	return named || node.InstanceRunning(cfg.DataDir)
}

// dialNATS connects to natsURLFor(cfg) as name.
func (a *app) dialNATS(cfg *config.Config, name string) (*nats.Conn, error) {
	url, _ := a.natsURLFor(cfg)
	return node.Connect(url, cfg, name)
}

func (a *app) direct(ctx context.Context, cfg *config.Config) (client.Client, error) {
	c, err := client.OpenLocal(ctx, cfg)
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%w\n(a clawmem is running on %s; leave out --db to talk to it over NATS)", err, cfg.DBPath)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// do runs one operation and prints its reply: the text, or with --json the
// whole reply. An error reply exits 1.
func (a *app) do(cmd *cobra.Command, op, agent string, req any, render func(schemas.ToolResult) error) error {
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
		if err := a.printJSON(res); err != nil {
			return err
		}
	case render != nil && !res.IsError:
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
			msg = res.Content[0].Text
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
			return a.do(cmd, schemas.OpStats, agent, schemas.StatsRequest{Scope: scope}, nil)
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
			return a.do(cmd, schemas.OpList, agent, r, nil)
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
			return a.do(cmd, schemas.OpConsolidate, "", r, nil)
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
			return a.do(cmd, schemas.OpShow, agent, schemas.ShowRequest{MemoryID: args[0]}, nil)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "as this agent (its scopes only); default: every scope")
	return cmd
}

// lifeNote marks a memory that no longer holds in CLI listings.
func lifeNote(v schemas.MemoryView) string {
	switch {
	case v.InvalidatedAt == 0:
		return ""
	case v.SupersededBy == "":
		return "  (archived " + time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly) + ")"
	}
	return "  (superseded by " + v.SupersededBy[:min(8, len(v.SupersededBy))] + " " + time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly) + ")"
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
			return a.do(cmd, schemas.OpForget, agent, r, nil)
		},
	}
	cmd.Flags().StringVar(&query, "query", "", "find the memory by this query")
	cmd.Flags().StringVar(&scope, "scope", "", "only this scope")
	cmd.Flags().StringVar(&agent, "agent", "", "as this agent (its scopes only)")
	return cmd
}
