package distill

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/schemas"
)

// LLM is a chat model that answers one prompt. Implementations must be safe
// for concurrent use: map calls run in parallel.
type LLM interface {
	Generate(ctx context.Context, req Request) (Response, error)
	// Model names the model, for the record kept with each lesson.
	Model() string
}

// Request is one prompt. Schema, when set, asks for structured output of
// that shape (Gemini's responseSchema, OpenAI's json_schema).
type Request struct {
	System string
	Prompt string
	Schema *Schema
}

// Response is the model's text and what the call cost.
type Response struct {
	Text         string
	InputTokens  int
	OutputTokens int
}

// LLM provider names accepted in LLMConfig.Provider.
const (
	ProviderGemini = "gemini"
	ProviderOpenAI = "openai"
)

// Call defaults.
const (
	DefaultLLMTimeout   = 60 * time.Second
	DefaultMaxRetries   = 3
	DefaultRetryBackoff = time.Second
	maxRetryBackoff     = 30 * time.Second
	temperature         = 0.2 // low: lessons should be faithful, not creative
)

// ErrBadResponse is wrapped when a provider answers without usable text
// (no candidates, a blocked prompt, an empty message).
var ErrBadResponse = errors.New("LLM returned no usable answer")

// ErrTimeout is wrapped when one call gets no answer within its timeout.
var ErrTimeout = errors.New("LLM call timed out")

// LLMConfig selects and tunes the distillation model. Zero values mean the
// defaults.
type LLMConfig struct {
	// Provider is "gemini", "openai" (any OpenAI-compatible chat endpoint:
	// OpenAI, Ollama, vLLM, ...) or empty for none (extractive distillation).
	Provider string
	// Model defaults to gemini-2.5-flash (gemini) or gpt-4o-mini (openai).
	Model string
	// APIKey may hold ${ENV} references. Empty falls back to $GEMINI_API_KEY
	// or $GOOGLE_API_KEY (gemini) or $OPENAI_API_KEY (openai); a custom
	// OpenAI-compatible BaseURL may need no key at all.
	APIKey string
	// BaseURL may hold ${ENV} references; empty is the provider's own API.
	BaseURL string
	// Timeout bounds each call (each attempt). Default 60s.
	Timeout time.Duration
	// MaxRetries is how often a call failing with HTTP 429 or 5xx is
	// retried. 0 means DefaultMaxRetries; negative means never.
	MaxRetries int
	// RetryBackoff is the first retry's delay, doubled for each next one
	// (with jitter, capped at 30s). Default 1s.
	RetryBackoff time.Duration
	// JSONSchema makes the openai provider send the lessons schema as a
	// strict json_schema response format (OpenAI, vLLM) instead of plain
	// JSON mode, which is all some compatible servers support.
	JSONSchema bool
}

// NewLLM builds the model cfg describes; an empty provider means none, and
// returns nil, nil. Configuration mistakes (unknown provider, unset ${ENV}
// variable, missing key) fail here.
func NewLLM(cfg LLMConfig) (LLM, error) {
	provider := strings.ToLower(strings.TrimSpace(cfg.Provider))
	if provider == "" || provider == "none" {
		return nil, nil
	}
	if cfg.Timeout < 0 || cfg.RetryBackoff < 0 {
		return nil, fmt.Errorf("distill: llm timeout and retry backoff must not be negative")
	}
	key, err := envsubst.Expand(cfg.APIKey)
	if err != nil {
		return nil, fmt.Errorf("distill: llm apiKey: %w", err)
	}
	baseURL, err := envsubst.Expand(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("distill: llm baseURL: %w", err)
	}
	cfg.APIKey, cfg.BaseURL = key, strings.TrimSpace(baseURL)
	switch provider {
	case ProviderGemini:
		return newGemini(cfg)
	case ProviderOpenAI:
		return newOpenAI(cfg)
	}
	return nil, fmt.Errorf("distill: unknown llm provider %q (want %q, %q or empty for extractive distillation)", cfg.Provider, ProviderGemini, ProviderOpenAI)
}

// callPolicy is the timeout and retry behaviour both providers share.
type callPolicy struct {
	timeout    time.Duration
	maxRetries int
	backoff    time.Duration
}

func newCallPolicy(cfg LLMConfig) callPolicy {
	p := callPolicy{timeout: cfg.Timeout, maxRetries: cfg.MaxRetries, backoff: cfg.RetryBackoff}
	if p.timeout == 0 {
		p.timeout = DefaultLLMTimeout
	}
	switch {
	case p.maxRetries == 0:
		p.maxRetries = DefaultMaxRetries
	case p.maxRetries < 0:
		p.maxRetries = 0
	}
	if p.backoff == 0 {
		p.backoff = DefaultRetryBackoff
	}
	return p
}

// attempt is one provider call; status extracts an HTTP status from its
// error (0 if none).
type attempt struct {
	call   func(ctx context.Context) (Response, error)
	status func(err error) int
}

// do runs a call with a per-attempt timeout, retrying 429 and 5xx answers
// with exponential backoff while ctx allows.
func (p callPolicy) do(ctx context.Context, a attempt) (Response, error) {
	for try := 0; ; try++ {
		resp, err := p.once(ctx, a.call)
		if err == nil {
			return resp, nil
		}
		status := a.status(err)
		if ctx.Err() != nil || !retryable(status) || try >= p.maxRetries {
			if ctx.Err() == nil && (retryable(status) || errors.Is(err, ErrTimeout) || unreachable(err)) {
				// The provider is down, overloaded or hanging: a failure
				// of the moment, which the pipeline waits out.
				err = schemas.Unavailable(err)
			}
			if try > 0 {
				err = fmt.Errorf("after %d attempts: %w", try+1, err)
			}
			return Response{}, err
		}
		if err := sleep(ctx, p.delay(try)); err != nil {
			return Response{}, fmt.Errorf("waiting to retry after HTTP %d: %w", status, err)
		}
	}
}

func (p callPolicy) once(ctx context.Context, call func(context.Context) (Response, error)) (Response, error) {
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	resp, err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return Response{}, fmt.Errorf("%w: no answer within %s (raise the llm timeout for slow models): %w", ErrTimeout, p.timeout, context.DeadlineExceeded)
	}
	return resp, err
}

// unreachable reports a failure to reach the provider at all (refused,
// reset, no route, DNS).
func unreachable(err error) bool {
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	return errors.As(err, &ue) || errors.As(err, &oe) || errors.As(err, &ne)
}

func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 && status <= 599
}

// delay is backoff·2^try, ±20% jitter so parallel calls hitting a rate limit
// together do not retry together, capped at maxRetryBackoff.
func (p callPolicy) delay(try int) time.Duration {
	d := min(p.backoff<<min(try, 16), maxRetryBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// describeStatus says what an HTTP status from a provider means for the
// user.
func describeStatus(status int) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf("refused with HTTP %d; check the llm apiKey", status)
	case status == http.StatusNotFound:
		return "HTTP 404; check the llm model name and baseURL"
	case status == http.StatusTooManyRequests:
		return "rate limited (HTTP 429); retry later or check the account's quota"
	case status >= 500:
		return fmt.Sprintf("failed with HTTP %d on the provider's side; retry later", status)
	case status != 0:
		return fmt.Sprintf("rejected with HTTP %d", status)
	}
	return "failed"
}
