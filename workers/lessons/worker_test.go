package lessons

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/pipelinetest"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// pipeline is the capture and store pipeline the lessons go to, with the
// stream sequence of the last session event the test published:
// waitSettled waits for it to be acknowledged, because a consumer learns
// of a new message a moment after the stream stores it, and until then it
// reports nothing pending.
type pipeline struct {
	*pipelinetest.Pipeline
	lastEvent atomic.Uint64
}

// startPipeline runs capture and store workers on an embedded server.
func startPipeline(t testing.TB) *pipeline {
	t.Helper()
	return &pipeline{Pipeline: pipelinetest.Start(t, nil, stage.Config{})}
}

// published records a session event's stream sequence.
func (p *pipeline) published(seq uint64) {
	for {
		old := p.lastEvent.Load()
		if seq <= old || p.lastEvent.CompareAndSwap(old, seq) {
			return
		}
	}
}

// fakeGemini answers generateContent like the Gemini API: for every user
// message in the prompt that starts with "Lesson:", a lesson quoting it;
// mode "fail" answers 500, "empty" no lessons.
type fakeGemini struct {
	srv   *httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	mode  string
	delay time.Duration // per answer, as a real model takes
}

var promptUserLine = regexp.MustCompile(`(?m)^\[U(\d+)\] (Lesson: [^\n]+)`)

