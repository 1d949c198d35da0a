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
	"github.com/clawmem/clawmem/schemas"
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
	// JobEmpty: the session's messages were found nowhere yet (OpenClaw
	// sends several session-end events, not all carrying them); a later
	// event for the session distils it.
	JobEmpty = "empty"
)

// DistillJob is a session's distillation record in the distill KV bucket:
// the idempotency key of the event-driven worker and what `distill status`
// shows.
type DistillJob struct {
	Agent     string        `json:"agent"`
	Session   string        `json:"session"`
	Trigger   string        `json:"trigger"` // the event kind, or "cursor"/"manual"
	Status    string        `json:"status"`
	Source    string        `json:"source,omitempty"` // inline, stream, file or none
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

// JobKey is the distill bucket key of a session's job.
func JobKey(agent, session string) string {
	return "job." + agent + "." + schemas.SubjectToken(session)
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
	// SessionMemory stores a summary of the session's last
	// SessionMemoryMessages messages (default 15) as a fact in global with
	// importance 0.5 on command:new (the seed's sessionMemory option).
	SessionMemory         bool
	SessionMemoryMessages int
	// StaleAfter is when a running job of another worker counts as dead
	// and may be taken over. Default 15 min.
	StaleAfter time.Duration
}

func (c DistillConfig) withDefaults() DistillConfig {
	if c.Workers <= 0 {
		c.Workers = 2
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

// DistillTriggers are the event kinds that end a session and so start its
// distillation.
var DistillTriggers = []schemas.EventKind{schemas.KindCommandNew, schemas.KindCommandReset, schemas.KindBeforeReset, schemas.KindSessionEnd}

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
	for i := range w.cfg.Workers {
		st := w.st
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
// (by then it is done and this event is acknowledged as a repeat).
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
		return nil
	}
	session := cmp.Or(se.SessionID, ev.SessionID)
	if session == "" {
		return Permanent(fmt.Errorf("%s event names no session (sessionId)", kind))
	}
	kv, err := w.js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return fmt.Errorf("distill bucket: %w", err)
	}
	job, rev, claimed, err := claimJob(ctx, kv, agent, session, string(kind), w.cfg.StaleAfter)
	if err != nil || !claimed {
		return err
	}
	job, err = w.distill(ctx, m, kind, agent, session, se, job)
	if err != nil {
		job.Status, job.Error = JobError, err.Error()
		if _, perr := putJob(ctx, kv, &job, rev); perr != nil {
			w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", perr)
		}
		return err
	}
	job.Status, job.Error = JobDone, ""
	if job.Source == "none" {
		job.Status = JobEmpty
	}
	if _, err := putJob(ctx, kv, &job, rev); err != nil {
		// The lessons are stored; a retry would only find them again.
		w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", err)
	}
	w.log.Info("session distilled", "agent", agent, "session", session, "trigger", kind, "source", job.Source,
		"messages", job.Stats.Messages, "lessons", job.Lessons, "distiller", job.Distiller)
	return nil
}

// distill assembles the session, distils it and hands the lessons on.
func (w *DistillWorker) distill(ctx context.Context, m jetstream.Msg, kind schemas.EventKind, agent, session string,
	se schemas.SessionEvent, job DistillJob) (DistillJob, error) {
	msgs, source, lastSeq, err := w.assemble(ctx, agent, session, se)
	if err != nil {
		return job, err
	}
	job.Source = source
	res, err := w.d.Distill(ctx, msgs, distill.Options{OnProgress: func() { _ = m.InProgress() }})
	if err != nil {
		return job, fmt.Errorf("distill: %w", err)
	}
	job.Stats, job.Distiller, job.Model, job.Warnings = res.Stats, res.Distiller, res.Model, res.Warnings
	items := lessonItems(agent, session, res, msgs, w.cfg.Dedup)
	job.Lessons = len(items)
	if w.cfg.SessionMemory && kind == schemas.KindCommandNew {
		if text := distill.SessionSummary(msgs, w.cfg.SessionMemoryMessages); text != "" {
			meta, _ := json.Marshal(map[string]any{"source": "session-memory", "sessionId": session})
			items = append(items, schemas.CaptureItem{
				SourceID: SourceID(agent, session, "summary\x00"+text), Text: text, Category: schemas.CategoryFact,
				Scope: schemas.GlobalScope, Importance: 0.5, Dedup: w.cfg.Dedup, Metadata: meta,
			})
			job.Summary = true
		}
	}
	if err := publishWork(ctx, w.js, agent, "distill", "distill-"+agent+"-"+schemas.SubjectToken(session), items); err != nil {
		return job, err
	}
	if source == "stream" {
		// The cursor job need not distil what this session's end did.
		if err := advanceCursor(ctx, w.js, agent, session, lastSeq); err != nil {
			w.log.Warn("transcript cursor not advanced", "agent", agent, "session", session, "err", err)
		}
	}
	return job, nil
}

// assemble finds the session's messages: carried by the event, else on the
// transcript stream, else in the JSONL file. No messages anywhere is not an
// error: the session is done with nothing to learn.
func (w *DistillWorker) assemble(ctx context.Context, agent, session string, se schemas.SessionEvent) ([]distill.Message, string, uint64, error) {
	if msgs := distill.FromHook(se.Messages); len(msgs) > 0 {
		return msgs, "inline", 0, nil
	}
	entries, last, err := readTranscript(ctx, w.js, schemas.TranscriptSubject(agent, session), 0)
	if err != nil {
		return nil, "", 0, err
	}
	if msgs := distill.FromEntries(sessionEntries(entries, session)); len(msgs) > 0 {
		return msgs, "stream", last, nil
	}
	path, err := distill.ResolveSessionFile(w.cfg.StateDir, agent, session, se.SessionFile)
	if err != nil {
		if errors.Is(err, schemas.ErrInvalid) {
			return nil, "", 0, Permanent(err)
		}
		w.log.Info("no transcript for session", "agent", agent, "session", session, "err", err)
		return nil, "none", 0, nil
	}
	tr, err := distill.ReadFile(path)
	if err != nil {
		return nil, "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return tr.Messages, "file", 0, nil
}

// sessionEntries keeps the entries of session: subject tokens are
// sanitised, so two session ids can share one subject.
func sessionEntries(entries []schemas.TranscriptEntry, session string) []schemas.TranscriptEntry {
	return slices.DeleteFunc(entries, func(e schemas.TranscriptEntry) bool { return e.SessionID != "" && e.SessionID != session })
}

// claimJob takes a session's job for this worker with compare-and-set: a
// done job is not redone (claimed false, nil error), a fresh running job
// of another worker is errBusy, anything else is taken over.
func claimJob(ctx context.Context, kv jetstream.KeyValue, agent, session, trigger string, staleAfter time.Duration) (DistillJob, uint64, bool, error) {
	key := JobKey(agent, session)
	for range 5 {
		job := DistillJob{Agent: agent, Session: session, Trigger: trigger, Status: JobRunning}
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			job.Attempts = 1
			rev, err := putJob(ctx, kv, &job, 0)
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			return job, rev, err == nil, err
		case err != nil:
			return job, 0, false, fmt.Errorf("read job: %w", err)
		}
		var old DistillJob
		_ = json.Unmarshal(e.Value(), &old)
		switch {
		case old.Status == JobDone:
			return old, 0, false, nil
		case old.Status == JobRunning && time.Since(old.Updated) < staleAfter:
			return old, 0, false, errBusy
		}
		job.Attempts = old.Attempts + 1
		rev, err := putJob(ctx, kv, &job, e.Revision())
		if errors.Is(err, jetstream.ErrKeyExists) || isWrongRevision(err) {
			continue
		}
		return job, rev, err == nil, err
	}
	return DistillJob{}, 0, false, errBusy
}

// putJob writes job: created when rev is 0, else only over revision rev.
func putJob(ctx context.Context, kv jetstream.KeyValue, job *DistillJob, rev uint64) (uint64, error) {
	job.Updated = time.Now().UTC()
	b, err := json.Marshal(job)
	if err != nil {
		return 0, err
	}
	key := JobKey(job.Agent, job.Session)
	if rev == 0 {
		return kv.Create(ctx, key, b)
	}
	return kv.Update(ctx, key, b, rev)
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
