// Package lessons distils sessions into lessons and hands them to the
// store worker: the distill worker on the events that end a session (or a
// compaction), and the transcript distiller on a schedule over the
// transcript stream. Both keep their records in the distill bucket —
// Distillation records for `clawmem distill status`, each session's mark
// and transcript cursor — so neither distils what the other did. The
// distiller itself (chunking, the model, evidence checks) is the distill
// package; this package is named for what it makes, and so does not need
// that package renamed where both are imported.
package lessons

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/work"
)

// DistillerAgent is the seed's distiller agent, whose own sessions are
// never distilled (it would learn from its own summaries).
const DistillerAgent = "memory-distiller"

// Config tunes the distill worker.
type Config struct {
	Stage stage.Config
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
	// importance 0.5 whenever a range of the session ends other than by
	// session_end: command:new or a reset (the seed's sessionMemory
	// option), and a compaction (before_compaction), after which the host
	// no longer holds those messages.
	SessionMemory         bool
	SessionMemoryMessages int
	// StaleAfter is when a running distillation of another worker counts as dead
	// and may be taken over. Default 15 min.
	StaleAfter time.Duration
	// Settle is how long after it was sent an event without inline
	// messages waits before it reads the transcript stream: the watcher
	// needs a moment to publish the last turn, and OpenClaw's before_reset,
	// which carries the messages, follows command:new at once. Default 2 s.
	Settle time.Duration
}

func (c Config) withDefaults() Config {
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

// Triggers are the event kinds that end a session, or (compaction)
// the part of it the model is about to lose, and so start its distillation.
var Triggers = []schemas.EventKind{schemas.KindCommandNew, schemas.KindCommandReset, schemas.KindBeforeReset,
	schemas.KindBeforeCompaction, schemas.KindSessionEnd}

// Worker distils ended sessions into lessons for the store worker.
type Worker struct {
	js    jetstream.JetStream
	d     *distill.Distiller
	cfg   Config
	route work.Route
	st    stage.Stage
	log   *slog.Logger
}

// NewWorker builds the distill stage.
func NewWorker(js jetstream.JetStream, d *distill.Distiller, cfg Config, m *stage.Metrics, log *slog.Logger) *Worker {
	cfg = cfg.withDefaults()
	w := &Worker{js: js, d: d, cfg: cfg, route: work.NewRoute(cfg.Partitions, cfg.Scopes), log: log}
	subjects := make([]string, len(Triggers))
	for i, k := range Triggers {
		subjects[i] = schemas.EventSubject(k, "*")
	}
	w.st = stage.Stage{Name: schemas.ConsumerDistill, JS: js, Stream: schemas.StreamEvents, Subjects: subjects,
		Config: cfg.Stage, Handle: w.handle, Metrics: m, Log: log}
	return w
}

// Run consumes with cfg.Workers loops until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	errs := make([]error, w.cfg.Workers)
	var wg sync.WaitGroup
	shared := w.st
	shared.State = new(stage.State)
	for i := range w.cfg.Workers {
		st := shared
		st.Unwatched = i > 0
		wg.Go(func() { errs[i] = st.Run(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (w *Worker) handle(ctx context.Context, msgs []jetstream.Msg) []error {
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		errs[i] = w.handleOne(ctx, m)
	}
	return errs
}

// errBusy: another worker is distilling the session right now; retry later
// (by then its mark has moved and this event finds only what is new).
var errBusy = errors.New("session is being distilled by another worker")

func (w *Worker) handleOne(ctx context.Context, m jetstream.Msg) error {
	kind, agent, err := schemas.ParseEventSubject(m.Subject())
	if err != nil {
		return stage.Permanent(err)
	}
	var ev schemas.HookEvent
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return stage.Permanent(fmt.Errorf("event is not JSON: %w", err))
	}
	if ev.V != schemas.Version {
		return stage.Permanent(fmt.Errorf("event version %d, this worker reads %d", ev.V, schemas.Version))
	}
	var se schemas.SessionEvent
	if len(ev.Event) > 0 && string(ev.Event) != "null" {
		if err := json.Unmarshal(ev.Event, &se); err != nil {
			return stage.Permanent(fmt.Errorf("%s payload: %w", kind, err))
		}
	}
	if agent == DistillerAgent {
		w.log.Info("distill skipped", "agent", agent, "trigger", kind, "reason", "the distiller agent's own sessions are not distilled")
		return nil
	}
	session := cmp.Or(se.SessionID, ev.SessionID)
	if session == "" {
		return stage.Permanent(fmt.Errorf("%s event names no session (sessionId)", kind))
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
	rec := Distillation{Agent: agent, Session: session, Range: id, Trigger: string(kind), Status: StatusRunning, Source: source,
		Attempts: previousAttempts(ctx, kv, agent, session, id) + 1}
	if err := putDistillation(ctx, kv, &rec); err != nil {
		w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", err)
	}
	rec, err = w.distill(ctx, m, kind, agent, session, id, fresh, rec)
	if err != nil {
		rec.Status, rec.Error = StatusError, err.Error()
		if perr := putDistillation(ctx, kv, &rec); perr != nil {
			w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", perr)
		}
		return err
	}
	mark.Tail = tailOf(fresh)
	mark.Ranges++
	mark.Messages += len(fresh)
	w.moveTranscriptCursor(ctx, agent, session, view, mark.Tail)
	rec.Status, rec.Error = StatusDone, ""
	if err := putDistillation(ctx, kv, &rec); err != nil {
		// The lessons are stored; a retry would only find them again.
		w.log.Warn("distill status not saved", "agent", agent, "session", session, "err", err)
	}
	w.log.Info("session range distilled", "agent", agent, "session", session, "range", id, "trigger", kind, "source", source,
		"messages", len(fresh), "of", len(msgs), "lessons", rec.Lessons, "distiller", rec.Distiller)
	return nil
}