func newFakeGemini(t testing.TB) *fakeGemini {
	f := &fakeGemini{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.calls.Add(1)
		if !strings.HasSuffix(r.URL.Path, ":generateContent") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Contents []struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"contents"`
		}
		_ = json.Unmarshal(body, &req)
		f.mu.Lock()
		mode, delay := f.mode, f.delay
		f.mu.Unlock()
		time.Sleep(delay)
		if mode == "fail" {
			http.Error(w, `{"error":{"code":500,"message":"internal","status":"INTERNAL"}}`, http.StatusInternalServerError)
			return
		}
		var prompt strings.Builder
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				prompt.WriteString(p.Text)
			}
		}
		type ev struct {
			IDs   []int  `json:"message_ids"`
			Quote string `json:"quote"`
		}
		type lesson struct {
			Category   string   `json:"category"`
			Importance float64  `json:"importance"`
			Text       string   `json:"text"`
			Evidence   []ev     `json:"evidence"`
			Keywords   []string `json:"keywords"`
		}
		out := struct {
			Lessons []lesson `json:"lessons"`
		}{Lessons: []lesson{}}
		if mode != "empty" {
			for _, m := range promptUserLine.FindAllStringSubmatch(prompt.String(), -1) {
				var n int
				fmt.Sscan(m[1], &n)
				text := strings.TrimPrefix(m[2], "Lesson: ")
				out.Lessons = append(out.Lessons, lesson{Category: "fact", Importance: 0.8, Text: text,
					Evidence: []ev{{IDs: []int{n}, Quote: text}}, Keywords: []string{"test"}})
			}
		}
		answer, _ := json.Marshal(out)
		resp := map[string]any{
			"candidates": []any{map[string]any{
				"content":      map[string]any{"role": "model", "parts": []any{map[string]any{"text": string(answer)}}},
				"finishReason": "STOP",
			}},
			"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGemini) setMode(m string) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

func (f *fakeGemini) distiller(t testing.TB) *distill.Distiller {
	t.Helper()
	llm, err := distill.NewLLM(distill.LLMConfig{Provider: "gemini", APIKey: "test-key", BaseURL: f.srv.URL,
		Timeout: 2 * time.Second, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return distill.New(distill.Config{}, llm, nil)
}

// startDistill runs a distill worker next to the capture/store pipeline.
func startDistill(t testing.TB, p *pipeline, d *distill.Distiller, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	w := NewWorker(p.JS, d, cfg, stage.NewMetrics(nil), slog.New(slog.DiscardHandler))
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func (p *pipeline) publishSessionEvent(t testing.TB, kind schemas.EventKind, agent string, se schemas.SessionEvent) {
	t.Helper()
	ev, _ := json.Marshal(se)
	body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: kind, SessionID: se.SessionID, Timestamp: time.Now().UnixMilli(), Event: ev})
	ack, err := p.JS.Publish(context.Background(), schemas.EventSubject(kind, agent), body)
	if err != nil {
		t.Fatal(err)
	}
	p.published(ack.Sequence)
}

// distillation returns the newest distillation record of a session, if any.
func (p *pipeline) distillation(t *testing.T, agent, session string) (Distillation, bool) {
	t.Helper()
	recs := p.distillations(t, agent, session)
	if len(recs) == 0 {
		return Distillation{}, false
	}
	return recs[0], true
}

// distillations lists a session's distillation records (one per distilled
// range), newest first.
func (p *pipeline) distillations(t *testing.T, agent, session string) []Distillation {
	t.Helper()
	all, err := Distillations(context.Background(), p.JS, agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []Distillation
	for _, j := range all {
		if j.Session == session {
			out = append(out, j)
		}
	}
	return out
}

func (p *pipeline) waitDistillation(t *testing.T, agent, session, status string) Distillation {
	t.Helper()
	var j Distillation
	testkit.WaitFor(t, 15*time.Second, func() error {
		var ok bool
		if j, ok = p.distillation(t, agent, session); !ok || j.Status != status {
			return fmt.Errorf("record %+v", j)
		}
		return nil
	})
	return j
}

func (p *pipeline) waitMemories(t *testing.T, n int) map[string]schemas.Memory {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, func() error {
		if got := len(p.Texts(t)); got != n {
			return fmt.Errorf("%d memories, want %d", got, n)
		}
		return nil
	})
	return p.Texts(t)
}

func TestDistillWorkerInlineOnceAndSessionMemory(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{SessionMemory: true})
	msgs := []schemas.Message{
		testkit.UserMsg(pipelinetest.Envelope + "Lesson: the staging database listens on port 6543, not 5432"),
		testkit.AssistantMsg("Good to know, I will use port 6543 for staging."),
		testkit.UserMsg("Lesson: deploys to production need the release checklist signed off first"),
	}
	p.publishSessionEvent(t, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: "s1", Messages: msgs})
	j := p.waitDistillation(t, "main", "s1", StatusDone)
	if j.Source != "inline" || j.Lessons != 2 || !j.Summary || j.Distiller != distill.DistillerLLM || j.Stats.Messages != 3 || j.Stats.InputTokens == 0 {
		t.Fatalf("record %+v", j)
	}
	got := p.waitMemories(t, 3)
	m, ok := got["the staging database listens on port 6543, not 5432"]
	if !ok {
		t.Fatalf("lesson missing: %v", got)
	}
	var meta map[string]any
	_ = json.Unmarshal(m.Metadata, &meta)
	if m.Scope != "agent:main" || m.Importance != 0.8 || meta["source"] != "distill" || meta["sessionId"] != "s1" || meta["model"] == "" {
		t.Fatalf("lesson stored as %+v meta %v", m, meta)
	}
	var summary *schemas.Memory
	for _, m := range got {
		if m.Scope == schemas.GlobalScope {
			summary = &m
		}
	}
	if summary == nil || summary.Category != schemas.CategoryFact || summary.Importance != 0.5 || !strings.Contains(summary.Text, "release checklist") {
		t.Fatalf("session summary: %+v", summary)
	}
	calls := f.calls.Load()
	// The same session ending again (reset, session_end) is not redone.
	p.publishSessionEvent(t, schemas.KindSessionEnd, "main", schemas.SessionEvent{SessionID: "s1", Messages: msgs, Reason: "new"})
	p.publishSessionEvent(t, schemas.KindCommandReset, "main", schemas.SessionEvent{SessionID: "s1"})
	p.waitSettled(t)
	if f.calls.Load() != calls || len(p.Texts(t)) != 3 {
		t.Fatalf("session distilled again: %d calls (was %d), %d memories", f.calls.Load(), calls, len(p.Texts(t)))
	}
}

// handled reports whether the distill consumer has acknowledged events
// through stream sequence n, with nothing pending or in flight. A message
// waiting out a retry backoff was delivered but is not acknowledged: the
// ack floor lags the delivered sequence.
func (p *pipeline) handled(n int) error {
	c, err := p.JS.Consumer(context.Background(), schemas.StreamEvents, schemas.ConsumerDistill)
	if err != nil {
		return err
	}
	info, err := c.Info(context.Background())
	if err != nil {
		return err
	}
	if info.AckFloor.Stream < uint64(n) || info.NumPending > 0 || info.NumAckPending > 0 || info.AckFloor.Consumer < info.Delivered.Consumer {
		return fmt.Errorf("acknowledged through %d of %d (%d of %d delivered), pending %d, in flight %d", info.AckFloor.Stream, n,
			info.AckFloor.Consumer, info.Delivered.Consumer, info.NumPending, info.NumAckPending)
	}
	return nil
}

// waitSettled waits until the distill consumer has acknowledged the last
// session event published and has nothing pending, in flight or waiting
// to be retried.
func (p *pipeline) waitSettled(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, 15*time.Second, func() error { return p.handled(int(p.lastEvent.Load())) })
}

func publishEntries(t *testing.T, js jetstream.JetStream, agent, session string, start int, texts ...string) {
	t.Helper()
	for i, text := range texts {
		e := schemas.TranscriptEntry{V: schemas.Version, AgentID: agent, SessionID: session, File: session + ".jsonl",
			Offset: int64((start + i) * 100), EntryID: fmt.Sprintf("%08x", start+i), Role: "user", Text: text, Timestamp: time.Now().UnixMilli()}
		b, _ := json.Marshal(e)
		if _, err := js.Publish(context.Background(), schemas.TranscriptSubject(agent, session), b); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDistillWorkerFromStreamAndFile(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	state := t.TempDir()
	startDistill(t, p, f.distiller(t), Config{StateDir: state})

	publishEntries(t, p.JS, "main", "s2", 0, "Lesson: the VPN must be on before running the sync script", "thanks")
	p.publishSessionEvent(t, schemas.KindSessionEnd, "main", schemas.SessionEvent{SessionID: "s2", Reason: "idle"})
	if j := p.waitDistillation(t, "main", "s2", StatusDone); j.Source != "stream" || j.Lessons != 1 {
		t.Fatalf("stream record %+v", j)
	}
	kv, _ := p.JS.KeyValue(context.Background(), schemas.BucketDistill)
	if seq, _, err := readTranscriptCursor(context.Background(), kv, "main", "s2"); err != nil || seq == 0 {
		t.Fatalf("the stream distillation did not move the session's cursor: %d %v", seq, err)
	}

	dir := filepath.Join(state, "agents", "main", "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"type":"session","version":3,"id":"s3","timestamp":"2026-05-01T10:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"a0000001","timestamp":"2026-05-01T10:00:01Z","message":{"role":"user","content":"Lesson: the build cache lives in /var/cache/bazel and fills the disk"}}`,
		`{"type":"message","id":"a0000002","timestamp":"2026-05-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"I will clean it weekly."}]}}`,
	}
	// OpenClaw renamed the file on /new before the distiller got to it.
	if err := os.WriteFile(filepath.Join(dir, "s3.jsonl.reset.2026-05-01T10-05-00.000Z"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: "s3", SessionFile: "/elsewhere/s3.jsonl"})
	if j := p.waitDistillation(t, "main", "s3", StatusDone); j.Source != "file" || j.Lessons != 1 {
		t.Fatalf("file record %+v", j)
	}
	got := p.waitMemories(t, 2)
	if _, ok := got["the build cache lives in /var/cache/bazel and fills the disk"]; !ok {
		t.Fatalf("file lesson missing: %v", got)
	}
	// A session-end event that finds no transcript anywhere (OpenClaw's
	// command:new carries none) distils nothing and records no range; a
	// later event that brings the messages (before_reset does) distils them.
	p.publishSessionEvent(t, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: "later"})
	p.waitSettled(t)
	if recs := p.distillations(t, "main", "later"); len(recs) != 0 {
		t.Fatalf("a session-end without messages recorded records: %+v", recs)
	}
	p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: "later",
		Messages: []schemas.Message{testkit.UserMsg("Lesson: the release branch is cut every Thursday")}})
	if j := p.waitDistillation(t, "main", "later", StatusDone); j.Source != "inline" || j.Lessons != 1 || j.Attempts != 1 {
		t.Fatalf("record after the messages came %+v", j)
	}
}

