package distill

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

func loadFixture(t testing.TB, name string) []Message {
	t.Helper()
	tr, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return tr.Messages
}

func localEmbedder(t testing.TB) embed.Embedder {
	t.Helper()
	emb, err := embed.New(embed.Config{Provider: embed.ProviderLocal, Dimensions: 384})
	if err != nil {
		t.Fatal(err)
	}
	return emb
}

type wantLesson struct {
	category schemas.Category
	contains string
	zh       bool // must carry Chinese keywords
}

var englishWant = []wantLesson{
	{schemas.CategoryReflection, "busy_timeout(5000)", false},
	{schemas.CategoryDecision, "single writer goroutine", false},
	{schemas.CategoryPreference, "table-driven tests", false},
}

var mixedWant = []wantLesson{
	{schemas.CategoryReflection, "permission denied", true},
	{schemas.CategoryDecision, "Caddy", true},
	{schemas.CategoryPreference, "pnpm", true},
}

// checkLessons asserts the result holds exactly the wanted lessons, each with
// evidence that really quotes the messages it cites.
func checkLessons(t *testing.T, res Result, msgs []Message, want []wantLesson) {
	t.Helper()
	if len(res.Lessons) != len(want) {
		t.Fatalf("got %d lessons, want %d: %+v", len(res.Lessons), len(want), res.Lessons)
	}
	for _, w := range want {
		l, ok := findLesson(res.Lessons, w.contains)
		if !ok {
			t.Errorf("no lesson mentions %q", w.contains)
			continue
		}
		if l.Category != w.category {
			t.Errorf("lesson %q: category %s, want %s", w.contains, l.Category, w.category)
		}
		if w.zh != (len(l.KeywordsZh) > 0) {
			t.Errorf("lesson %q: keywordsZh %v, want Chinese keywords = %v", w.contains, l.KeywordsZh, w.zh)
		}
		assertEvidence(t, l, msgs)
	}
	for _, l := range res.Lessons {
		if strings.Contains(l.Text, "Rust") || l.Text == "Always test your code." {
			t.Errorf("fabricated or generic lesson survived: %q", l.Text)
		}
	}
}

func findLesson(ls []Lesson, contains string) (Lesson, bool) {
	for _, l := range ls {
		if strings.Contains(l.Text, contains) {
			return l, true
		}
	}
	return Lesson{}, false
}

func assertEvidence(t *testing.T, l Lesson, msgs []Message) {
	t.Helper()
	if len(l.Evidence) == 0 {
		t.Errorf("lesson %q has no evidence", l.Text)
	}
	for _, e := range l.Evidence {
		for _, n := range e.MessageIDs {
			if n < 1 || n > len(msgs) || !strings.Contains(normalizeForMatch(msgs[n-1].Text), normalizeQuote(e.Quote)) {
				t.Errorf("lesson %q: quote %q is not in message %d", l.Text, e.Quote, n)
			}
		}
	}
}

var providers = []string{ProviderGemini, ProviderOpenAI}

func TestDistillFixtureThroughProviders(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			fake, srv := newFakeServer(t, p, nil)
			d := New(Config{}, newTestLLM(t, p, srv.URL, 0), localEmbedder(t))
			res, err := d.Distill(context.Background(), msgs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkLessons(t, res, msgs, englishWant)
			requests, _ := fake.stats()
			st := res.Stats
			if st.Messages != 300 || st.Chunks < 2 || st.MapCalls != st.Chunks || requests != st.Chunks || st.MapErrors != 0 {
				t.Errorf("stats %+v, server saw %d requests", st, requests)
			}
			if st.Unsupported != st.Chunks || st.Filtered != st.Chunks {
				t.Errorf("want one unsupported (fabricated) and one generic lesson dropped per chunk: %+v", st)
			}
			if st.InputTokens == 0 || st.OutputTokens == 0 {
				t.Errorf("token usage not recorded: %+v", st)
			}
			if res.Distiller != DistillerLLM || res.Model == "" || st.Language != LangEnglish {
				t.Errorf("distiller %q model %q language %q", res.Distiller, res.Model, st.Language)
			}
			checkWireRequest(t, p, fake.body(0), fake.headers[0])
		})
	}
}

