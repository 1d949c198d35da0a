package capture_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/pipelinetest"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

func TestCaptureEndToEnd(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	msgs := []schemas.Message{
		testkit.UserMsg("<relevant-memories>\n[UNTRUSTED DATA]\n- [fact:global] old stuff\n[END UNTRUSTED DATA]\n</relevant-memories>\n" + pipelinetest.Envelope + "I prefer dark mode in every editor"),
		testkit.AssistantMsg("Noted, I will remember that you prefer dark mode."),
		testkit.UserMsg(pipelinetest.Envelope + "hi"),
		testkit.UserMsg(pipelinetest.Envelope + "We decided to use PostgreSQL for the billing service"),
		testkit.UserMsg("what's the weather like today"),
		testkit.UserMsg("My email is alice@example.com"),
	}
	p.PublishAgentEnd(t, "main", "s1", msgs, "")
	want := map[string]schemas.Category{
		"I prefer dark mode in every editor":                   schemas.CategoryPreference,
		"We decided to use PostgreSQL for the billing service": schemas.CategoryDecision,
		"My email is alice@example.com":                        schemas.CategoryEntity,
	}
	testkit.WaitFor(t, 10*time.Second, func() error {
		if got := len(p.Texts(t)); got != len(want) {
			return fmt.Errorf("%d memories", got)
		}
		return nil
	})
	got := p.Texts(t)
	for text, cat := range want {
		m, ok := got[text]
		if !ok {
			t.Fatalf("missing %q; have %v", text, got)
		}
		if m.Category != cat || m.Scope != "agent:main" || m.Importance != 0.7 {
			t.Errorf("%q: category %s scope %s importance %v", text, m.Category, m.Scope, m.Importance)
		}
	}
	res, err := p.Eng.Recall(context.Background(), memory.Agent("main"), "dark mode editor", memory.RecallOptions{})
	if err != nil || len(res.Candidates) == 0 || res.Candidates[0].Memory.Text != "I prefer dark mode in every editor" {
		t.Fatalf("recall: %+v %v", res.Candidates, err)
	}
	ctxRes, err := p.Eng.Context(context.Background(), memory.Agent("main"), "Which editor theme do I prefer?", memory.ContextOptions{Timeout: time.Second})
	if err != nil || !strings.Contains(ctxRes.Block, "<relevant-memories>") || !strings.Contains(ctxRes.Block, "dark mode") {
		t.Fatalf("context: %+v %v", ctxRes, err)
	}
	// Another agent sees none of it.
	other, _ := p.Eng.Recall(context.Background(), memory.Agent("other"), "dark mode editor", memory.RecallOptions{})
	if len(other.Candidates) != 0 {
		t.Fatalf("agent other recalled %v", other.Candidates)
	}
}

