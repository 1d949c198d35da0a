package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

// DeadLetter is a message the pipeline gave up on, as its Clawmem-Dlq-*
// headers describe it.
type DeadLetter struct {
	Seq      uint64    `json:"seq"` // in the DLQ stream
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

// DeadLetterMessage is one dead letter in full. In JSON the body is
// itself JSON when it is valid JSON, else a string.
type DeadLetterMessage struct {
	DeadLetter
	DLQSubject string      // where the DLQ holds it
	Headers    nats.Header // the original headers and the Clawmem-Dlq-* ones
	Body       []byte      // as it was published
	stored     time.Time   // when the DLQ stored it, which names its replays
}

// MarshalJSON writes the entry's fields, dlqSubject, headers and body.
func (m DeadLetterMessage) MarshalJSON() ([]byte, error) {
	var body any = string(m.Body)
	if json.Valid(m.Body) {
		body = json.RawMessage(m.Body)
	}
	return json.Marshal(struct {
		DeadLetter
		DLQSubject string              `json:"dlqSubject"`
		Headers    map[string][]string `json:"headers"`
		Body       any                 `json:"body"`
	}{m.DeadLetter, m.DLQSubject, m.Headers, body})
}

// ReplayResult is the outcome of replaying one dead letter.
type ReplayResult struct {
	Seq     uint64 `json:"seq"`
	Subject string `json:"subject"`
	// Stream and StreamSeq are where the replayed copy was stored.
	Stream    string `json:"stream,omitempty"`
	StreamSeq uint64 `json:"streamSeq,omitempty"`
	Error     string `json:"error,omitempty"`
}

func newDeadLetter(seq uint64, subject string, h nats.Header, data []byte, stored time.Time) DeadLetter {
	e := DeadLetter{Seq: seq, Stage: h.Get(schemas.HeaderDLQStage), Subject: h.Get(schemas.HeaderDLQSubject),
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

// CheckStage refuses a stage name that is no single subject token; ""
// (every stage) passes.
func CheckStage(stage string) error {
	if schemas.SubjectToken(stage) != stage && stage != "" {
		return fmt.Errorf("%q is not a stage name (capture, store, distill, ...)", stage)
	}
	return nil
}

// dlqFilter is the DLQ subject filter for a stage (empty: every stage).
func dlqFilter(stage string) (string, error) {
	if err := CheckStage(stage); err != nil || stage == "" {
		return schemas.DLQSubject, err
	}
	return schemas.DLQPrefix + "." + stage + ".>", nil
}

// dlq opens the DLQ stream and returns it with the subject filter for stage.
func (p *NATSPipeline) dlq(ctx context.Context, stage string) (jetstream.JetStream, jetstream.Stream, string, error) {
	filter, err := dlqFilter(stage)
	if err != nil {
		return nil, nil, "", err
	}
	_, js, err := p.get()
	if err != nil {
		return nil, nil, "", err
	}
	st, err := js.Stream(ctx, schemas.StreamDLQ)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, "", fmt.Errorf("no %s stream on this NATS: has clawmem run here?", schemas.StreamDLQ)
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("open %s: %w", schemas.StreamDLQ, err)
	}
	return js, st, filter, nil
}

// dlqCount is how many dead letters filter matches.
func dlqCount(ctx context.Context, st jetstream.Stream, filter string) (int, error) {
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n, nil
}

// CountDeadLetters asks the stream for its per-subject counts, without
// reading a message.
func (p *NATSPipeline) CountDeadLetters(ctx context.Context, stage string) (int, error) {
	_, st, filter, err := p.dlq(ctx, stage)
	if err != nil {
		return 0, err
	}
	return dlqCount(ctx, st, filter)
}

// DeadLetters reads the DLQ with an ordered consumer, which leaves no
// state on the server.
func (p *NATSPipeline) DeadLetters(ctx context.Context, stage string) ([]DeadLetter, error) {
	js, st, filter, err := p.dlq(ctx, stage)
	if err != nil {
		return nil, err
	}
	return dlqEntries(ctx, js, st, filter)
}

// dlqEntries reads every dead letter filter matches, oldest first.
func dlqEntries(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, filter string) ([]DeadLetter, error) {
	out := []DeadLetter{}
	total, err := dlqCount(ctx, st, filter)
	if err != nil || total == 0 {
		return out, err
	}
	cons, err := js.OrderedConsumer(ctx, schemas.StreamDLQ, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", schemas.StreamDLQ, err)
	}
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
			out = append(out, newDeadLetter(md.Sequence.Stream, m.Subject(), m.Headers(), m.Data(), md.Timestamp))
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

// dlqGet reads one dead letter by its DLQ sequence.
func dlqGet(ctx context.Context, st jetstream.Stream, seq uint64) (DeadLetterMessage, error) {
	m, err := st.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return DeadLetterMessage{}, fmt.Errorf("%w with sequence %d (see `clawmem dlq list`)", ErrNoDeadLetter, seq)
	}
	if err != nil {
		return DeadLetterMessage{}, fmt.Errorf("read dead letter %d: %w", seq, err)
	}
	return DeadLetterMessage{DeadLetter: newDeadLetter(m.Sequence, m.Subject, m.Header, m.Data, m.Time),
		DLQSubject: m.Subject, Headers: m.Header, Body: m.Data, stored: m.Time}, nil
}

// DeadLetter reads the message by sequence straight from the stream.
func (p *NATSPipeline) DeadLetter(ctx context.Context, seq uint64) (DeadLetterMessage, error) {
	_, st, _, err := p.dlq(ctx, "")
	if err != nil {
		return DeadLetterMessage{}, err
	}
	return dlqGet(ctx, st, seq)
}

// Replay reads every dead letter again before replaying it, so that one
// replayed or purged meanwhile fails alone.
func (p *NATSPipeline) Replay(ctx context.Context, stage string, seq uint64) ([]ReplayResult, error) {
	js, st, filter, err := p.dlq(ctx, stage)
	if err != nil {
		return nil, err
	}
	seqs := []uint64{seq}
	if seq == 0 {
		entries, err := dlqEntries(ctx, js, st, filter)
		if err != nil {
			return nil, err
		}
		seqs = seqs[:0]
		for _, e := range entries {
			seqs = append(seqs, e.Seq)
		}
	}
	results := []ReplayResult{}
	for _, seq := range seqs {
		m, err := dlqGet(ctx, st, seq)
		switch {
		case err != nil:
			results = append(results, ReplayResult{Seq: seq, Error: err.Error()})
		case stage != "" && m.Stage != stage:
			results = append(results, ReplayResult{Seq: seq, Error: fmt.Sprintf("dead letter %d is not from stage %s", seq, stage)})
		default:
			results = append(results, replay(ctx, js, st, m))
		}
	}
	return results, nil
}

// replay republishes one dead letter to its original subject with a new
// Msg-Id, then deletes it from the DLQ. The Msg-Id is derived from the
// dead letter, so replaying again after a failed delete is deduplicated
// instead of stored twice.
func replay(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, m DeadLetterMessage) ReplayResult {
	r := ReplayResult{Seq: m.Seq, Subject: m.Subject}
	if m.Subject == "" {
		r.Error = "the dead letter does not say its original subject"
		return r
	}
	h := nats.Header{}
	for k, v := range m.Headers {
		if !strings.HasPrefix(k, "Clawmem-Dlq-") && k != jetstream.MsgIDHeader {
			h[k] = v
		}
	}
	h.Set(jetstream.MsgIDHeader, fmt.Sprintf("dlq-replay-%d-%d", m.Seq, m.stored.UnixNano()))
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: h, Data: m.Body})
	if err != nil {
		r.Error = fmt.Sprintf("republish to %s: %v", m.Subject, err)
		return r
	}
	r.Stream, r.StreamSeq = ack.Stream, ack.Sequence
	if err := st.DeleteMsg(ctx, m.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		r.Error = fmt.Sprintf("replayed, but not removed from the DLQ: %v", err)
	}
	return r
}

