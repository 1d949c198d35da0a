package distill

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/schemas"
)

const testPrompt = "<transcript>\n[U1] I prefer table-driven tests with t.Run subtests\n</transcript>"

func TestProviderRetriesAndTimeouts(t *testing.T) {
	cases := []struct {
		name     string
		mode     func(n int) fakeMode
		timeout  time.Duration
		requests int    // the server sees exactly this many
		wantErr  error  // nil: success
		errText  string // in the error message
	}{
		{name: "ok", requests: 1},
		{name: "429 then success", mode: func(n int) fakeMode { return pick(n == 0, answer429, answerOK) }, requests: 2},
		{name: "503 twice then success", mode: func(n int) fakeMode { return pick(n < 2, answer500, answerOK) }, requests: 3},
		{name: "429 forever", mode: func(int) fakeMode { return answer429 }, requests: 1 + DefaultMaxRetries, errText: "429"},
		{name: "hang", mode: func(int) fakeMode { return answerHang }, timeout: 200 * time.Millisecond, requests: 1, wantErr: ErrTimeout},
	}
	for _, p := range providers {
		for _, c := range cases {
			t.Run(p+"/"+c.name, func(t *testing.T) {
				fake, srv := newFakeServer(t, p, c.mode)
				llm := newTestLLM(t, p, srv.URL, c.timeout)
				start := time.Now()
				resp, err := llm.Generate(context.Background(), Request{System: "s", Prompt: testPrompt, Schema: LessonsSchema()})
				elapsed := time.Since(start)
				if requests, _ := fake.stats(); requests != c.requests {
					t.Errorf("server saw %d requests, want %d", requests, c.requests)
				}
				switch {
				case c.wantErr == nil && c.errText == "":
					if err != nil {
						t.Fatal(err)
					}
					if ls, err := ParseLessons(resp.Text); err != nil || len(ls) == 0 || resp.InputTokens == 0 || resp.OutputTokens == 0 {
						t.Errorf("resp %+v lessons %v err %v", resp, ls, err)
					}
				case c.wantErr != nil:
					// A hang is the provider's failure of the moment.
					if !errors.Is(err, c.wantErr) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, schemas.ErrUnavailable) {
						t.Errorf("err = %v, want %v", err, c.wantErr)
					}
					if elapsed < c.timeout || elapsed > c.timeout+2*time.Second {
						t.Errorf("gave up after %s with timeout %s", elapsed, c.timeout)
					}
				default:
					if err == nil || !strings.Contains(err.Error(), c.errText) || !strings.Contains(err.Error(), p) {
						t.Errorf("err = %v, want it to name %s and %q", err, p, c.errText)
					}
					if !errors.Is(err, schemas.ErrUnavailable) {
						t.Errorf("err = %v: retries used up on 429 is not marked unavailable", err)
					}
				}
			})
		}
	}
}

func TestRetryHonoursContext(t *testing.T) {
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			_, srv := newFakeServer(t, p, func(int) fakeMode { return answer429 })
			llm, err := NewLLM(LLMConfig{Provider: p, APIKey: "k", BaseURL: srv.URL + map[string]string{ProviderGemini: "", ProviderOpenAI: "/v1"}[p], RetryBackoff: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err = llm.Generate(ctx, Request{Prompt: testPrompt})
			if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
				t.Errorf("err = %v after %s", err, time.Since(start))
			}
		})
	}
}

func TestOpenAIJSONSchemaMode(t *testing.T) {
	fake, srv := newFakeServer(t, ProviderOpenAI, nil)
	llm, err := NewLLM(LLMConfig{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", JSONSchema: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Generate(context.Background(), Request{Prompt: testPrompt, Schema: LessonsSchema()}); err != nil {
		t.Fatal(err)
	}
	rf, _ := fake.body(0)["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	schema, _ := js["schema"].(map[string]any)
	if rf["type"] != "json_schema" || js["strict"] != true || schema["additionalProperties"] != false {
		t.Errorf("response_format = %v", rf)
	}
}

func TestNewLLM(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "")
	t.Setenv("GOOGLE_API_KEY", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CLAWMEM_TEST_LLM_KEY", "from-env")
	cases := []struct {
		name    string
		cfg     LLMConfig
		nilLLM  bool
		wantErr error
		errText string
		model   string
	}{
		{name: "none", cfg: LLMConfig{}, nilLLM: true},
		{name: "none spelled out", cfg: LLMConfig{Provider: "none"}, nilLLM: true},
		{name: "unknown", cfg: LLMConfig{Provider: "claude"}, errText: "unknown llm provider"},
		{name: "unset env key", cfg: LLMConfig{Provider: "gemini", APIKey: "${CLAWMEM_TEST_UNSET_KEY}"}, wantErr: envsubst.ErrUnset},
		{name: "gemini without key", cfg: LLMConfig{Provider: "gemini"}, errText: "GEMINI_API_KEY"},
		{name: "openai without key", cfg: LLMConfig{Provider: "openai"}, errText: "OPENAI_API_KEY"},
		{name: "openai local server needs no key", cfg: LLMConfig{Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1", Model: "qwen2.5"}, model: "qwen2.5"},
		{name: "gemini env key", cfg: LLMConfig{Provider: "Gemini", APIKey: "${CLAWMEM_TEST_LLM_KEY}"}, model: defaultGeminiModel},
		{name: "negative timeout", cfg: LLMConfig{Provider: "openai", APIKey: "k", Timeout: -1}, errText: "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			llm, err := NewLLM(c.cfg)
			switch {
			case c.wantErr != nil:
				if !errors.Is(err, c.wantErr) {
					t.Errorf("err = %v, want %v", err, c.wantErr)
				}
			case c.errText != "":
				if err == nil || !strings.Contains(err.Error(), c.errText) {
					t.Errorf("err = %v, want %q", err, c.errText)
				}
			case err != nil:
				t.Fatal(err)
			case c.nilLLM != (llm == nil):
				t.Errorf("llm = %v", llm)
			case llm != nil && llm.Model() != c.model:
				t.Errorf("model = %q, want %q", llm.Model(), c.model)
			}
		})
	}
}

func TestGeminiSendsEnvExpandedKey(t *testing.T) {
	t.Setenv("CLAWMEM_TEST_LLM_KEY", "secret-from-env")
	fake, srv := newFakeServer(t, ProviderGemini, nil)
	llm, err := NewLLM(LLMConfig{Provider: ProviderGemini, APIKey: "${CLAWMEM_TEST_LLM_KEY}", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llm.Generate(context.Background(), Request{Prompt: testPrompt}); err != nil {
		t.Fatal(err)
	}
	if got := fake.headers[0].Get("X-Goog-Api-Key"); got != "secret-from-env" {
		t.Errorf("api key header = %q", got)
	}
}

func TestRetryDelay(t *testing.T) {
	p := callPolicy{backoff: 100 * time.Millisecond}
	for try, base := range []time.Duration{100, 200, 400, 800} {
		d := p.delay(try)
		lo, hi := base*time.Millisecond*8/10, base*time.Millisecond*12/10
		if d < lo || d > hi {
			t.Errorf("delay(%d) = %s, want %s..%s", try, d, lo, hi)
		}
	}
	if d := p.delay(40); d > maxRetryBackoff*12/10 {
		t.Errorf("delay not capped: %s", d)
	}
}
