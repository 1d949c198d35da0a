package lessons

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

func TestTranscriptDistillerGrowingTranscriptAndCrash(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	c, err := NewTranscriptDistiller(p.JS, f.distiller(t), TranscriptConfig{Idle: time.Millisecond, Agents: []string{"main", "work"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	publishEntries(t, p.JS, "main", "c1", 0, "Lesson: the cron record runs at 02:00 UTC", "ok")
	publishEntries(t, p.JS, DistillerAgent, "d1", 0, "Lesson: never distil the distiller")
	publishEntries(t, p.JS, "other", "o1", 0, "Lesson: this agent is not on the allowlist")
	time.Sleep(5 * time.Millisecond)
	rep, err := c.RunOnce(ctx, TranscriptRun{})
	if err != nil || rep.Sessions != 1 || rep.Distilled != 1 || rep.Lessons != 1 || rep.Messages != 2 {
		t.Fatalf("first run %+v %v", rep, err)
	}
	// Nothing new: nothing due, no LLM call.
	calls := f.calls.Load()
	if rep, err := c.RunOnce(ctx, TranscriptRun{}); err != nil || rep.Sessions != 0 || f.calls.Load() != calls {
		t.Fatalf("idle run %+v %v, %d calls", rep, err, f.calls.Load()-calls)
	}
	// The transcript grows; a crash between distilling and committing
	// repeats the range but stores nothing twice.
	publishEntries(t, p.JS, "main", "c1", 2, "Lesson: backups are kept for 30 days")
	time.Sleep(5 * time.Millisecond)
	c.beforeCommit = func(string, string) error { return fmt.Errorf("crash") }
	if rep, err := c.RunOnce(ctx, TranscriptRun{}); err != nil || len(rep.Errors) != 1 || rep.Distilled != 0 {
		t.Fatalf("crashing run %+v %v", rep, err)
	}
	c.beforeCommit = nil
	calls = f.calls.Load()
	rep, err = c.RunOnce(ctx, TranscriptRun{})
	if err != nil || rep.Distilled != 1 || rep.Messages != 1 || f.calls.Load() != calls+1 {
		t.Fatalf("run after crash %+v %v", rep, err)
	}
	got := p.waitMemories(t, 2)
	for _, text := range []string{"the cron record runs at 02:00 UTC", "backups are kept for 30 days"} {
		if _, ok := got[text]; !ok {
			t.Fatalf("missing %q: %v", text, got)
		}
	}
	if rep, _ := c.RunOnce(ctx, TranscriptRun{}); rep.Sessions != 0 {
		t.Fatalf("committed range due again: %+v", rep)
	}
	// A session still active is left alone unless asked by name.
	slow, _ := NewTranscriptDistiller(p.JS, f.distiller(t), TranscriptConfig{Idle: time.Hour}, slog.New(slog.DiscardHandler))
	publishEntries(t, p.JS, "main", "c2", 0, "Lesson: the session is still going")
	if rep, _ := slow.RunOnce(ctx, TranscriptRun{}); rep.Sessions != 0 {
		t.Fatalf("active session distilled: %+v", rep)
	}
	if rep, _ := slow.RunOnce(ctx, TranscriptRun{Session: "c2", IgnoreIdle: true}); rep.Distilled != 1 {
		t.Fatalf("manual run for one session: %+v", rep)
	}
	recs, err := Distillations(ctx, p.JS, "main")
	if err != nil || len(recs) != 2 || recs[0].Trigger != "cursor" || recs[0].Status != StatusDone {
		t.Fatalf("records %+v %v", recs, err)
	}
	if _, err := NewTranscriptDistiller(p.JS, f.distiller(t), TranscriptConfig{Schedule: "every tuesday"}, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a bad schedule was accepted")
	}
}