func TestDistillWorkerZeroLessonsAndBadInput(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	f.setMode("empty")
	startDistill(t, p, f.distiller(t), Config{Stage: stage.Config{MaxDeliver: 2, Backoff: []time.Duration{20 * time.Millisecond}}})
	p.publishSessionEvent(t, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: "quiet", Messages: []schemas.Message{testkit.UserMsg("Lesson: nothing will come of this")}})
	if j := p.waitDistillation(t, "main", "quiet", StatusDone); j.Lessons != 0 {
		t.Fatalf("record %+v", j)
	}
	// The distiller agent's own sessions are skipped without an LLM call.
	calls := f.calls.Load()
	p.publishSessionEvent(t, schemas.KindCommandNew, DistillerAgent, schemas.SessionEvent{SessionID: "d1", Messages: []schemas.Message{testkit.UserMsg("Lesson: x y z")}})
	// Poison: no session, not JSON, wrong version.
	p.publishSessionEvent(t, schemas.KindSessionEnd, "main", schemas.SessionEvent{})
	for _, body := range []string{"{not json", `{"v":99,"kind":"session_end","event":{}}`, `{"v":1,"kind":"session_end","event":"oops"}`} {
		if _, err := p.JS.Publish(context.Background(), schemas.EventSubject(schemas.KindSessionEnd, "main"), []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	p.WaitDLQ(t, 4)
	p.waitSettled(t)
	if f.calls.Load() != calls {
		t.Fatal("the distiller agent's session was distilled")
	}
	if len(p.Texts(t)) != 0 {
		t.Fatalf("memories stored: %v", p.Texts(t))
	}
}

// An LLM that is down is a provider's outage: the distill worker holds
// the session and distils it once the LLM answers again, with no new
// trigger, no restart and nothing dead-lettered.
func TestDistillWorkerWaitsOutAnLLMOutage(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	f.setMode("fail")
	startDistill(t, p, f.distiller(t), Config{Stage: stage.Config{MaxDeliver: 2, Backoff: []time.Duration{20 * time.Millisecond}}})
	p.publishSessionEvent(t, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: "s9", Messages: []schemas.Message{testkit.UserMsg("Lesson: the LLM is down")}})
	// More failed calls than MaxDeliver allows deliveries.
	testkit.WaitFor(t, 30*time.Second, func() error {
		if n := f.calls.Load(); n < 4 {
			return fmt.Errorf("%d LLM calls", n)
		}
		return nil
	})
	s, err := p.JS.Stream(context.Background(), schemas.StreamDLQ)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(context.Background()); err != nil || info.State.Msgs != 0 {
		t.Fatalf("DLQ during an LLM outage: %+v %v", info.State, err)
	}
	f.setMode("")
	p.waitDistillation(t, "main", "s9", StatusDone)
	p.waitMemories(t, 1)
}

