package distill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/internal/testkit"
)

// The fake model: it answers a map prompt with lessons whose quotes it cuts
// from the transcript in the prompt, so they are real, plus one lesson with
// a fabricated quote and one generic platitude, which distillation must drop.

// fakeTopic is a lesson the fake model finds when its trigger is in a chunk.
type fakeTopic struct {
	trigger    string
	category   string
	importance float64
	text       string
	keywords   []string
	keywordsZh []string
	labelIDs   bool // cite as "U12" rather than 12
}

var fakeTopics = []fakeTopic{
	{trigger: "Confirmed: with busy_timeout(5000)", category: "reflection", importance: 0.9,
		text:     "Pitfall: ledgerd's SQLite import failed with \"database is locked\" (SQLITE_BUSY). Cause: audit/audit.go opened a second *sql.DB on the same file and no handle set busy_timeout. Fix: open one shared handle with _pragma=busy_timeout(5000)&_pragma=journal_mode(WAL) and SetMaxOpenConns(1). Prevention: never open a second handle on a SQLite file.",
		keywords: []string{"SQLITE_BUSY", "database is locked", "busy_timeout", "WAL"}},
	{trigger: "We decided to route all writes through a single writer goroutine", category: "decision", importance: 0.8,
		text:     "ledgerd routes all SQLite writes through a single writer goroutine fed by a channel (store.Writer), not a mutex, for batching and explicit ordering.",
		keywords: []string{"store.Writer", "writer goroutine", "batching"}, labelIDs: true},
	{trigger: "I prefer table-driven tests", category: "preferences", importance: 0.7,
		text:     "Dana wants table-driven tests with t.Run subtests and only the standard testing package; no testify.",
		keywords: []string{"table-driven tests", "t.Run", "testify"}},
	{trigger: "确认了：在 docker-compose.yml 里加上", category: "reflection", importance: 0.85,
		text:       "Pitfall: postgres 容器启动失败，报 permission denied。Cause: bind mount 目录 ./data/pg 属于 UID 1000，而 postgres 以 UID 999 运行。Fix: 在 db 服务加 user: \"1000:1000\" 并清空半初始化的目录。Prevention: 数据目录 owner 要与容器进程 UID 一致。",
		keywords:   []string{"postgres", "permission denied", "docker compose", "UID"},
		keywordsZh: []string{"权限", "数据目录", "容器用户"}},
	{trigger: "我们决定用 Caddy 代替 Nginx", category: "decision", importance: 0.75,
		text:       "blog 项目用 Caddy 代替 Nginx 做反向代理，因为 Caddy 自动申请和续期 HTTPS 证书。",
		keywords:   []string{"Caddy", "Nginx", "reverse proxy", "HTTPS"},
		keywordsZh: []string{"反向代理", "证书"}, labelIDs: true},
	{trigger: "我喜欢用 pnpm 而不是 npm", category: "preference", importance: 0.7,
		text:       "用户偏好 pnpm 而不是 npm（安装更快、更省磁盘），Dockerfile 里也用 pnpm。",
		keywords:   []string{"pnpm", "npm", "Dockerfile"},
		keywordsZh: []string{"包管理器", "偏好"}},
}

const fabricatedQuote = "we will rewrite ledgerd in Rust next quarter"

var labelLine = regexp.MustCompile(`^\[([UA])(\d+)\] `)

type promptMessage struct {
	label string
	n     int
	text  string
}

// transcriptOf reads the messages out of a map prompt.
func transcriptOf(prompt string) []promptMessage {
	start := strings.Index(prompt, "<transcript>\n")
	end := strings.LastIndex(prompt, "\n</transcript>")
	if start < 0 || end < start {
		return nil
	}
	var out []promptMessage
	for _, line := range strings.Split(prompt[start+len("<transcript>\n"):end], "\n") {
		if m := labelLine.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			out = append(out, promptMessage{label: m[1] + m[2], n: n, text: line[len(m[0]):]})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].text += "\n" + line
		}
	}
	return out
}

