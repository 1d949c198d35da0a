package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Dead letters: list, show, replay or purge the messages the pipeline gave up on",
		Long: `A message that failed in a stage 5 times (or was malformed at once) is moved to the stream ` + schemas.StreamDLQ + `
under ` + schemas.DLQPrefix + `.<stage>.<original subject>, with Clawmem-Dlq-* headers saying which stage,
why, how often and when. Replaying republishes the body to the original subject (the stages are
idempotent, so a replay never stores a memory twice) and removes it from the DLQ. These commands
talk to the running clawmem's NATS; when none runs, they open the data dir's NATS store.`,
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqShowCmd(), a.dlqReplayCmd(), a.dlqPurgeCmd())
	return cmd
}

// dlqPipeline is the pipeline for the dlq commands, after checking --stage.
func (a *app) dlqPipeline(stage string) (client.Pipeline, error) {
	if err := client.CheckStage(stage); err != nil {
		return nil, fmt.Errorf("--stage %w", err)
	}
	t, err := a.Target("clawmem-cli")
	if err != nil {
		return nil, err
	}
	return pipeline(t, t.Running()), nil
}

func (a *app) dlqListCmd() *cobra.Command {
	var stage string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List dead letters: sequence, stage, original subject, reason, attempts, time",
		Example: "  clawmem dlq list\n  clawmem dlq list --stage capture --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.dlqPipeline(stage)
			if err != nil {
				return err
			}
			defer p.Close()
			entries, err := p.DeadLetters(cmd.Context(), stage)
			if err != nil {
				return err
			}
			return a.Emit(entries, func(w io.Writer) error { return client.WriteDeadLetters(w, entries) })
		},
	}
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters")
	return cmd
}

func parseSeq(arg string) (uint64, error) {
	seq, err := strconv.ParseUint(arg, 10, 64)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("%q is not a sequence number (see `clawmem dlq list`)", arg)
	}
	return seq, nil
}

func (a *app) dlqShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "show SEQ",
		Short:   "Show one dead letter: its headers and body",
		Example: "  clawmem dlq show 42\n  clawmem dlq show 42 --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := parseSeq(args[0])
			if err != nil {
				return err
			}
			p, err := a.dlqPipeline("")
			if err != nil {
				return err
			}
			defer p.Close()
			m, err := p.DeadLetter(cmd.Context(), seq)
			if err != nil {
				return err
			}
			return a.Emit(m, m.WriteText)
		},
	}
}

func (a *app) dlqReplayCmd() *cobra.Command {
	var stage string
	var all bool
	cmd := &cobra.Command{
		Use:   "replay SEQ|--all",
		Short: "Republish dead letters to their original subjects and remove them from the DLQ",
		Long: `Republishes a dead letter's body (and its original headers) to the subject it failed on, with
a new Msg-Id, and deletes it from the DLQ once JetStream has stored the copy. --all replays every
dead letter (of --stage, if given). Fix the cause first: a message that fails again comes back.`,
		Example: "  clawmem dlq replay 42\n  clawmem dlq replay --all --stage capture",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) == 1) {
				return errors.New("give one sequence number or --all")
			}
			var seq uint64 // 0: --all
			if !all {
				var err error
				if seq, err = parseSeq(args[0]); err != nil {
					return err
				}
			}
			p, err := a.dlqPipeline(stage)
			if err != nil {
				return err
			}
			defer p.Close()
			results, err := p.Replay(cmd.Context(), stage, seq)
			if err != nil {
				return err
			}
			failed := 0
			for _, r := range results {
				if r.Error != "" {
					failed++
				}
			}
			out := map[string]any{"replayed": len(results) - failed, "failed": failed, "results": results}
			if err := a.Emit(out, func(w io.Writer) error { return client.WriteReplays(w, results) }); err != nil {
				return err
			}
			if failed > 0 {
				return errSilent{fmt.Errorf("%d dead letters not replayed", failed)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "replay every dead letter (of --stage)")
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters")
	return cmd
}

func (a *app) dlqPurgeCmd() *cobra.Command {
	var stage string
	var yes bool
	cmd := &cobra.Command{
		Use:     "purge",
		Short:   "Delete dead letters for good (every one, or --stage's)",
		Example: "  clawmem dlq purge --stage capture --yes\n  clawmem dlq purge --yes",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := a.dlqPipeline(stage)
			if err != nil {
				return err
			}
			defer p.Close()
			what := "dead letters"
			if stage != "" {
				what = "dead letters of stage " + stage
			}
			if !yes {
				n, err := p.CountDeadLetters(cmd.Context(), stage)
				if err != nil {
					return err
				}
				if a.jsonOut {
					_ = a.PrintJSON(map[string]any{"purged": 0, "wouldPurge": n, "stage": stage})
					return errSilent{errors.New("not confirmed")}
				}
				return fmt.Errorf("this deletes %d %s for good; run again with --yes", n, what)
			}
			n, err := p.PurgeDeadLetters(cmd.Context(), stage)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(map[string]any{"purged": n, "stage": stage})
			}
			fmt.Fprintf(a.stdout, "purged %d %s\n", n, what)
			return nil
		},
	}
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: the messages cannot be recovered")
	return cmd
}
