package capture_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/pipelinetest"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/capture"
	"github.com/clawmem/clawmem/workers/query"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/store"
)

// scriptStep is one decision the fake model makes: target names the stored
// memory by its text, which the fake finds in the prompt's list to give
// its alias, as a model reading the prompt would.
type scriptStep struct {
	action, text, target string
}

// scriptTurn is what the user says in one turn and what the model decides.
type scriptTurn struct {
	said  string
	facts []scriptStep
}

// The scripted conversation: 30 turns, 6 fact changes (5 updates, 1 delete),
// restatements the model must see as already known, and chit-chat.
var factScript = []scriptTurn{
	{"Hi! I'm setting up my new assistant.", nil},
	{"I live in Paris.", []scriptStep{{"ADD", "I live in Paris", ""}}},
	{"I work at Siemens as an engineer.", []scriptStep{{"ADD", "I work at Siemens", ""}}},
	{"My daughter is six.", []scriptStep{{"ADD", "My daughter is six", ""}}},
	{"What's the weather like?", nil},
	{"My favourite colour is blue.", []scriptStep{{"ADD", "My favourite colour is blue", ""}}},
	{"I drive a Skoda Octavia.", []scriptStep{{"ADD", "I drive a Skoda Octavia", ""}}},
	{"My manager is Petra.", []scriptStep{{"ADD", "My manager is Petra", ""}}},
	{"I prefer tea in the morning.", []scriptStep{{"ADD", "I prefer tea in the morning", ""}}},
	{"I live in Paris, as I said.", []scriptStep{{"NOOP", "", "I live in Paris"}}},
	{"My dog is called Rex.", []scriptStep{{"ADD", "My dog is called Rex", ""}}},
	{"Can you remind me about the dentist?", nil},
	{"Big news: I moved to Berlin!", []scriptStep{{"UPDATE", "I live in Berlin", "I live in Paris"}}},
	{"I have a sister called Hana.", []scriptStep{{"ADD", "I have a sister called Hana", ""}}},
	{"I started a new job at Bosch.", []scriptStep{{"UPDATE", "I work at Bosch", "I work at Siemens"}}},
	{"Thanks!", nil},
	{"My daughter turned seven yesterday.", []scriptStep{{"UPDATE", "My daughter is seven", "My daughter is six"}}},
	{"I'm allergic to peanuts.", []scriptStep{{"ADD", "I am allergic to peanuts", ""}}},
	{"Actually my favourite colour is green now.", []scriptStep{{"UPDATE", "My favourite colour is green", "My favourite colour is blue"}}},
	{"What do you know about me?", nil},
	{"I sold my car, I don't have one anymore.", []scriptStep{{"DELETE", "I no longer have a car", "I drive a Skoda Octavia"}}},
	{"I play the cello.", []scriptStep{{"ADD", "I play the cello", ""}}},
	{"My new manager is Jonas.", []scriptStep{{"UPDATE", "My manager is Jonas", "My manager is Petra"}}},
	{"I still prefer tea in the morning.", []scriptStep{{"NOOP", "", "I prefer tea in the morning"}}},
	{"I speak Czech and German.", []scriptStep{{"ADD", "I speak Czech and German", ""}}},
	{"Good night", nil},
	{"Rex is a beagle.", []scriptStep{{"ADD", "My dog Rex is a beagle", ""}}},
	{"I live in Berlin now, near the Spree.", []scriptStep{{"NOOP", "", "I live in Berlin"}}},
	{"Hana lives in Vienna.", []scriptStep{{"ADD", "My sister Hana lives in Vienna", ""}}},
	{"I work at Bosch, it's great.", []scriptStep{{"NOOP", "", "I work at Bosch"}}},
}

// fakeExtractModel answers extraction prompts over the real Gemini and
// OpenAI wire formats, following a script keyed by what the user said; or,
// when answer is set, with that text whatever the prompt.
type fakeExtractModel struct {
	t      *testing.T
	mu     sync.Mutex
	script map[string][]scriptStep
	answer func(prompt string) string
	calls  int
	delay  time.Duration
}

var (
	storedLine = regexp.MustCompile(`(?m)^\[(m\d+)\] (.*)$`)
	saidBlock  = regexp.MustCompile(`(?s)<user-said>\n(.*)</user-said>`)
)

func (f *fakeExtractModel) reply(prompt string) string {
	if f.answer != nil {
		return f.answer(prompt)
	}
	aliases := map[string]string{}
	for _, m := range storedLine.FindAllStringSubmatch(prompt, -1) {
		aliases[m[2]] = m[1]
	}
	m := saidBlock.FindStringSubmatch(prompt)
	if m == nil {
		f.t.Errorf("fake model: no <user-said> in the prompt:\n%s", prompt)
		return `{"facts":[]}`
	}
	lines := strings.Split(strings.TrimSpace(m[1]), "\n")
	steps, ok := f.script[lines[len(lines)-1]]
	if !ok {
		f.t.Errorf("fake model: no script for %q", lines[len(lines)-1])
	}
	facts := []map[string]any{}
	for _, s := range steps {
		target := ""
		if s.target != "" {
			if target = aliases[s.target]; target == "" {
				f.t.Errorf("fake model: %q is not among the stored memories shown:\n%s", s.target, prompt)
				target = "m99"
			}
		}
		facts = append(facts, map[string]any{"action": s.action, "text": s.text, "target": target, "category": "fact", "importance": 0.8})
	}
	b, _ := json.Marshal(map[string]any{"facts": facts})
	return string(b)
}