// checkWireRequest asserts JSON output, temperature 0.2 and the API key.
func checkWireRequest(t *testing.T, provider string, body map[string]any, h map[string][]string) {
	t.Helper()
	switch provider {
	case ProviderGemini:
		gc, _ := body["generationConfig"].(map[string]any)
		if gc["responseMimeType"] != "application/json" || gc["responseSchema"] == nil || !near(gc["temperature"], 0.2) {
			t.Errorf("generationConfig = %v", gc)
		}
		if body["systemInstruction"] == nil {
			t.Error("no systemInstruction")
		}
		if got := h["X-Goog-Api-Key"]; len(got) != 1 || got[0] != "test-key" {
			t.Errorf("x-goog-api-key = %v", got)
		}
	case ProviderOpenAI:
		rf, _ := body["response_format"].(map[string]any)
		if rf["type"] != "json_object" || !near(body["temperature"], 0.2) {
			t.Errorf("response_format %v temperature %v", rf, body["temperature"])
		}
		if got := h["Authorization"]; len(got) != 1 || got[0] != "Bearer test-key" {
			t.Errorf("authorization = %v", got)
		}
	}
}

func near(v any, want float64) bool {
	f, ok := v.(float64)
	return ok && f > want-1e-6 && f < want+1e-6
}

func TestDistillMixedSessionAsksForChineseKeywords(t *testing.T) {
	msgs := loadFixture(t, "mixed_zh_en_session.jsonl")
	if lang := DetectLanguage(msgs); lang != LangMixed {
		t.Fatalf("language = %s, want mixed", lang)
	}
	fake, srv := newFakeServer(t, ProviderGemini, nil)
	res, err := New(Config{}, newTestLLM(t, ProviderGemini, srv.URL, 0), localEmbedder(t)).Distill(context.Background(), msgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkLessons(t, res, msgs, mixedWant)
	if prompt := testkit.GeminiPrompt(fake.body(0)); !strings.Contains(prompt, "Keywords (zh)") {
		t.Errorf("prompt does not ask for Chinese keywords:\n%s", prompt[:300])
	}
}

func TestMapCallsRunInParallelUpToTheLimit(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	cfg := Config{MapChunkChars: 3000, Parallelism: 3}
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			run := func(parallelism int) (Result, int, int) {
				fake, srv := newFakeServer(t, p, nil)
				fake.delay = 40 * time.Millisecond
				c := cfg
				c.Parallelism = parallelism
				res, err := New(c, newTestLLM(t, p, srv.URL, 0), localEmbedder(t)).Distill(context.Background(), msgs, Options{})
				if err != nil {
					t.Fatal(err)
				}
				requests, maxInFlight := fake.stats()
				return res, requests, maxInFlight
			}
			par, requests, maxInFlight := run(3)
			if par.Stats.Chunks < 10 || requests != par.Stats.Chunks {
				t.Fatalf("want a long session: %d chunks, %d requests", par.Stats.Chunks, requests)
			}
			if maxInFlight != 3 {
				t.Errorf("max in flight = %d, want exactly the limit 3", maxInFlight)
			}
			seq, _, seqMax := run(1)
			if seqMax != 1 {
				t.Errorf("sequential run had %d in flight", seqMax)
			}
			par.Stats.Duration, seq.Stats.Duration = 0, 0
			if !reflect.DeepEqual(par, seq) {
				t.Errorf("parallel result differs from sequential:\n%+v\n%+v", par, seq)
			}
			checkLessons(t, par, msgs, englishWant)
			if par.Stats.Merged == 0 {
				t.Errorf("overlapping chunks should have produced duplicates to merge: %+v", par.Stats)
			}
		})
	}
}