// PurgeDeadLetters counts before it purges: jetstream's Purge does not
// say how many messages it removed.
func (p *NATSPipeline) PurgeDeadLetters(ctx context.Context, stage string) (int, error) {
	_, st, filter, err := p.dlq(ctx, stage)
	if err != nil {
		return 0, err
	}
	n, err := dlqCount(ctx, st, filter)
	if err != nil || n == 0 {
		return 0, err
	}
	var opts []jetstream.StreamPurgeOpt
	if stage != "" {
		opts = append(opts, jetstream.WithPurgeSubject(filter))
	}
	if err := st.Purge(ctx, opts...); err != nil {
		return 0, fmt.Errorf("purge: %w", err)
	}
	return n, nil
}

// WriteText prints the dead letter for a person: its entry, every header,
// and the body (indented when it is JSON).
func (m DeadLetterMessage) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "seq:      %d\nstage:    %s\nsubject:  %s\nattempts: %d\ntime:     %s\nreason:   %s\n",
		m.Seq, m.Stage, m.Subject, m.Attempts, m.Time.Local().Format(time.RFC3339), m.Reason)
	fmt.Fprintln(w, "headers:")
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		for _, v := range m.Headers[k] {
			fmt.Fprintf(w, "  %s: %s\n", k, v)
		}
	}
	fmt.Fprintf(w, "body (%d bytes):\n", len(m.Body))
	var pretty any
	if json.Unmarshal(m.Body, &pretty) == nil {
		b, _ := json.MarshalIndent(pretty, "", "  ")
		fmt.Fprintln(w, string(b))
	} else {
		fmt.Fprintln(w, string(m.Body))
	}
	return nil
}

// WriteDeadLetters prints the dead letters as a table, one per row.
func WriteDeadLetters(w io.Writer, entries []DeadLetter) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "no dead letters")
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSTAGE\tSUBJECT\tATTEMPTS\tTIME\tREASON")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\n", e.Seq, e.Stage, e.Subject, e.Attempts,
			e.Time.Local().Format(time.DateTime), textutil.OneLine(e.Reason, 100))
	}
	return tw.Flush()
}

// WriteReplays prints each replay's outcome and the totals.
func WriteReplays(w io.Writer, results []ReplayResult) error {
	failed := 0
	for _, r := range results {
		if r.Error != "" {
			failed++
			fmt.Fprintf(w, "%d: FAILED: %s\n", r.Seq, r.Error)
		} else {
			fmt.Fprintf(w, "%d: replayed to %s (%s #%d)\n", r.Seq, r.Subject, r.Stream, r.StreamSeq)
		}
	}
	_, err := fmt.Fprintf(w, "%d replayed, %d failed\n", len(results)-failed, failed)
	return err
}
