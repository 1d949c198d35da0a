package main

import (
	"cmp"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers"
)

func (a *app) distillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "distill",
		Short: "Session distillation: job status and manual runs",
		Long: `Ended sessions (command:new, command:reset, before_reset, session_end) are distilled by the
distill worker; the cursor distiller takes transcript ranges of idle sessions on a schedule.
These commands talk to a running clawmem over NATS.`,
	}
	cmd.AddCommand(a.distillStatusCmd(), a.distillRunCmd())
	return cmd
}

// jetStream connects to the running instance's NATS.
func (a *app) jetStream() (jetstream.JetStream, func(), error) {
	cfg, err := a.config()
	if err != nil {
		return nil, nil, err
	}
	nc, err := a.dialNATS(cfg, "clawmem-cli")
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return js, nc.Close, nil
}

func (a *app) distillStatusCmd() *cobra.Command {
	var agent, session string
	cmd := &cobra.Command{
		Use:     "status",
		Short:   "Show distillation jobs, one row per distilled range of a session: running, done or error, with their figures",
		Example: "  clawmem distill status\n  clawmem distill status --agent main --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			js, closeNC, err := a.jetStream()
			if err != nil {
				return err
			}
			defer closeNC()
			jobs, err := workers.Jobs(cmd.Context(), js, agent)
			if err != nil {
				return err
			}
			if session != "" {
				kept := jobs[:0]
				for _, j := range jobs {
					if j.Session == session {
						kept = append(kept, j)
					}
				}
				jobs = kept
			}
			if a.jsonOut {
				if jobs == nil {
					jobs = []workers.DistillJob{}
				}
				return a.printJSON(jobs)
			}
			// Events not yet taken by a worker are the queued jobs: they
			// wait in the distill consumer, not in the job table.
			if c, err := js.Consumer(cmd.Context(), schemas.StreamEvents, schemas.ConsumerDistill); err == nil {
				if info, err := c.Info(cmd.Context()); err == nil {
					fmt.Fprintf(a.stdout, "queued: %d session-end events waiting, %d being handled\n", info.NumPending, info.NumAckPending)
				}
			}
			if len(jobs) == 0 {
				fmt.Fprintln(a.stdout, "no distillation jobs")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSESSION\tRANGE\tTRIGGER\tSTATUS\tSOURCE\tMESSAGES\tCHUNKS\tCANDIDATES\tMAP ERRORS\tKEPT\tTOKENS\tDURATION\tUPDATED\tERROR")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", j.Agent, j.Session, cmp.Or(j.Range, "-"), j.Trigger, j.Status,
					j.Source, j.Stats.Messages, j.Stats.Chunks, j.Stats.Candidates, j.Stats.MapErrors, j.Lessons,
					j.Stats.InputTokens+j.Stats.OutputTokens, j.Stats.Duration.Round(time.Millisecond), j.Updated.Local().Format(time.DateTime), j.Error)
			}
			return tw.Flush()
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
			cfg, err := a.config()
			if err != nil {
				return err
			}
			js, closeNC, err := a.jetStream()
			if err != nil {
				return err
			}
			defer closeNC()
			d, err := node.NewDistiller(cfg)
			if err != nil {
				return err
			}
			cd, err := workers.NewCursorDistiller(js, d, node.CursorConfig(cfg), a.logger())
			if err != nil {
				return err
			}
			run := workers.CursorRun{Agent: agent, Session: session, Since: since, IgnoreIdle: true}
			var bar *progressbar.ProgressBar
			if f, ok := a.stderr.(*os.File); ok && !a.jsonOut && isatty.IsTerminal(f.Fd()) {
				run.Progress = func(done, total int) {
					if bar == nil {
						bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("distilling sessions"),
							progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
					}
					_ = bar.Set(done)
				}
			}
			rep, err := cd.RunOnce(cmd.Context(), run)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
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
