package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/internal/chaos"
)

func (a *app) chaosWatcherCmd() *cobra.Command {
	var f chaosFlags
	var o chaos.WatcherOptions
	cmd := &cobra.Command{
		Use:   "watcher",
		Short: "Truncate, rotate, rewrite and delete the session files clawmem up follows; count entries lost and repeated",
		Long: `Starts clawmem up on a scratch data dir and writes OpenClaw session files (JSONL) and an OpenClaw SQLite
transcript database for its watcher to follow, one entry every --every per file, while it truncates files
(and writes them back, or starts them over), rotates them as /new does, replaces them atomically by a copy
with new entries, deletes them, and vacuums, replaces and re-creates the database; clawmem up is SIGKILLed
and restarted once in the middle. Then every entry written must be in the transcript stream exactly once.`,
		Example: "  clawmem chaos watcher --files 8 --entries 200",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runScenarios(cmd, &f, func(ctx context.Context, env chaos.Env) (chaos.Result, error) {
				return chaos.WatcherFaults(ctx, env, o)
			})
		},
	}
	f.add(cmd)
	cmd.Flags().IntVar(&o.Files, "files", 4, "JSONL session files written at once (file i suffers the faults of kind i mod 4)")
	cmd.Flags().IntVar(&o.Entries, "entries", 80, "entries appended to each file and to the database")
	cmd.Flags().DurationVar(&o.Every, "every", 150*time.Millisecond, "pause between two rounds of appends")
	return cmd
}