// BenchmarkDistillWorker: 8 sessions of 400 messages queued at once, 4
// distill workers, a Gemini fake answering in 500 ms; reports sessions per
// minute and LLM tokens per lesson kept.
func BenchmarkDistillWorker(b *testing.B) {
	const sessions, perSession = 8, 400
	for b.Loop() {
		b.StopTimer()
		p := startPipeline(b)
		f := newFakeGemini(b)
		f.delay = 500 * time.Millisecond
		startDistill(b, p, f.distiller(b), Config{Workers: 4})
		for s := range sessions {
			msgs := make([]schemas.Message, 0, perSession)
			for i := range perSession {
				switch {
				case i%50 == 0:
					msgs = append(msgs, testkit.UserMsg(fmt.Sprintf("Lesson: service %d-%d listens on port %d behind the gateway", s, i, 8000+i)))
				case i%2 == 0:
					msgs = append(msgs, testkit.UserMsg(fmt.Sprintf("step %d: let us look at the logs of the deploy again and compare them with the previous run", i)))
				default:
					msgs = append(msgs, testkit.AssistantMsg(fmt.Sprintf("Step %d done: the logs show the same warnings as before, nothing new in the deploy output.", i)))
				}
			}
			p.publishSessionEvent(b, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: fmt.Sprintf("bench-%d", s), Messages: msgs})
		}
		b.StartTimer()
		t0 := time.Now()
		var tokens, kept int
		deadline := time.Now().Add(5 * time.Minute)
		for {
			recs, err := Distillations(context.Background(), p.JS, "main")
			if err != nil {
				b.Fatal(err)
			}
			done := 0
			tokens, kept = 0, 0
			for _, j := range recs {
				if j.Status == StatusDone {
					done++
					tokens += j.Stats.InputTokens + j.Stats.OutputTokens
					kept += j.Lessons
				}
			}
			if done == sessions {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d sessions distilled", done, sessions)
			}
			time.Sleep(20 * time.Millisecond)
		}
		el := time.Since(t0)
		b.ReportMetric(float64(sessions)/el.Minutes(), "sessions/min")
		b.ReportMetric(float64(tokens)/float64(max(kept, 1)), "tokens/lesson")
		b.ReportMetric(float64(kept), "lessons")
	}
}

