package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

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
talk to the running clawmem's NATS.`,
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqShowCmd(), a.dlqReplayCmd(), a.dlqPurgeCmd())
	return cmd
}

// dlqEntry is a dead letter as its headers describe it.
type dlqEntry struct {
	Seq      uint64    `json:"seq"`
	Stage    string    `json:"stage"`
	Subject  string    `json:"subject"` // the original subject
	Reason   string    `json:"reason"`
	Attempts int       `json:"attempts"`
	Time     time.Time `json:"time"` // when it was dead-lettered
	Worker   string    `json:"worker,omitempty"`
	// Stream and StreamSeq locate the original message.
	Stream    string `json:"stream,omitempty"`
	StreamSeq uint64 `json:"streamSeq,omitempty"`
	Size      int    `json:"size"`
}

func newDLQEntry(seq uint64, subject string, h nats.Header, data []byte, stored time.Time) dlqEntry {
	e := dlqEntry{Seq: seq, Stage: h.Get(schemas.HeaderDLQStage), Subject: h.Get(schemas.HeaderDLQSubject),
		Reason: h.Get(schemas.HeaderDLQReason), Worker: h.Get(schemas.HeaderDLQWorker),
		Stream: h.Get(schemas.HeaderDLQStream), Size: len(data), Time: stored}
	e.Attempts, _ = strconv.Atoi(h.Get(schemas.HeaderDLQAttempts))
	e.StreamSeq, _ = strconv.ParseUint(h.Get(schemas.HeaderDLQSequence), 10, 64)
	if t, err := time.Parse(time.RFC3339Nano, h.Get(schemas.HeaderDLQTime)); err == nil {
		e.Time = t
	}
	// Without headers (published by hand) the subject still says both.
	rest, _ := strings.CutPrefix(subject, schemas.DLQPrefix+".")
	stage, orig, _ := strings.Cut(rest, ".")
	if e.Stage == "" {
		e.Stage = stage
	}
	if e.Subject == "" {
		e.Subject = orig
	}
	return e
}

// dlqFilter is the DLQ subject filter for a stage (empty: every stage).
func dlqFilter(stage string) (string, error) {
	if stage == "" {
		return schemas.DLQSubject, nil
	}
	if schemas.SubjectToken(stage) != stage {
		return "", fmt.Errorf("--stage %q is not a stage name (capture, store, distill, ...)", stage)
	}
	return schemas.DLQPrefix + "." + stage + ".>", nil
}

// dlqStream opens the DLQ stream of the running instance.
func (a *app) dlqStream(ctx context.Context) (jetstream.JetStream, jetstream.Stream, func(), error) {
	js, closeNC, err := a.jetStream()
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := js.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		closeNC()
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, nil, nil, fmt.Errorf("no %s stream on this NATS: has clawmem run here?", schemas.StreamDLQ)
		}
		return nil, nil, nil, fmt.Errorf("open %s: %w", schemas.StreamDLQ, err)
	}
	return js, s, closeNC, nil
}

// dlqCount is how many dead letters filter matches.
func dlqCount(ctx context.Context, s jetstream.Stream, filter string) (int, error) {
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, nil
}

// dlqEntries reads every dead letter filter matches, oldest first.
func dlqEntries(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, filter string) ([]dlqEntry, error) {
	total, err := dlqCount(ctx, s, filter)
	if err != nil || total == 0 {
		return nil, err
	}
	cons, err := js.OrderedConsumer(ctx, schemas.StreamDLQ, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", schemas.StreamDLQ, err)
	}
	var out []dlqEntry
	for len(out) < total {
		// Asking for no more than remain returns as soon as they are in,
		// instead of waiting out the deadline for a full batch.
		batch, err := cons.Fetch(min(256, total-len(out)), jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", schemas.StreamDLQ, err)
		}
		got, pending := 0, uint64(1)
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			out = append(out, newDLQEntry(md.Sequence.Stream, m.Subject(), m.Headers(), m.Data(), md.Timestamp))
			pending = md.NumPending
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("read %s: %w", schemas.StreamDLQ, err)
		}
		// Messages replayed or purged meanwhile: what was read is all.
		if got == 0 || pending == 0 {
			break
		}
	}
	return out, nil
}

