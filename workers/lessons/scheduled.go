package lessons

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/robfig/cron/v3"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/internal/schedule"
	"github.com/clawmem/clawmem/workers/work"
)

// TranscriptConfig tunes the transcript distiller (the seed's hourly cron
// distiller, over the transcript stream instead of files).
type TranscriptConfig struct {
	// Schedule is a cron spec (five fields, or @hourly, @every 30m, ...).
	// Default @hourly.
	Schedule string
	// Idle is how long a session must have been quiet before its new
	// messages are distilled. Default 30 min.
	Idle time.Duration
	// Agents is the allowlist; empty, "*" or "all" mean every agent. The
	// distiller agent itself is always skipped.
	Agents []string
	// Dedup is the store's duplicate threshold for lessons. Default 0.95.
	Dedup float64
	// Partitions is how many partitions the work stream has; default
	// schemas.DefaultPartitions.
	Partitions int
	// Scopes are the scope rules a lesson's writer is resolved by; nil:
	// the built-in rules.
	Scopes *scopes.Manager
}

func (c TranscriptConfig) withDefaults() TranscriptConfig {
	if c.Schedule == "" {
		c.Schedule = "@hourly"
	}
	if c.Idle <= 0 {
		c.Idle = 30 * time.Minute
	}
	if c.Dedup <= 0 {
		c.Dedup = 0.95
	}
	if c.Partitions <= 0 {
		c.Partitions = schemas.DefaultPartitions
	}
	return c
}

// allows reports whether agent is distilled.
func (c TranscriptConfig) allows(agent string) bool {
	if agent == DistillerAgent {
		return false
	}
	if len(c.Agents) == 0 || slices.Contains(c.Agents, "*") || slices.Contains(c.Agents, "all") {
		return true
	}
	return slices.Contains(c.Agents, agent)
}

// TranscriptDistiller is the scheduled distiller: it distils transcript
// ranges not yet distilled, then moves each session's transcript cursor,
// only after the lessons are handed to the store worker: a crash repeats
// work (which stores nothing twice) but never loses it.
type TranscriptDistiller struct {
	js    jetstream.JetStream
	d     *distill.Distiller
	cfg   TranscriptConfig
	route work.Route
	log   *slog.Logger
	// beforeCommit, for tests, runs between publishing and moving the
	// cursor; an error there is a crash.
	beforeCommit func(agent, session string) error
}

// NewTranscriptDistiller checks cfg's schedule and builds the distiller.
func NewTranscriptDistiller(js jetstream.JetStream, d *distill.Distiller, cfg TranscriptConfig, log *slog.Logger) (*TranscriptDistiller, error) {
	cfg = cfg.withDefaults()
	if _, err := cron.ParseStandard(cfg.Schedule); err != nil {
		return nil, fmt.Errorf("%w: distill schedule %q: %v", schemas.ErrInvalid, cfg.Schedule, err)
	}
	return &TranscriptDistiller{js: js, d: d, cfg: cfg, route: work.NewRoute(cfg.Partitions, cfg.Scopes), log: log}, nil
}

// Run runs the distiller on its schedule until ctx ends, then waits for a run in
// progress to finish.
func (c *TranscriptDistiller) Run(ctx context.Context) error {
	cr := schedule.New(c.log)
	if _, err := cr.AddFunc(c.cfg.Schedule, func() {
		rep, err := c.RunOnce(ctx, TranscriptRun{})
		if err != nil && ctx.Err() == nil {
			c.log.Error("scheduled distillation failed", "err", err)
			return
		}
		c.log.Info("scheduled distillation", "sessions", rep.Sessions, "distilled", rep.Distilled, "lessons", rep.Lessons, "errors", len(rep.Errors))
	}); err != nil {
		return err
	}
	cr.Start()
	c.log.Info("cursor distiller scheduled", "schedule", c.cfg.Schedule, "idle", c.cfg.Idle)
	<-ctx.Done()
	<-cr.Stop().Done()
	return nil
}

// TranscriptRun selects what one run distils.
type TranscriptRun struct {
	Agent   string        // only this agent
	Session string        // only this session (its id)
	Since   time.Duration // only sessions active within this window
	// IgnoreIdle distils sessions that are still active, as a manual run
	// for one session does.
	IgnoreIdle bool
	// Progress is called with the sessions done and due.
	Progress func(done, total int)
}

// TranscriptReport is what a run did.
type TranscriptReport struct {
	Sessions  int      `json:"sessions"`  // with undistilled messages
	Distilled int      `json:"distilled"` // ranges distilled and committed
	Messages  int      `json:"messages"`
	Lessons   int      `json:"lessons"`
	Errors    []string `json:"errors,omitempty"`
}

type rangeDue struct {
	subject, agent, token string
	cursor, revision      uint64
}