// rawMsg is a hook message as OpenClaw 2026.9.6 sends it in before_reset:
// roles include system, custom and toolResult, assistant content is blocks.
func rawMsg(role, content string) schemas.Message {
	return schemas.Message{Role: role, Content: json.RawMessage(content), Timestamp: time.Now().UnixMilli()}
}

// OpenClaw 2026.9.6 keeps one session id across /new and /reset: every
// /new must distil the messages since the previous one, once, whether the
// messages come inline (before_reset carries the window since the last
// reset) or from the transcript stream, and whichever of command:new,
// before_reset and session_end arrives first. Payload shapes are those the
// real host sent (integrations/openclaw/realhost).
func TestDistillWorkerEveryNewOfOneSession(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{})
	const sid = "80a2cfe9-01bd-4ccc-bb86-2ee8b0d5f072"
	sessionFile := "sqlite:main:" + sid + ":/home/u/.openclaw/agents/main/sessions/sessions.json"
	reply := `[{"type":"text","text":"Noted."}]`
	windows := [][]schemas.Message{
		{rawMsg("user", `"Lesson: the staging database listens on port 6543"`), rawMsg("assistant", reply),
			rawMsg("user", `"Do you remember my favourite colour?"`), rawMsg("assistant", `[]`), rawMsg("custom", `""`),
			rawMsg("toolResult", `[]`), rawMsg("assistant", reply)},
		{rawMsg("system", `""`), rawMsg("user", `"Lesson: deploys need the release checklist signed off"`), rawMsg("assistant", reply),
			rawMsg("user", `"My sister lives in Lisbon."`), rawMsg("assistant", reply)},
		{rawMsg("system", `""`), rawMsg("user", `"Lesson: the VPN must be on before the sync script runs"`), rawMsg("assistant", reply)},
	}
	want := []int{4, 4, 2} // user and assistant messages with text in each window
	ends := []schemas.EventKind{schemas.KindCommandNew, schemas.KindCommandNew, schemas.KindCommandReset}
	for i, w := range windows {
		reason := "new"
		if ends[i] == schemas.KindCommandReset {
			reason = "reset"
		}
		// The order the real host sends them: command, before_reset with
		// the window's messages, session_end with none.
		p.publishSessionEvent(t, ends[i], "main", schemas.SessionEvent{SessionID: sid, Reason: reason})
		p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: sid, SessionFile: sessionFile, Messages: w, Reason: reason})
		p.publishSessionEvent(t, schemas.KindSessionEnd, "main", schemas.SessionEvent{SessionID: sid, Reason: reason})
		// A redelivered before_reset (same window) distils nothing.
		p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: sid, SessionFile: sessionFile, Messages: w, Reason: reason})
		// Events wait for each other (the session's mark, the settle of
		// message-less ones, busy retries): wait until all are handled.
		var recs []Distillation
		testkit.WaitFor(t, 20*time.Second, func() error {
			recs = p.distillations(t, "main", sid)
			if len(recs) < i+1 || recs[0].Status != StatusDone {
				return fmt.Errorf("%d records", len(recs))
			}
			return p.handled(4 * (i + 1))
		})
		if len(recs) != i+1 {
			t.Fatalf("after /new %d: %d records, want %d: %+v", i+1, len(recs), i+1, recs)
		}
		j := recs[0]
		if j.Status != StatusDone || j.Source != "inline" || j.Stats.Messages != want[i] || j.Lessons != 1 || j.Range == "" || j.Trigger != string(schemas.KindBeforeReset) {
			t.Fatalf("record of /new %d: %+v", i+1, j)
		}
	}
	got := p.waitMemories(t, 3)
	for _, l := range []string{"the staging database listens on port 6543", "deploys need the release checklist signed off", "the VPN must be on before the sync script runs"} {
		if _, ok := got[l]; !ok {
			t.Fatalf("lesson %q missing: %v", l, got)
		}
	}
}