func (a *app) dlqListCmd() *cobra.Command {
	var stage string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List dead letters: sequence, stage, original subject, reason, attempts, time",
		Example: "  clawmem dlq list\n  clawmem dlq list --stage capture --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			filter, err := dlqFilter(stage)
			if err != nil {
				return err
			}
			js, s, closeNC, err := a.dlqStream(cmd.Context())
			if err != nil {
				return err
			}
			defer closeNC()
			entries, err := dlqEntries(cmd.Context(), js, s, filter)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if entries == nil {
					entries = []dlqEntry{}
				}
				return a.printJSON(entries)
			}
			if len(entries) == 0 {
				fmt.Fprintln(a.stdout, "no dead letters")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SEQ\tSTAGE\tSUBJECT\tATTEMPTS\tTIME\tREASON")
			for _, e := range entries {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Stage, e.Subject, e.Attempts,
					e.Time.Local().Format(time.DateTime), oneLine(e.Reason, 100))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters")
	return cmd
}

// dlqGet reads one dead letter by its DLQ sequence.
func dlqGet(ctx context.Context, s jetstream.Stream, seq uint64) (*jetstream.RawStreamMsg, error) {
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("no dead letter with sequence %d (see `clawmem dlq list`)", seq)
	}
	if err != nil {
		return nil, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return m, nil
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
			_, s, closeNC, err := a.dlqStream(cmd.Context())
			if err != nil {
				return err
			}
			defer closeNC()
			m, err := dlqGet(cmd.Context(), s, seq)
			if err != nil {
				return err
			}
			e := newDLQEntry(m.Sequence, m.Subject, m.Header, m.Data, m.Time)
			if a.jsonOut {
				out := struct {
					dlqEntry
					DLQSubject string              `json:"dlqSubject"`
					Headers    map[string][]string `json:"headers"`
					Body       any                 `json:"body"`
				}{e, m.Subject, m.Header, string(m.Data)}
				if json.Valid(m.Data) {
					out.Body = json.RawMessage(m.Data)
				}
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "seq:      %d\nstage:    %s\nsubject:  %s\nattempts: %d\ntime:     %s\nreason:   %s\n",
				e.Seq, e.Stage, e.Subject, e.Attempts, e.Time.Local().Format(time.RFC3339), e.Reason)
			fmt.Fprintln(a.stdout, "headers:")
			for _, k := range slices.Sorted(maps.Keys(m.Header)) {
				for _, v := range m.Header[k] {
					fmt.Fprintf(a.stdout, "  %s: %s\n", k, v)
				}
			}
			fmt.Fprintf(a.stdout, "body (%d bytes):\n", len(m.Data))
			var pretty any
			if json.Unmarshal(m.Data, &pretty) == nil {
				b, _ := json.MarshalIndent(pretty, "", "  ")
				fmt.Fprintln(a.stdout, string(b))
			} else {
				fmt.Fprintln(a.stdout, string(m.Data))
			}
			return nil
		},
	}
}

// dlqReplayed is the outcome of replaying one dead letter.
type dlqReplayed struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	// Stream and StreamSeq are where the replayed copy was stored.
	Stream    string `json:"stream,omitempty"`
	StreamSeq uint64 `json:"streamSeq,omitempty"`
	Error     string `json:"error,omitempty"`
}