// fakeAnswer is the fake model's JSON answer to a map prompt.
func fakeAnswer(prompt string) string {
	msgs := transcriptOf(prompt)
	wantZh := strings.Contains(prompt, "fill keywords_zh")
	lessons := []map[string]any{}
	for _, t := range fakeTopics {
		for _, m := range msgs {
			i := strings.Index(m.text, t.trigger)
			if i < 0 {
				continue
			}
			var id any = m.n
			if t.labelIDs {
				id = m.label
			}
			l := map[string]any{
				"category": t.category, "importance": t.importance, "text": t.text,
				"evidence": []map[string]any{{"message_ids": []any{id}, "quote": cutRunes(m.text[i:], 70)}},
				"tags":     []string{"fixture"}, "keywords": t.keywords, "keywords_zh": []string{},
			}
			if wantZh {
				l["keywords_zh"] = t.keywordsZh
			}
			lessons = append(lessons, l)
			break
		}
	}
	if len(msgs) > 0 {
		first := msgs[0]
		lessons = append(lessons,
			map[string]any{"category": "decision", "importance": 1, "text": "ledgerd will be rewritten in Rust next quarter.",
				"evidence": []map[string]any{{"message_ids": []int{first.n}, "quote": fabricatedQuote}}, "tags": []string{}, "keywords": []string{"Rust"}, "keywords_zh": []string{}},
			map[string]any{"category": "reflection", "importance": 0.9, "text": "Always test your code.",
				"evidence": []map[string]any{{"message_ids": []int{first.n}, "quote": cutRunes(first.text, 30)}}, "tags": []string{}, "keywords": []string{}, "keywords_zh": []string{}},
		)
	}
	b, err := json.Marshal(map[string]any{"lessons": lessons})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// fakeMode is how the fake server answers its n-th request (0-based).
type fakeMode int

const (
	answerOK fakeMode = iota
	answerFenced
	answerMalformed
	answer429
	answer500
	answerHang
)

// fakeServer is a fake LLM endpoint in Gemini or OpenAI wire format. It
// records requests and how many were in flight at once.
type fakeServer struct {
	t     *testing.T
	delay time.Duration
	mode  func(n int) fakeMode

	mu          sync.Mutex
	requests    int
	inFlight    int
	maxInFlight int
	bodies      []map[string]any
	headers     []http.Header
}

func newFakeServer(t *testing.T, provider string, mode func(int) fakeMode) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, mode: mode}
	if f.mode == nil {
		f.mode = func(int) fakeMode { return answerOK }
	}
	var h http.HandlerFunc
	switch provider {
	case ProviderGemini:
		h = f.gemini
	case ProviderOpenAI:
		h = f.openai
	default:
		t.Fatalf("unknown provider %q", provider)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return f, srv
}

// begin records a request and returns its number and mode.
func (f *fakeServer) begin(r *http.Request) (map[string]any, fakeMode, bool) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("fake: bad request body: %v", err)
		return nil, answerOK, false
	}
	f.mu.Lock()
	n := f.requests
	f.requests++
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	return body, f.mode(n), true
}

func (f *fakeServer) end() {
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

func (f *fakeServer) stats() (requests, maxInFlight int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.maxInFlight
}

func (f *fakeServer) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// respond waits out the delay (or hangs) and says what to answer; ok is
// false when the reply has been written already (an error status).
func (f *fakeServer) respond(w http.ResponseWriter, r *http.Request, mode fakeMode, errBody string) bool {
	select {
	case <-time.After(f.delay):
	case <-r.Context().Done():
		return false
	}
	switch mode {
	case answerHang:
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return false
	case answer429, answer500:
		status := http.StatusTooManyRequests
		if mode == answer500 {
			status = http.StatusInternalServerError
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, errBody, status)
		return false
	}
	return true
}

func answerText(mode fakeMode, prompt string) string {
	switch mode {
	case answerFenced:
		return "Here are the lessons:\n```json\n" + fakeAnswer(prompt) + "\n```"
	case answerMalformed:
		return `{"lessons": [{"category": "fact", "text": "unterminated`
	}
	return fakeAnswer(prompt)
}

// gemini speaks POST /v1beta/models/{model}:generateContent.
func (f *fakeServer) gemini(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1beta/models/") || !strings.HasSuffix(r.URL.Path, ":generateContent") {
		f.t.Errorf("fake gemini: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, mode, ok := f.begin(r)
	if !ok {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	defer f.end()
	if !f.respond(w, r, mode, `{"error":{"code":%d,"message":"try again later","status":"RESOURCE_EXHAUSTED"}}`) {
		return
	}
	prompt := testkit.GeminiPrompt(body)
	testkit.WriteGeminiReply(w, prompt, answerText(mode, prompt))
}

// openai speaks POST /v1/chat/completions.
func (f *fakeServer) openai(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("fake openai: unexpected %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	body, mode, ok := f.begin(r)
	if !ok {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	defer f.end()
	if !f.respond(w, r, mode, `{"error":{"message":"slow down (%d)","type":"rate_limit_error"}}`) {
		return
	}
	prompt := testkit.OpenAIPrompt(body)
	testkit.WriteOpenAIReply(w, body["model"], prompt, answerText(mode, prompt))
}

// newTestLLM builds a provider pointed at a fake server, with fast retries.
func newTestLLM(t *testing.T, provider, url string, timeout time.Duration) LLM {
	t.Helper()
	cfg := LLMConfig{Provider: provider, APIKey: "test-key", BaseURL: url, Timeout: timeout, RetryBackoff: 5 * time.Millisecond}
	if provider == ProviderOpenAI {
		cfg.BaseURL = url + "/v1"
	}
	llm, err := NewLLM(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// brainLLM is the fake model in process, for tests that need no wire.
type brainLLM struct {
	delay  time.Duration
	tokens int // input tokens reported per call
	reduce func(prompt string) string

	mu    sync.Mutex
	calls int
}

func (b *brainLLM) Model() string { return "brain" }

func (b *brainLLM) Generate(ctx context.Context, req Request) (Response, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	if err := sleep(ctx, b.delay); err != nil {
		return Response{}, err
	}
	if req.System == reduceSystem && b.reduce != nil {
		return Response{Text: b.reduce(req.Prompt), InputTokens: b.tokens, OutputTokens: 10}, nil
	}
	return Response{Text: fakeAnswer(req.Prompt), InputTokens: b.tokens, OutputTokens: 10}, nil
}

func (b *brainLLM) callCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