func TestCaptureRedeliveryAndGrowingHistory(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	history := []schemas.Message{testkit.UserMsg("Remember that the staging server runs on port 8443")}
	for i := 0; i < 5; i++ {
		p.PublishAgentEnd(t, "main", "s1", history, "") // no Msg-Id: the worker alone must dedup
	}
	history = append(history, testkit.AssistantMsg("Got it."), testkit.UserMsg("I always use tabs, never spaces"))
	for i := 0; i < 5; i++ {
		p.PublishAgentEnd(t, "main", "s1", history, fmt.Sprintf("run-2-%d", i%2))
	}
	history = append(history, testkit.UserMsg("My favourite tea is oolong"))
	p.PublishAgentEnd(t, "main", "s1", history, "")
	testkit.WaitFor(t, 10*time.Second, func() error {
		if got := len(p.Texts(t)); got != 3 {
			return fmt.Errorf("%d memories", got)
		}
		return nil
	})
	// Everything settles: WORK is empty and nothing more arrives.
	testkit.WaitFor(t, 5*time.Second, func() error {
		s, err := p.JS.Stream(context.Background(), schemas.StreamWork)
		if err != nil {
			return err
		}
		if n := s.CachedInfo().State.Msgs; n != 0 {
			return fmt.Errorf("%d work items pending", n)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	if got := len(p.Texts(t)); got != 3 {
		t.Fatalf("%d memories after settling", got)
	}
}

// flakyEmbeddings is an OpenAI-compatible /v1/embeddings server that fails
// half the calls with 500 and hangs on some.
func flakyEmbeddings(t *testing.T, dim int, failAlways func(text string) bool) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	local, _ := embed.New(embed.Config{Provider: "local", Dimensions: dim})
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(7, 7))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, in := range req.Input {
			if failAlways != nil && failAlways(in) {
				http.Error(w, `{"error":{"message":"model overloaded"}}`, http.StatusInternalServerError)
				return
			}
		}
		mu.Lock()
		roll := rng.IntN(10)
		mu.Unlock()
		switch {
		case roll < 5:
			http.Error(w, `{"error":{"message":"flaky"}}`, http.StatusInternalServerError)
			return
		case roll == 5:
			select { // hang past the client's timeout
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
			return
		}
		vectors := make([][]float32, len(req.Input))
		for i, in := range req.Input {
			vectors[i], _ = local.EmbedPassage(r.Context(), in)
		}
		testkit.WriteOpenAIEmbeddings(w, req.Model, vectors)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestFlakyEmbedderLosesNothingAndPoisonGoesToDLQ(t *testing.T) {
	srv, calls := flakyEmbeddings(t, 256, func(text string) bool { return strings.Contains(text, "cursed") })
	emb, err := embed.New(embed.Config{BaseURL: srv.URL + "/v1", Model: "flaky", Dimensions: 256, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// A flaky provider's failures are waited out (they do not count while
	// its probe fails too), so few deliveries are needed.
	fast := stage.Config{Batch: 4, MaxDeliver: 8, Backoff: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}
	p := pipelinetest.Start(t, emb, fast)
	want := map[string]bool{}
	for i := 0; i < 12; i++ {
		text := fmt.Sprintf("Remember that build number %d shipped on day %d", 1000+i, i)
		want[text] = true
		p.PublishAgentEnd(t, "main", fmt.Sprintf("s%d", i), []schemas.Message{testkit.UserMsg(text)}, "")
	}
	testkit.WaitFor(t, 60*time.Second, func() error {
		got := p.Texts(t)
		for text := range want {
			if _, ok := got[text]; !ok {
				return fmt.Errorf("missing %q (have %d, %d embedding calls)", text, len(got), calls.Load())
			}
		}
		return nil
	})
	if n := len(p.Texts(t)); n != len(want) {
		t.Fatalf("%d memories, want %d", n, len(want))
	}

	// A message that can never be embedded ends in the DLQ with its reason.
	p.PublishAgentEnd(t, "main", "cursed-session", []schemas.Message{testkit.UserMsg("Remember the cursed password hint")}, "")
	var dlq jetstream.RawStreamMsg
	testkit.WaitFor(t, 90*time.Second, func() error {
		s, err := p.JS.Stream(context.Background(), schemas.StreamDLQ)
		if err != nil {
			return err
		}
		m, err := s.GetLastMsgForSubject(context.Background(), schemas.DLQSubject)
		if err != nil {
			return err
		}
		dlq = *m
		return nil
	})
	h := dlq.Header
	if h.Get(schemas.HeaderDLQStage) != "capture" || !strings.Contains(h.Get(schemas.HeaderDLQReason), "500") ||
		h.Get(schemas.HeaderDLQAttempts) != "8" || h.Get(schemas.HeaderDLQSubject) != schemas.EventSubject(schemas.KindAgentEnd, "main") {
		t.Fatalf("DLQ headers: %v", h)
	}
	if !strings.Contains(string(dlq.Data), "cursed password") {
		t.Fatal("DLQ copy lost the original body")
	}
}

func TestPoisonMessageGoesStraightToDLQ(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	if _, err := p.JS.Publish(context.Background(), schemas.EventSubject(schemas.KindAgentEnd, "main"), []byte(`{not json`)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.JS.Publish(context.Background(), schemas.WorkItemSubject(schemas.WorkCandidates, "main", schemas.DefaultPartitions), []byte(`{"v":99}`)); err != nil {
		t.Fatal(err)
	}
	p.WaitDLQ(t, 2)
	s, _ := p.JS.Stream(context.Background(), schemas.StreamDLQ)
	m, err := s.GetLastMsgForSubject(context.Background(), schemas.DLQPrefix+".store.>")
	if err != nil {
		t.Fatal(err)
	}
	if m.Header.Get(schemas.HeaderDLQAttempts) != "1" || !strings.Contains(m.Header.Get(schemas.HeaderDLQReason), "version 99") {
		t.Fatalf("store DLQ headers: %v", m.Header)
	}
	// The work queue no longer holds the poison item: the stage settles it
	// right after dead-lettering it, and the work queue drops it once the
	// server has that acknowledgement (a moment later on a busy machine).
	w, _ := p.JS.Stream(context.Background(), schemas.StreamWork)
	testkit.WaitFor(t, 10*time.Second, func() error {
		info, err := w.Info(context.Background())
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("poison still in WORK: %d", info.State.Msgs)
		}
		return nil
	})
}

// TestCaptureMessageEvents: HOOK.md handlers send message_received and
// message_sent, one message each; user messages are captured by the same
// rules (assistant ones only with captureAssistant), repeats stored once.
func TestCaptureMessageEvents(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	publish := func(kind schemas.EventKind, content string) {
		ev, _ := json.Marshal(schemas.MessageEvent{Content: content})
		body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: kind, SessionKey: "hook-1", Timestamp: time.Now().UnixMilli(), Event: ev})
		if _, err := p.JS.Publish(context.Background(), schemas.EventSubject(kind, "main"), body); err != nil {
			t.Fatal(err)
		}
	}
	publish(schemas.KindMessageReceived, pipelinetest.Envelope+"I prefer green tea over coffee in the morning")
	publish(schemas.KindMessageReceived, pipelinetest.Envelope+"I prefer green tea over coffee in the morning")
	publish(schemas.KindMessageReceived, "hi")
	publish(schemas.KindMessageSent, "Remember that I will remind you about the tea")
	got := map[string]schemas.Memory{}
	testkit.WaitFor(t, 10*time.Second, func() error {
		got = p.Texts(t)
		if len(got) != 1 {
			return fmt.Errorf("%d memories", len(got))
		}
		return nil
	})
	if m, ok := got["I prefer green tea over coffee in the morning"]; !ok || m.Scope != "agent:main" || m.Category != schemas.CategoryPreference {
		t.Fatalf("memories %v", got)
	}
	// Malformed payloads are poison.
	body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindMessageReceived, Event: json.RawMessage(`[1]`)})
	if _, err := p.JS.Publish(context.Background(), schemas.EventSubject(schemas.KindMessageReceived, "main"), body); err != nil {
		t.Fatal(err)
	}
	p.WaitDLQ(t, 1)
	if len(p.Texts(t)) != 1 {
		t.Fatal("a repeat or an assistant message was stored")
	}
}

// A message's relative dates resolve against when it was said, not when
// the store worker sees it: a backlog replayed days later must not move
// "yesterday".
func TestCaptureResolvesDatesWhenSaid(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	said := time.Date(2025, 3, 3, 9, 30, 0, 0, time.UTC) // a Monday
	m := testkit.UserMsg("I decided yesterday that we move the billing service to PostgreSQL")
	m.Timestamp = said.UnixMilli()
	p.PublishAgentEnd(t, "main", "s-dates", []schemas.Message{m}, "")
	var got schemas.Memory
	testkit.WaitFor(t, 10*time.Second, func() error {
		for _, mem := range p.Texts(t) {
			got = mem
			return nil
		}
		return fmt.Errorf("nothing stored")
	})
	ds, ok := temporal.StoredDates(got.Metadata)
	if !ok || len(ds) != 1 || ds[0] != (temporal.Date{Text: "yesterday", Date: "2025-03-02"}) {
		t.Fatalf("dates %+v (ok %v) in %s; want yesterday = 2025-03-02", ds, ok, got.Metadata)
	}
	var md map[string]any
	if err := json.Unmarshal(got.Metadata, &md); err != nil || md[temporal.SaidAtKey] != float64(said.UnixMilli()) {
		t.Errorf("metadata %s lacks saidAt %d", got.Metadata, said.UnixMilli())
	}
}
