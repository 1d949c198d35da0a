package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/workers/lessons"
)

func (a *app) distillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "distill",
		Short: "Session distillation: job status and manual runs",
		Long: `Ended sessions (command:new, command:reset, before_reset, session_end) are distilled by the
distill worker; the cursor distiller takes transcript ranges of idle sessions on a schedule.
These commands talk to a running clawmem over NATS; when none runs, to the data dir's NATS store.`,
	}
	cmd.AddCommand(a.distillStatusCmd(), a.distillRunCmd())
	return cmd
}

func (a *app) distillStatusCmd() *cobra.Command {
	var agent, session string
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Show distillation jobs, one row per distilled range of a session: running, done or error, with their figures",
		Example: "  clawmem distill status\n  clawmem distill status --agent main --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			jobs, err := p.DistillJobs(cmd.Context(), agent, session)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(jobs)
			}
			// Events not yet taken by a worker are the queued jobs: they
			// wait in the distill consumer, not in the job table.
			if waiting, handling, err := p.DistillQueue(cmd.Context()); err == nil {
				fmt.Fprintf(a.stdout, "queued: %d session-end events waiting, %d being handled\n", waiting, handling)
			}
			return client.WriteDistillJobs(a.stdout, jobs)
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent")
	cmd.Flags().StringVar(&session, "session", "", "only this session")
	return cmd
}

func (a *app) distillRunCmd() *cobra.Command {
	var agent, session string
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Distil undistilled transcript ranges now",
		Long: `Runs the cursor distiller by hand over the transcript stream: every session with messages
not yet distilled (--since limits it to sessions active within that window), or one session
(--session, distilled even if it is still active). Each range's cursor moves only after its
lessons are handed to the store worker.`,
		Example: "  clawmem distill run --session 3f2a...\n  clawmem distill run --since 24h",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if session == "" && since <= 0 {
				return fmt.Errorf("say what to distil: --session ID or --since DURATION (e.g. 24h)")
			}
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			d, err := node.NewDistiller(t.Config)
			if err != nil {
				return err
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			run := lessons.TranscriptRun{Agent: agent, Session: session, Since: since, IgnoreIdle: true}
			var finish func()
			run.Progress, finish = a.progressBar("distilling sessions")
			rep, err := p.Distill(cmd.Context(), d, node.TranscriptConfig(t.Config), run, a.logger())
			finish()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(rep)
			}
			fmt.Fprintf(a.stdout, "%d sessions due, %d ranges distilled (%d messages), %d lessons handed to the store\n",
				rep.Sessions, rep.Distilled, rep.Messages, rep.Lessons)
			for _, e := range rep.Errors {
				fmt.Fprintln(a.stdout, "  error:", e)
			}
			if len(rep.Errors) > 0 {
				return errSilent{fmt.Errorf("%d ranges failed", len(rep.Errors))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent")
	cmd.Flags().StringVar(&session, "session", "", "only this session id")
	cmd.Flags().DurationVar(&since, "since", 0, "only sessions active within this window, e.g. 24h")
	return cmd
}

func (a *app) watchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "watch",
		Short: "Follow OpenClaw session files into the transcript stream (also run by up)",
		Long: `Watches <watch.stateDir>/agents/*/sessions/*.jsonl (default $OPENCLAW_STATE_DIR, else ~/.openclaw)
and publishes each new user or assistant message to the running clawmem's transcript stream,
keeping per-file offsets in JetStream KV so a restart neither repeats nor skips a line.`,
		Example: "  clawmem watch\n  clawmem watch --nats-url nats://nats.internal:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), a.natsURL, []string{node.RoleWatch}, false)
		},
	}
}