func (f *fakeExtractModel) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case r.URL.Path == "/v1/chat/completions":
		prompt := testkit.OpenAIPrompt(body)
		testkit.WriteOpenAIReply(w, body["model"], prompt, f.reply(prompt))
	case strings.HasPrefix(r.URL.Path, "/v1beta/models/") && strings.HasSuffix(r.URL.Path, ":generateContent"):
		prompt := testkit.GeminiPrompt(body)
		testkit.WriteGeminiReply(w, prompt, f.reply(prompt))
	default:
		f.t.Errorf("fake model: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

// extractPipeline runs capture (with smart extraction against the fake),
// store and the query service (which extraction asks for similar
// memories) on one embedded server.
func extractPipeline(t *testing.T, provider string, model *fakeExtractModel, x capture.ExtractConfig) *pipelinetest.Pipeline {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(model.serve))
	t.Cleanup(srv.Close)
	base := srv.URL
	if provider == distill.ProviderOpenAI {
		base += "/v1"
	}
	llm, err := distill.NewLLM(distill.LLMConfig{Provider: provider, APIKey: "test-key", BaseURL: base, MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	x.LLM = llm
	_, nc, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, pipelinetest.Dims))
	log := slog.New(slog.DiscardHandler)
	svc := query.New(nc, eng, query.DefaultConfig(), prometheus.NewRegistry(), log)
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	m := stage.NewMetrics(nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	cw := capture.New(js, eng.Embedder(), capture.Config{Extract: &x}, m, log)
	sw := store.New(js, eng, stage.Config{}, m, nil, log)
	wg.Go(func() { _ = cw.Run(ctx) })
	wg.Go(func() { _ = sw.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return &pipelinetest.Pipeline{JS: js, NC: nc, Eng: eng}
}

// rows counts the store's memories: current and history.
func rows(t *testing.T, p *pipelinetest.Pipeline) (current, history int) {
	st, err := p.Eng.Backend().Stats(context.Background(), engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	return st.Total, st.History
}

// TestSmartExtractionScriptedConversation: 30 turns with 6 fact changes,
// through the real capture, query and store stages, with the model behind
// the real Gemini and OpenAI wire formats. The final memories are exactly
// the facts that hold; each stale one is history, superseded by its new
// value (or archived, for the car sold); nothing is stored twice.
func TestSmartExtractionScriptedConversation(t *testing.T) {
	for _, provider := range []string{distill.ProviderOpenAI, distill.ProviderGemini} {
		t.Run(provider, func(t *testing.T) {
			script := map[string][]scriptStep{}
			for _, turn := range factScript {
				script[turn.said] = turn.facts
			}
			model := &fakeExtractModel{t: t, script: script}
			p := extractPipeline(t, provider, model, capture.ExtractConfig{Similar: 10})
			var history []schemas.Message
			wantCur, wantHist := 0, 0
			for i, turn := range factScript {
				history = append(history, testkit.UserMsg(turn.said), testkit.AssistantMsg("Noted."))
				p.PublishAgentEnd(t, "main", "s-facts", slices.Clone(history), "")
				for _, s := range turn.facts {
					switch s.action {
					case "ADD":
						wantCur++
					case "UPDATE":
						wantHist++
					case "DELETE":
						wantCur--
						wantHist++
					}
				}
				testkit.WaitFor(t, 10*time.Second, func() error {
					if cur, hist := rows(t, p); cur != wantCur || hist != wantHist {
						return fmt.Errorf("after turn %d: %d current, %d history; want %d, %d", i+1, cur, hist, wantCur, wantHist)
					}
					model.mu.Lock()
					defer model.mu.Unlock()
					if model.calls != i+1 {
						return fmt.Errorf("after turn %d: %d model calls", i+1, model.calls)
					}
					return nil
				})
			}
			want := []string{"I live in Berlin", "I work at Bosch", "My daughter is seven", "My favourite colour is green",
				"My manager is Jonas", "I prefer tea in the morning", "My dog is called Rex", "I have a sister called Hana",
				"I am allergic to peanuts", "I play the cello", "I speak Czech and German", "My dog Rex is a beagle",
				"My sister Hana lives in Vienna"}
			cur := p.Texts(t) // fails on a text stored twice
			got := make([]string, 0, len(cur))
			for text := range cur {
				got = append(got, text)
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("current memories:\n%q\nwant:\n%q", got, want)
			}
			all, err := p.Eng.List(context.Background(), memory.Admin(), memory.ListOptions{Limit: 100, History: true})
			if err != nil {
				t.Fatal(err)
			}
			byText := map[string]schemas.Memory{}
			for _, m := range all {
				byText[m.Text] = m
			}
			for stale, now := range map[string]string{"I live in Paris": "I live in Berlin", "I work at Siemens": "I work at Bosch",
				"My daughter is six": "My daughter is seven", "My favourite colour is blue": "My favourite colour is green",
				"My manager is Petra": "My manager is Jonas", "I drive a Skoda Octavia": ""} {
				m := byText[stale]
				wantBy := ""
				if now != "" {
					wantBy = byText[now].ID
				}
				if m.Current() || m.SupersededBy != wantBy {
					t.Errorf("%q: current %v, superseded by %q; want history, superseded by %q (%s)", stale, m.Current(), m.SupersededBy, wantBy, now)
				}
			}
			res, err := p.Eng.Context(context.Background(), memory.Agent("main"), "Where do I live?", memory.ContextOptions{Timeout: 5 * time.Second})
			if err != nil || strings.Contains(res.Block, "Paris") {
				t.Errorf("auto-recall holds the stale home:\n%s (%v)", res.Block, err)
			}
		})
	}
}

// A model answer that cannot be used leaves the turn to the capture rules:
// the rule-captured preference is stored, the model's decisions are not.
func TestSmartExtractionFallsBack(t *testing.T) {
	const said = "I prefer dark mode in every editor"
	huge := `{"facts":[{"action":"ADD","text":"` + strings.Repeat("x", 11<<20) + `","target":"","category":"fact","importance":0.5}]}`
	for _, tc := range []struct {
		name   string
		answer func(prompt string) string
		x      capture.ExtractConfig
		delay  time.Duration
		calls  int
	}{
		{"malformed JSON", func(string) string { return `{"facts": [{"action": "ADD", "text": "I like` }, capture.ExtractConfig{}, 0, 1},
		{"refusal", func(string) string { return "I'm sorry, I can't help with that." }, capture.ExtractConfig{}, 0, 1},
		{"another agent's memory id", func(string) string {
			return `{"facts":[{"action":"DELETE","text":"gone","target":"6f1d6c2e-8a59-4b4e-9c53-6b8f3f0e2a11","category":"fact","importance":0.5}]}`
		}, capture.ExtractConfig{}, 0, 1},
		{"delete everything", func(prompt string) string {
			var facts []string
			for _, m := range storedLine.FindAllStringSubmatch(prompt, -1) {
				facts = append(facts, `{"action":"DELETE","text":"forget it","target":"`+m[1]+`","category":"fact","importance":0.5}`)
			}
			return `{"facts":[` + strings.Join(facts, ",") + `]}`
		}, capture.ExtractConfig{}, 0, 1},
		{"10 MB answer", func(string) string { return huge }, capture.ExtractConfig{}, 0, 1},
		{"timeout", func(string) string { return `{"facts":[]}` }, capture.ExtractConfig{Timeout: 200 * time.Millisecond}, time.Second, 1},
		{"budget spent", func(string) string { return `{"facts":[]}` }, capture.ExtractConfig{TokensPerHour: 1}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := &fakeExtractModel{t: t, answer: tc.answer, delay: tc.delay}
			p := extractPipeline(t, distill.ProviderOpenAI, model, tc.x)
			// Four memories to delete, stored as the agent's own.
			for _, text := range []string{"My dog is called Rex", "I live in Brno", "I work at the harbour authority", "My sister is Hana"} {
				if _, err := p.Eng.Store(context.Background(), memory.Agent("main"), memory.StoreRequest{Text: text}, memory.DedupTool); err != nil {
					t.Fatal(err)
				}
			}
			// The budget case spends its one token on a first turn.
			if tc.name == "budget spent" {
				p.PublishAgentEnd(t, "main", "s-first", []schemas.Message{testkit.UserMsg("Hello there, nice to meet you")}, "")
				testkit.WaitFor(t, 10*time.Second, func() error {
					model.mu.Lock()
					defer model.mu.Unlock()
					if model.calls != 1 {
						return fmt.Errorf("%d calls", model.calls)
					}
					return nil
				})
			}
			p.PublishAgentEnd(t, "main", "s-fallback", []schemas.Message{testkit.UserMsg(said)}, "")
			testkit.WaitFor(t, 10*time.Second, func() error {
				if _, ok := p.Texts(t)[said]; !ok {
					return fmt.Errorf("the rule-captured memory is not stored")
				}
				return nil
			})
			if cur, hist := rows(t, p); cur != 5 || hist != 0 {
				t.Errorf("%d current, %d history; want the 4 memories and the new one, nothing ended", cur, hist)
			}
			model.mu.Lock()
			defer model.mu.Unlock()
			if model.calls != tc.calls {
				t.Errorf("model called %d times, want %d", model.calls, tc.calls)
			}
		})
	}
}
