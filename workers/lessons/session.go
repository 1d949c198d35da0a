package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
	"github.com/clawmem/clawmem/workers/stage"
)

// distill distils one range of a session and hands the lessons on.
func (w *Worker) distill(ctx context.Context, m jetstream.Msg, kind schemas.EventKind, agent, session, rangeID string,
	msgs []distill.Message, rec Distillation) (Distillation, error) {
	res, err := w.d.Distill(ctx, msgs, distill.Options{OnProgress: func() { _ = m.InProgress() }})
	if err != nil {
		return rec, fmt.Errorf("distill: %w", err)
	}
	rec.Stats, rec.Distiller, rec.Model, rec.Warnings = res.Stats, res.Distiller, res.Model, res.Warnings
	items := lessonItems(agent, session, res, msgs, w.cfg.Dedup)
	rec.Lessons = len(items)
	if w.cfg.SessionMemory && kind != schemas.KindSessionEnd {
		// One summary per range a /new, a /reset or a compaction ends
		// (the seed's sessionMemory on /new).
		if text := distill.SessionSummary(msgs, w.cfg.SessionMemoryMessages); text != "" {
			meta, _ := json.Marshal(map[string]any{"source": "session-memory", "sessionId": session, "range": rangeID})
			items = append(items, schemas.CaptureItem{
				SourceID: purge.SourceID(agent, session, purge.KindSummary+text), Text: text, Category: schemas.CategoryFact,
				Scope: schemas.GlobalScope, Importance: 0.5, Dedup: w.cfg.Dedup, Metadata: meta,
			})
			rec.Summary = true
		}
	}
	msgID := "distill-" + agent + "-" + schemas.SubjectToken(session) + "-" + rangeID
	if err := publishLessons(ctx, w.js, w.route, agent, "distill", msgID, items); err != nil {
		return rec, err
	}
	return rec, nil
}

// moveTranscriptCursor moves the transcript distiller's cursor for the
// session to the stream entry where the distilled range ends, when the
// transcript stream has it, so the scheduled distiller does not distil the
// range again.
func (w *Worker) moveTranscriptCursor(ctx context.Context, agent, session string, view streamView, tail []string) {
	end := markEnd(view.msgs, tail)
	if end <= 0 || view.msgs[end-1].EntryID == "" {
		return
	}
	seq, ok := view.seqOf[view.msgs[end-1].EntryID]
	if !ok {
		return
	}
	if err := advanceTranscriptCursor(ctx, w.js, agent, session, seq); err != nil {
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
func (w *Worker) assemble(ctx context.Context, agent, session string, se schemas.SessionEvent, at int64) ([]distill.Message, string, streamView, error) {
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
			return nil, "", view, stage.Permanent(err)
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