// A compaction hands over the messages the model is about to lose: they are
// distilled then, and the /new after it distils only what came later.
func TestDistillWorkerBeforeCompaction(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{})
	const sid = "5b7c0a51-7a1e-4f55-9d43-5a7d2d1b8c10"
	reply := `[{"type":"text","text":"Noted."}]`
	early := []schemas.Message{rawMsg("user", `"Lesson: the backup bucket is in eu-west-2"`), rawMsg("assistant", reply),
		rawMsg("user", `"Lesson: rotate the signing key every quarter"`), rawMsg("assistant", reply)}
	p.publishSessionEvent(t, schemas.KindBeforeCompaction, "main", schemas.SessionEvent{SessionID: sid, Messages: early, MessageCount: len(early)})
	var recs []Distillation
	testkit.WaitFor(t, 20*time.Second, func() error {
		if recs = p.distillations(t, "main", sid); len(recs) < 1 || recs[0].Status != StatusDone {
			return fmt.Errorf("%d records", len(recs))
		}
		return nil
	})
	if j := recs[0]; j.Trigger != string(schemas.KindBeforeCompaction) || j.Stats.Messages != 4 || j.Lessons != 2 {
		t.Fatalf("compaction record: %+v", j)
	}
	// After the compaction the session goes on; /new's before_reset carries
	// what the host still holds (the early messages among them).
	later := append(append([]schemas.Message{}, early...), rawMsg("user", `"Lesson: the canary runs for one hour"`), rawMsg("assistant", reply))
	p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: sid, Messages: later, Reason: "new"})
	testkit.WaitFor(t, 20*time.Second, func() error {
		if recs = p.distillations(t, "main", sid); len(recs) < 2 || recs[0].Status != StatusDone {
			return fmt.Errorf("%d records", len(recs))
		}
		return nil
	})
	if j := recs[0]; j.Trigger != string(schemas.KindBeforeReset) || j.Stats.Messages != 2 || j.Lessons != 1 {
		t.Fatalf("/new after the compaction: %+v", j)
	}
	got := p.waitMemories(t, 3)
	for _, l := range []string{"the backup bucket is in eu-west-2", "rotate the signing key every quarter", "the canary runs for one hour"} {
		if _, ok := got[l]; !ok {
			t.Fatalf("lesson %q missing: %v", l, got)
		}
	}
}

// The same with the transcript on the stream (the SQLite follower) and
// session-end events that carry no messages.
func TestDistillWorkerEveryNewFromStream(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{})
	windows := [][]string{
		{"Lesson: the build cache fills the disk every month", "thanks"},
		{"Lesson: invoices go out on the first working day", "ok"},
		{"Lesson: the lab printer needs the blue driver"},
	}
	start := 0
	for i, w := range windows {
		publishEntries(t, p.JS, "main", "s5", start, w...)
		start += len(w)
		p.publishSessionEvent(t, schemas.KindCommandNew, "main", schemas.SessionEvent{SessionID: "s5", Reason: "new"})
		p.publishSessionEvent(t, schemas.KindSessionEnd, "main", schemas.SessionEvent{SessionID: "s5", Reason: "new"})
		// Under load the consumer can look settled a moment before a
		// settle-delayed event's record is written: wait for the record itself.
		testkit.WaitFor(t, 15*time.Second, func() error {
			if recs := p.distillations(t, "main", "s5"); len(recs) != i+1 {
				return fmt.Errorf("after /new %d: %d records", i+1, len(recs))
			}
			return p.handled(0)
		})
		recs := p.distillations(t, "main", "s5")
		if len(recs) != i+1 || recs[0].Source != "stream" || recs[0].Stats.Messages != len(w) || recs[0].Lessons != 1 {
			t.Fatalf("after /new %d: %+v", i+1, recs)
		}
	}
	p.waitMemories(t, 3)
	// The transcript distiller finds nothing left to distil.
	c, err := NewTranscriptDistiller(p.JS, f.distiller(t), TranscriptConfig{Idle: time.Millisecond}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	calls := f.calls.Load()
	rep, err := c.RunOnce(context.Background(), TranscriptRun{IgnoreIdle: true})
	if err != nil || rep.Messages != 0 || f.calls.Load() != calls {
		t.Fatalf("cursor run after the /new ranges: %+v, %v, %d LLM calls", rep, err, f.calls.Load()-calls)
	}
}

