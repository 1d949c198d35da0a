package workers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// DistillerAgent is the seed's distiller agent, whose own sessions are
// never distilled (it would learn from its own summaries).
const DistillerAgent = "memory-distiller"

// Job states, as `clawmem distill status` shows them.
const (
	JobQueued  = "queued"
	JobRunning = "running"
	JobDone    = "done"
	JobError   = "error"
)

// DistillJob is the record of one distilled range of a session in the
// distill KV bucket, as `clawmem distill status` shows it.
type DistillJob struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	// Range names the distilled messages (see rangeID); "" on the cursor
	// job's records.
	Range     string        `json:"range,omitempty"`
	Trigger   string        `json:"trigger"` // the event kind, or "cursor"/"manual"
	Status    string        `json:"status"`
	Source    string        `json:"source,omitempty"` // inline, stream or file
	Stats     distill.Stats `json:"stats"`
	Distiller string        `json:"distiller,omitempty"`
	Model     string        `json:"model,omitempty"`
	Lessons   int           `json:"lessons"`
	Summary   bool          `json:"sessionSummary,omitempty"`
	Error     string        `json:"error,omitempty"`
	Attempts  int           `json:"attempts"`
	Warnings  []string      `json:"warnings,omitempty"`
	Updated   time.Time     `json:"updated"`
}

// DistillConfig tunes the distill worker.
type DistillConfig struct {
	Stage StageConfig
	// Workers is how many sessions are distilled at once. Default 2.
	Workers int
	// StateDir is OpenClaw's state directory, for reading a session's
	// JSONL file when neither the event nor the transcript stream has it.
	// Empty: $OPENCLAW_STATE_DIR, else ~/.openclaw.
	StateDir string
	// Dedup is the store's duplicate threshold for lessons. Default 0.95.
	Dedup float64
	// Partitions is how many partitions the work stream has; default
	// schemas.DefaultPartitions.
	Partitions int
	// Scopes are the scope rules a lesson's writer is resolved by; nil:
	// the built-in rules.
	Scopes *scopes.Manager
	// SessionMemory stores a summary of the session's last
	// SessionMemoryMessages messages (default 15) as a fact in global with
	// importance 0.5 on command:new (the seed's sessionMemory option).
	SessionMemory         bool
	SessionMemoryMessages int
	// StaleAfter is when a running job of another worker counts as dead
	// and may be taken over. Default 15 min.
	StaleAfter time.Duration
	// Settle is how long after it was sent an event without inline
	// messages waits before it reads the transcript stream: the watcher
	// needs a moment to publish the last turn, and OpenClaw's before_reset,
	// which carries the messages, follows command:new at once. Default 2 s.
	Settle time.Duration
}

func (c DistillConfig) withDefaults() DistillConfig {
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.Partitions <= 0 {
		c.Partitions = schemas.DefaultPartitions
	}
	if c.Dedup <= 0 {
		c.Dedup = 0.95
	}
	if c.SessionMemoryMessages <= 0 {
		c.SessionMemoryMessages = distill.DefaultSummaryMessages
	}
	if c.StaleAfter <= 0 {
		c.StaleAfter = 15 * time.Minute
	}
	if c.Settle <= 0 {
		c.Settle = 2 * time.Second
	}
	// One session per batch: a batch is as slow as its slowest session.
	c.Stage.Batch = 1
	if c.Stage.AckWait <= 0 {
		c.Stage.AckWait = time.Minute
	}
	if c.Stage.MaxDuration <= 0 {
		c.Stage.MaxDuration = 30 * time.Minute
	}
	return c
}

// DistillTriggers are the event kinds that end a session, or (compaction)
// the part of it the model is about to lose, and so start its distillation.
var DistillTriggers = []schemas.EventKind{schemas.KindCommandNew, schemas.KindCommandReset, schemas.KindBeforeReset,
	schemas.KindBeforeCompaction, schemas.KindSessionEnd}

// DistillWorker distils ended sessions into lessons for the store worker.
type DistillWorker struct {
	js  jetstream.JetStream
	d   *distill.Distiller
	cfg DistillConfig
	st  stage
	log *slog.Logger
}

// NewDistillWorker builds the distill stage.
func NewDistillWorker(js jetstream.JetStream, d *distill.Distiller, cfg DistillConfig, m *StageMetrics, log *slog.Logger) *DistillWorker {
	cfg = cfg.withDefaults()
	w := &DistillWorker{js: js, d: d, cfg: cfg, log: log}
	subjects := make([]string, len(DistillTriggers))
	for i, k := range DistillTriggers {
		subjects[i] = schemas.EventSubject(k, "*")
	}
	w.st = stage{name: schemas.ConsumerDistill, js: js, stream: schemas.StreamEvents, subjects: subjects,
		cfg: cfg.Stage, handle: w.handle, metrics: m, log: log}
	return w
}