// dlqReplay republishes one dead letter to its original subject with a new
// Msg-Id, then deletes it from the DLQ. The Msg-Id is derived from the
// dead letter, so replaying again after a failed delete is deduplicated
// instead of stored twice.
func dlqReplay(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, m *jetstream.RawStreamMsg) dlqReplayed {
	e := newDLQEntry(m.Sequence, m.Subject, m.Header, m.Data, m.Time)
	r := dlqReplayed{Seq: m.Sequence, Subject: e.Subject}
	if e.Subject == "" {
		r.Error = "the dead letter does not say its original subject"
		return r
	}
	h := nats.Header{}
	for k, v := range m.Header {
		if !strings.HasPrefix(k, "Clawmem-Dlq-") && k != jetstream.MsgIDHeader {
			h[k] = v
		}
	}
	h.Set(jetstream.MsgIDHeader, fmt.Sprintf("dlq-replay-%d-%d", m.Sequence, m.Time.UnixNano()))
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: e.Subject, Header: h, Data: m.Data})
	if err != nil {
		r.Error = fmt.Sprintf("republish to %s: %v", e.Subject, err)
		return r
	}
	r.Stream, r.StreamSeq = ack.Stream, ack.Sequence
	if err := s.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		r.Error = fmt.Sprintf("replayed, but not removed from the DLQ: %v", err)
	}
	return r
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
			filter, err := dlqFilter(stage)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			js, s, closeNC, err := a.dlqStream(ctx)
			if err != nil {
				return err
			}
			defer closeNC()
			var seqs []uint64
			if all {
				entries, err := dlqEntries(ctx, js, s, filter)
				if err != nil {
					return err
				}
				for _, e := range entries {
					seqs = append(seqs, e.Seq)
				}
			} else {
				seq, err := parseSeq(args[0])
				if err != nil {
					return err
				}
				seqs = []uint64{seq}
			}
			results := []dlqReplayed{}
			failed := 0
			for _, seq := range seqs {
				m, err := dlqGet(ctx, s, seq)
				var r dlqReplayed
				switch {
				case err != nil:
					r = dlqReplayed{Seq: seq, Error: err.Error()}
				case stage != "" && newDLQEntry(m.Sequence, m.Subject, m.Header, m.Data, m.Time).Stage != stage:
					r = dlqReplayed{Seq: seq, Error: fmt.Sprintf("dead letter %d is not from stage %s", seq, stage)}
				default:
					r = dlqReplay(ctx, js, s, m)
				}
				if r.Error != "" {
					failed++
				}
				results = append(results, r)
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"replayed": len(results) - failed, "failed": failed, "results": results}); err != nil {
					return err
				}
			} else {
				for _, r := range results {
					if r.Error != "" {
						fmt.Fprintf(a.stdout, "%d: FAILED: %s\n", r.Seq, r.Error)
					} else {
						fmt.Fprintf(a.stdout, "%d: replayed to %s (%s #%d)\n", r.Seq, r.Subject, r.Stream, r.StreamSeq)
					}
				}
				fmt.Fprintf(a.stdout, "%d replayed, %d failed\n", len(results)-failed, failed)
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
			filter, err := dlqFilter(stage)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			_, s, closeNC, err := a.dlqStream(ctx)
			if err != nil {
				return err
			}
			defer closeNC()
			n, err := dlqCount(ctx, s, filter)
			if err != nil {
				return err
			}
			what := "dead letters"
			if stage != "" {
				what = "dead letters of stage " + stage
			}
			if !yes {
				if a.jsonOut {
					_ = a.printJSON(map[string]any{"purged": 0, "wouldPurge": n, "stage": stage})
					return errSilent{errors.New("not confirmed")}
				}
				return fmt.Errorf("this deletes %d %s for good; run again with --yes", n, what)
			}
			if n > 0 {
				var opts []jetstream.StreamPurgeOpt
				if stage != "" {
					opts = append(opts, jetstream.WithPurgeSubject(filter))
				}
				if err := s.Purge(ctx, opts...); err != nil {
					return fmt.Errorf("purge: %w", err)
				}
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"purged": n, "stage": stage})
			}
			fmt.Fprintf(a.stdout, "purged %d %s\n", n, what)
			return nil
		},
	}
	cmd.Flags().StringVar(&stage, "stage", "", "only this stage's dead letters")
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm: the messages cannot be recovered")
	return cmd
}