// A session-end event handled late (after a busy retry) distils only the
// messages written before it, not the first messages of the next range,
// which the next /new ends (seen on the real host).
func TestDistillWorkerLateEventStopsAtItsTime(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{})
	entry := func(i int, text string, ts int64) {
		e := schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: "s7", File: "sqlite:openclaw-agent.sqlite",
			Offset: int64(i), EntryID: fmt.Sprintf("%08x", i), Role: "user", Text: text, Timestamp: ts}
		b, _ := json.Marshal(e)
		if _, err := p.JS.Publish(context.Background(), schemas.TranscriptSubject("main", "s7"), b); err != nil {
			t.Fatal(err)
		}
	}
	end := func(kind schemas.EventKind, ts int64) {
		ev, _ := json.Marshal(schemas.SessionEvent{SessionID: "s7", Reason: "new"})
		body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: kind, SessionID: "s7", Timestamp: ts, Event: ev})
		ack, err := p.JS.Publish(context.Background(), schemas.EventSubject(kind, "main"), body)
		if err != nil {
			t.Fatal(err)
		}
		p.published(ack.Sequence)
	}
	now := time.Now().UnixMilli()
	entry(1, "Lesson: the first range ends here", now-5000)
	entry(2, "thanks", now-4000)
	entry(3, "Lesson: the second range starts after the /new", now-1000)
	end(schemas.KindSessionEnd, now-3000) // the first /new's, handled only now
	p.waitSettled(t)
	recs := p.distillations(t, "main", "s7")
	if len(recs) != 1 || recs[0].Stats.Messages != 2 {
		t.Fatalf("late event's record %+v", recs)
	}
	end(schemas.KindCommandNew, now)
	p.waitSettled(t)
	recs = p.distillations(t, "main", "s7")
	if len(recs) != 2 || recs[0].Stats.Messages != 1 || recs[0].Lessons != 1 {
		t.Fatalf("second /new's record %+v", recs)
	}
}

// before_reset's inline window is distilled from the transcript stream when
// the stream has caught up with it (the lessons then cite the transcript's
// entry ids), and from the inline messages when it has not.
func TestDistillWorkerPrefersACaughtUpStream(t *testing.T) {
	p := startPipeline(t)
	f := newFakeGemini(t)
	startDistill(t, p, f.distiller(t), Config{})
	publishEntries(t, p.JS, "main", "s8", 0, "Lesson: caught up streams are preferred", "thanks")
	p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: "s8",
		Messages: []schemas.Message{testkit.UserMsg("Lesson: caught up streams are preferred"), testkit.UserMsg("thanks")}})
	if j := p.waitDistillation(t, "main", "s8", StatusDone); j.Source != "stream" || j.Stats.Messages != 2 {
		t.Fatalf("record %+v", j)
	}
	// The stream lags behind the next window: inline it is.
	publishEntries(t, p.JS, "main", "s8", 2, "Lesson: lagging streams are not")
	p.publishSessionEvent(t, schemas.KindBeforeReset, "main", schemas.SessionEvent{SessionID: "s8",
		Messages: []schemas.Message{testkit.UserMsg("Lesson: lagging streams are not"), testkit.UserMsg("and one more line the watcher has not published")}})
	p.waitSettled(t)
	recs := p.distillations(t, "main", "s8")
	if len(recs) != 2 || recs[0].Source != "inline" || recs[0].Stats.Messages != 2 {
		t.Fatalf("records %+v", recs)
	}
}