// Run consumes with cfg.Workers loops until ctx ends.
func (w *DistillWorker) Run(ctx context.Context) error {
	errs := make([]error, w.cfg.Workers)
	var wg sync.WaitGroup
	shared := w.st
	shared.state = new(consumerState)
	for i := range w.cfg.Workers {
		st := shared
		st.unwatched = i > 0
		wg.Go(func() { errs[i] = st.run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *DistillWorker) handle(ctx context.Context, msgs []jetstream.Msg) []error {
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		errs[i] = w.handleOne(ctx, m)
	}
	return errs
}

// errBusy: another worker is distilling the session right now; retry later
// (by then its mark has moved and this event finds only what is new).
var errBusy = errors.New("session is being distilled by another worker")

func (w *DistillWorker) handleOne(ctx context.Context, m jetstream.Msg) error {
	kind, agent, err := schemas.ParseEventSubject(m.Subject())
	if err != nil {
		return Permanent(err)
	}
	var ev schemas.HookEvent
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return Permanent(fmt.Errorf("event is not JSON: %w", err))
	}
	if ev.V != schemas.Version {
		return Permanent(fmt.Errorf("event version %d, this worker reads %d", ev.V, schemas.Version))
	}
	var se schemas.SessionEvent
	if len(ev.Event) > 0 && string(ev.Event) != "null" {
		if err := json.Unmarshal(ev.Event, &se); err != nil {
			return Permanent(fmt.Errorf("%s payload: %w", kind, err))
		}
	}
	if agent == DistillerAgent {
		w.log.Info("distill skipped", "agent", agent, "trigger", kind, "reason", "the distiller agent's own sessions are not distilled")
		return nil
	}
	session := cmp.Or(se.SessionID, ev.SessionID)
	if session == "" {
		return Permanent(fmt.Errorf("%s event names no session (sessionId)", kind))
	}
	if len(se.Messages) == 0 && ev.Timestamp > 0 {
		if wait := w.cfg.Settle - time.Since(time.UnixMilli(ev.Timestamp)); wait > 0 {
			select {
			case <-time.After(min(wait, w.cfg.Settle)):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	kv, err := w.js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return fmt.Errorf("distill bucket: %w", err)
	}
	mark, rev, err := lockSession(ctx, kv, agent, session, w.cfg.StaleAfter)
	if err != nil {
		return err
	}
	// The mark is released on every path; only a distilled range moves it.
	release := func() {
		mark.Busy = false
		if _, err := putMark(ctx, kv, &mark, rev); err != nil {
			w.log.Warn("session mark not released; it frees itself when stale", "agent", agent, "session", session, "err", err)
		}
	}
	defer release()

	msgs, source, view, err := w.assemble(ctx, agent, session, se, ev.Timestamp)
	if err != nil {
		return err
	}
	fresh := sinceMark(msgs, mark.Tail)
	if len(fresh) == 0 {
		reason := "no messages found (not in the event, not on the transcript stream, no session file)"
		if len(msgs) > 0 {
			reason = fmt.Sprintf("nothing new since the last distillation (%d messages from %s, all distilled before)", len(msgs), source)
		}
		w.log.Info("distill skipped", "agent", agent, "session", session, "trigger", kind, "reason", reason)
		return nil
	}
	id := rangeID(fresh)
	job := DistillJob{Agent: agent, Session: session, Range: id, Trigger: string(kind), Status: JobRunning, Source: source,
		Attempts: previousAttempts(ctx, kv, agent, session, id) + 1}
	if err := putJob(ctx, kv, &job); err != nil {
		w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", err)
	}
	job, err = w.distill(ctx, m, kind, agent, session, id, fresh, job)
	if err != nil {
		job.Status, job.Error = JobError, err.Error()
		if perr := putJob(ctx, kv, &job); perr != nil {
			w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", perr)
		}
		return err
	}
	mark.Tail = tailOf(fresh)
	mark.Ranges++
	mark.Messages += len(fresh)
	w.advanceStreamCursor(ctx, agent, session, view, mark.Tail)
	job.Status, job.Error = JobDone, ""
	if err := putJob(ctx, kv, &job); err != nil {
		// The lessons are stored; a retry would only find them again.
		w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", err)
	}
	w.log.Info("session range distilled", "agent", agent, "session", session, "range", id, "trigger", kind, "source", source,
		"messages", len(fresh), "of", len(msgs), "lessons", job.Lessons, "distiller", job.Distiller)
	return nil
}

// distill distils one range of a session and hands the lessons on.
func (w *DistillWorker) distill(ctx context.Context, m jetstream.Msg, kind schemas.EventKind, agent, session, rangeID string,
	msgs []distill.Message, job DistillJob) (DistillJob, error) {
	res, err := w.d.Distill(ctx, msgs, distill.Options{OnProgress: func() { _ = m.InProgress() }})
	if err != nil {
		return job, fmt.Errorf("distill: %w", err)
	}
	job.Stats, job.Distiller, job.Model, job.Warnings = res.Stats, res.Distiller, res.Model, res.Warnings
	items := lessonItems(agent, session, res, msgs, w.cfg.Dedup)
	job.Lessons = len(items)
	if w.cfg.SessionMemory && kind != schemas.KindSessionEnd {
		// One summary per range a /new or /reset ends (the seed's
		// sessionMemory on /new).
		if text := distill.SessionSummary(msgs, w.cfg.SessionMemoryMessages); text != "" {
			meta, _ := json.Marshal(map[string]any{"source": "session-memory", "sessionId": session, "range": rangeID})
			items = append(items, schemas.CaptureItem{
				SourceID: SourceID(agent, session, purge.KindSummary+text), Text: text, Category: schemas.CategoryFact,
				Scope: schemas.GlobalScope, Importance: 0.5, Dedup: w.cfg.Dedup, Metadata: meta,
			})
			job.Summary = true
		}
	}
	msgID := "distill-" + agent + "-" + schemas.SubjectToken(session) + "-" + rangeID
	if err := publishWork(ctx, w.js, newWorkRoute(w.cfg.Partitions, w.cfg.Scopes), agent, "distill", msgID, items); err != nil {
		return job, err
	}
	return job, nil
}

// advanceStreamCursor moves the cursor job's position for the session to
// the stream entry where the distilled range ends, when the transcript
// stream has it, so the scheduled job does not distil the range again.
func (w *DistillWorker) advanceStreamCursor(ctx context.Context, agent, session string, view streamView, tail []string) {
	end := markEnd(view.msgs, tail)
	if end <= 0 || view.msgs[end-1].EntryID == "" {
		return
	}
	seq, ok := view.seqOf[view.msgs[end-1].EntryID]
	if !ok {
		return
	}
	if err := advanceCursor(ctx, w.js, agent, session, seq); err != nil {
		w.log.Warn("transcript cursor not advanced", "agent", agent, "session", session, "err", err)
	}
}

// assemble finds the session's messages: on the transcript stream when it
// holds them (its entries carry the transcript's own ids, which lessons
// cite), else carried by the event, else in the JSONL file. No messages
// anywhere is not an error: there is nothing to distil (source "none").
// From the stream it takes only messages written before the event (at,
// unix ms; 0: all): a session-end event handled late — after a busy retry —
// must not take the first messages of the session's next range, which the
// next /new ends. The stream is used over inline messages only when it has
// caught up with them (its last message is theirs).
func (w *DistillWorker) assemble(ctx context.Context, agent, session string, se schemas.SessionEvent, at int64) ([]distill.Message, string, streamView, error) {
	inline := distill.FromHook(se.Messages)
	entries, seqs, _, err := readTranscriptSeqs(ctx, w.js, schemas.TranscriptSubject(agent, session), 0)
	if err != nil {
		return nil, "", streamView{}, err
	}
	view := streamView{seqOf: make(map[string]uint64, len(entries))}
	kept := entries[:0:0]
	for i, e := range entries {
		if (e.SessionID != "" && e.SessionID != session) || (at > 0 && e.Timestamp > at) {
			continue
		}
		kept = append(kept, e)
		if e.EntryID != "" {
			view.seqOf[e.EntryID] = seqs[i]
		}
	}
	view.msgs = distill.FromEntries(kept)
	stream := view.msgs
	switch {
	case len(stream) > 0 && (len(inline) == 0 || msgFingerprint(stream[len(stream)-1]) == msgFingerprint(inline[len(inline)-1])):
		return stream, "stream", view, nil
	case len(inline) > 0:
		return inline, "inline", view, nil
	}
	path, err := distill.ResolveSessionFile(w.cfg.StateDir, agent, session, se.SessionFile)
	if err != nil {
		if errors.Is(err, schemas.ErrInvalid) {
			return nil, "", view, Permanent(err)
		}
		return nil, "none", view, nil
	}
	tr, err := distill.ReadFile(path)
	if err != nil {
		return nil, "", view, fmt.Errorf("read %s: %w", path, err)
	}
	return tr.Messages, "file", view, nil
}

// streamView is a session's messages on the transcript stream, with the
// stream sequence of each entry id.
type streamView struct {
	msgs  []distill.Message
	seqOf map[string]uint64
}

// sessionEntries keeps the entries of session: subject tokens are
// sanitised, so two session ids can share one subject.
func sessionEntries(entries []schemas.TranscriptEntry, session string) []schemas.TranscriptEntry {
	return slices.DeleteFunc(entries, func(e schemas.TranscriptEntry) bool { return e.SessionID != "" && e.SessionID != session })
}

func isWrongRevision(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// Jobs lists the distill jobs (agent "" = all), newest first.
func Jobs(ctx context.Context, js jetstream.JetStream, agent string) ([]DistillJob, error) {
	kv, err := js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return nil, fmt.Errorf("distill bucket: %w", err)
	}
	filters := []string{"job.>", "range.>"}
	if agent != "" {
		filters = []string{"job." + agent + ".>", "range." + agent + ".>"}
	}
	lister, err := kv.ListKeysFiltered(ctx, filters...)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var jobs []DistillJob
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var j DistillJob
		if json.Unmarshal(e.Value(), &j) == nil {
			jobs = append(jobs, j)
		}
	}
	slices.SortFunc(jobs, func(a, b DistillJob) int { return b.Updated.Compare(a.Updated) })
	return jobs, nil
}