func TestProviderAnswers(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	cases := []struct {
		name        string
		mode        func(n int) fakeMode
		timeout     time.Duration
		wantErr     error // from Distill; nil means success with englishWant
		wantMapErrs bool
	}{
		{name: "fenced json", mode: func(int) fakeMode { return answerFenced }},
		{name: "429 then success", mode: func(n int) fakeMode { return pick(n == 0, answer429, answerOK) }},
		{name: "500 then success", mode: func(n int) fakeMode { return pick(n < 2, answer500, answerOK) }},
		{name: "some malformed", mode: func(n int) fakeMode { return pick(n == 1, answerMalformed, answerOK) }, wantMapErrs: true},
		{name: "all malformed", mode: func(int) fakeMode { return answerMalformed }, wantErr: ErrMalformedOutput},
		{name: "hang", mode: func(int) fakeMode { return answerHang }, timeout: 200 * time.Millisecond, wantErr: ErrTimeout},
	}
	for _, p := range providers {
		for _, c := range cases {
			t.Run(p+"/"+c.name, func(t *testing.T) {
				_, srv := newFakeServer(t, p, c.mode)
				start := time.Now()
				res, err := New(Config{}, newTestLLM(t, p, srv.URL, c.timeout), nil).Distill(context.Background(), msgs, Options{})
				if c.wantErr != nil {
					if !errors.Is(err, c.wantErr) {
						t.Fatalf("err = %v, want %v", err, c.wantErr)
					}
					if time.Since(start) > 5*time.Second {
						t.Errorf("failing took %s", time.Since(start))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if (res.Stats.MapErrors > 0) != c.wantMapErrs {
					t.Errorf("map errors = %d", res.Stats.MapErrors)
				}
				if !c.wantMapErrs {
					checkLessons(t, res, msgs, englishWant)
				}
			})
		}
	}
}

func pick(cond bool, a, b fakeMode) fakeMode {
	if cond {
		return a
	}
	return b
}

func TestTokenBudgetStopsMapCalls(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	llm := &brainLLM{tokens: 1000}
	d := New(Config{MapChunkChars: 3000, Parallelism: 1, MaxTokens: 2500}, llm, nil)
	res, err := d.Distill(context.Background(), msgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 1010 tokens per call: after three calls 3030 ≥ 2500, so no fourth.
	if res.Stats.MapCalls != 3 || llm.callCount() != 3 || !res.Stats.BudgetExceeded || res.Stats.SkippedChunks != res.Stats.Chunks-3 {
		t.Errorf("stats %+v, %d calls", res.Stats, llm.callCount())
	}
	if res.Stats.InputTokens != 3000 || res.Stats.OutputTokens != 30 {
		t.Errorf("tokens %d/%d", res.Stats.InputTokens, res.Stats.OutputTokens)
	}
}

func TestOnProgressAfterEachCall(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	var calls, concurrent, maxConcurrent atomic.Int32
	progress := func() {
		calls.Add(1)
		n := concurrent.Add(1)
		if n > maxConcurrent.Load() {
			maxConcurrent.Store(n)
		}
		time.Sleep(time.Millisecond)
		concurrent.Add(-1)
	}
	llm := &brainLLM{delay: 5 * time.Millisecond}
	res, err := New(Config{MapChunkChars: 4000, Parallelism: 4}, llm, nil).Distill(context.Background(), msgs, Options{OnProgress: progress})
	if err != nil {
		t.Fatal(err)
	}
	if int(calls.Load()) != res.Stats.MapCalls || maxConcurrent.Load() != 1 {
		t.Errorf("OnProgress called %d times (max %d at once) for %d map calls", calls.Load(), maxConcurrent.Load(), res.Stats.MapCalls)
	}
}

func TestDistillCancelled(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := New(Config{MapChunkChars: 3000}, &brainLLM{delay: time.Second}, nil).Distill(ctx, msgs, Options{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMReduce(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	cases := []struct {
		name     string
		reduce   func(prompt string) string
		want     []wantLesson
		warnings int
	}{
		{
			name: "merges and is evidence-checked",
			// Keep only the first candidate and invent one: the invention must go.
			reduce: func(prompt string) string {
				body := prompt[strings.Index(prompt, "<candidates>\n")+len("<candidates>\n") : strings.LastIndex(prompt, "\n</candidates>")]
				ls, err := ParseLessons(body)
				if err != nil {
					return "{}"
				}
				first := toWire(ls[0])
				invented := wireLesson{Category: "fact", Importance: 1, Text: "ledgerd runs on Kubernetes.",
					Evidence: []wireEvidence{{MessageIDs: []int{1}, Quote: "ledgerd runs on Kubernetes in production"}}}
				return mustJSON(map[string]any{"lessons": []wireLesson{first, invented}})
			},
			want: englishWant[:1],
		},
		{name: "malformed keeps the local result", reduce: func(string) string { return "nope" }, want: englishWant, warnings: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm := &brainLLM{reduce: c.reduce}
			res, err := New(Config{LLMReduce: true}, llm, localEmbedder(t)).Distill(context.Background(), msgs, Options{})
			if err != nil {
				t.Fatal(err)
			}
			checkLessons(t, res, msgs, c.want)
			if len(res.Warnings) != c.warnings {
				t.Errorf("warnings %q", res.Warnings)
			}
			if llm.callCount() != res.Stats.Chunks+1 {
				t.Errorf("%d calls for %d chunks", llm.callCount(), res.Stats.Chunks)
			}
		})
	}
}

func TestExtractiveDistiller(t *testing.T) {
	msgs := loadFixture(t, "english_debug_session.jsonl")
	res, err := New(Config{}, nil, localEmbedder(t)).Distill(context.Background(), msgs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Distiller != DistillerExtractive || res.Model != "" {
		t.Errorf("distiller %q model %q", res.Distiller, res.Model)
	}
	pref, ok := findLesson(res.Lessons, "I prefer table-driven tests")
	if !ok || pref.Category != schemas.CategoryPreference {
		t.Fatalf("preference not extracted: %+v", res.Lessons)
	}
	if _, ok := findLesson(res.Lessons, "We decided to route all writes"); !ok {
		t.Errorf("decision not extracted: %+v", res.Lessons)
	}
	for _, l := range res.Lessons {
		assertEvidence(t, l, msgs)
		if msgs[l.Evidence[0].MessageIDs[0]-1].Role != RoleUser || strings.Contains(l.Text, "untrusted metadata") {
			t.Errorf("extracted %q", l.Text)
		}
	}
}

func TestDistillEdgeCases(t *testing.T) {
	msgs := loadFixture(t, "mixed_zh_en_session.jsonl")
	cases := []struct {
		name  string
		cfg   Config
		msgs  []Message
		calls int
	}{
		{"no messages", Config{}, nil, 0},
		{"max final none", Config{MaxFinal: -1}, msgs, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm := &brainLLM{}
			res, err := New(c.cfg, llm, nil).Distill(context.Background(), c.msgs, Options{})
			if err != nil || len(res.Lessons) != 0 || llm.callCount() != c.calls {
				t.Errorf("res %+v err %v calls %d", res, err, llm.callCount())
			}
		})
	}
	t.Run("max final cuts", func(t *testing.T) {
		res, err := New(Config{MaxFinal: 2}, &brainLLM{}, nil).Distill(context.Background(), msgs, Options{})
		if err != nil || len(res.Lessons) != 2 || res.Lessons[0].Importance < res.Lessons[1].Importance {
			t.Errorf("res %+v err %v", res.Lessons, err)
		}
	})
	t.Run("renumbers", func(t *testing.T) {
		in := []Message{{Role: RoleUser, Text: "I prefer table-driven tests, always."}, {Role: RoleAssistant, Text: "ok"}}
		res, err := New(Config{}, &brainLLM{}, nil).Distill(context.Background(), in, Options{})
		if err != nil || len(res.Lessons) != 1 || res.Lessons[0].Evidence[0].MessageIDs[0] != 1 {
			t.Errorf("res %+v err %v", res.Lessons, err)
		}
	})
}