// RunOnce distils every due range once.
func (c *TranscriptDistiller) RunOnce(ctx context.Context, r TranscriptRun) (TranscriptReport, error) {
	var rep TranscriptReport
	due, err := c.due(ctx, r)
	if err != nil {
		return rep, err
	}
	rep.Sessions = len(due)
	for i, d := range due {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		msgs, lessons, err := c.distillRange(ctx, d)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s/%s: %v", d.agent, d.token, err))
			c.log.Warn("range distillation failed; it will be retried", "agent", d.agent, "session", d.token, "err", err)
		} else if msgs > 0 {
			rep.Distilled++
			rep.Messages += msgs
			rep.Lessons += lessons
		}
		if r.Progress != nil {
			r.Progress(i+1, len(due))
		}
	}
	return rep, nil
}

// due lists the sessions with messages after their cursor that are quiet
// for long enough (or match the run's filters).
func (c *TranscriptDistiller) due(ctx context.Context, r TranscriptRun) ([]rangeDue, error) {
	st, err := c.js.Stream(ctx, schemas.StreamTranscripts)
	if err != nil {
		return nil, fmt.Errorf("transcript stream: %w", err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(schemas.TranscriptsSubject))
	if err != nil {
		return nil, fmt.Errorf("transcript stream: %w", err)
	}
	kv, err := c.js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return nil, fmt.Errorf("distill bucket: %w", err)
	}
	subjects := make([]string, 0, len(info.State.Subjects))
	for s := range info.State.Subjects {
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	now := time.Now()
	var out []rangeDue
	for _, subj := range subjects {
		agent, token, err := schemas.ParseTranscriptSubject(subj)
		if err != nil || !c.cfg.allows(agent) || (r.Agent != "" && agent != r.Agent) ||
			(r.Session != "" && token != schemas.SubjectToken(r.Session)) {
			continue
		}
		last, err := st.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			continue // purged meanwhile
		}
		cur, rev, err := readTranscriptCursor(ctx, kv, agent, token)
		if err != nil {
			return nil, err
		}
		if last.Sequence <= cur || (r.Since > 0 && now.Sub(last.Time) > r.Since) ||
			(!r.IgnoreIdle && now.Sub(last.Time) < c.cfg.Idle) {
			continue
		}
		out = append(out, rangeDue{subject: subj, agent: agent, token: token, cursor: cur, revision: rev})
	}
	return out, nil
}

// distillRange distils one session's messages after its cursor, hands the
// lessons on, and only then moves the cursor.
func (c *TranscriptDistiller) distillRange(ctx context.Context, d rangeDue) (msgCount, lessons int, err error) {
	entries, last, err := readTranscript(ctx, c.js, d.subject, d.cursor)
	if err != nil || len(entries) == 0 {
		return 0, 0, err
	}
	session := entries[len(entries)-1].SessionID
	if session == "" {
		session = d.token
	}
	kv, err := c.js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return 0, 0, err
	}
	// What a session-end event distilled already (its mark lies in this
	// range) is not distilled again.
	msgs := sinceMark(distill.FromEntries(sessionEntries(entries, session)), readMark(ctx, kv, d.agent, session).Tail)
	if len(msgs) == 0 {
		if err := writeTranscriptCursor(ctx, kv, d.agent, d.token, last, d.revision); err != nil {
			return 0, 0, fmt.Errorf("commit cursor: %w", err)
		}
		return 0, 0, nil
	}
	rec := Distillation{Agent: d.agent, Session: session, Trigger: "cursor", Status: StatusRunning, Source: "stream"}
	res, err := c.d.Distill(ctx, msgs, distill.Options{})
	if err != nil {
		c.saveRange(ctx, kv, d, rec, err)
		return 0, 0, fmt.Errorf("distill: %w", err)
	}
	items := lessonItems(d.agent, session, res, msgs, c.cfg.Dedup)
	msgID := "distill-range-" + d.agent + "-" + d.token + "-" + strconv.FormatUint(d.cursor+1, 10) + "-" + strconv.FormatUint(last, 10)
	if err := publishLessons(ctx, c.js, c.route, d.agent, "distill", msgID, items); err != nil {
		c.saveRange(ctx, kv, d, rec, err)
		return 0, 0, err
	}
	if c.beforeCommit != nil {
		if err := c.beforeCommit(d.agent, session); err != nil {
			return 0, 0, err
		}
	}
	if err := writeTranscriptCursor(ctx, kv, d.agent, d.token, last, d.revision); err != nil {
		return 0, 0, fmt.Errorf("commit cursor: %w", err)
	}
	rec.Stats, rec.Distiller, rec.Model, rec.Lessons, rec.Warnings = res.Stats, res.Distiller, res.Model, len(items), res.Warnings
	c.saveRange(ctx, kv, d, rec, nil)
	return len(msgs), len(items), nil
}

// saveRange records the last range run of a session for `distill status`.
func (c *TranscriptDistiller) saveRange(ctx context.Context, kv jetstream.KeyValue, d rangeDue, rec Distillation, err error) {
	rec.Status = StatusDone
	if err != nil {
		rec.Status, rec.Error = StatusError, err.Error()
	}
	rec.Updated = time.Now().UTC()
	b, _ := json.Marshal(rec)
	if _, perr := kv.Put(ctx, "range."+d.agent+"."+d.token, b); perr != nil {
		c.log.Warn("range status not saved", "agent", d.agent, "session", d.token, "err", perr)
	}
}
