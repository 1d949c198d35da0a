// Package embed turns text into vectors for clawmem's vector index.
//
// Two providers exist:
//
//   - "openai": any OpenAI-compatible /v1/embeddings endpoint (OpenAI, Jina,
//     Ollama, vLLM, LM Studio, ...), with batching, an LRU+TTL cache and
//     strict checks on what the endpoint returns.
//
//   - "local": an offline, deterministic feature-hashing embedder.
//
// THE LOCAL EMBEDDER IS LEXICAL, NOT SEMANTIC. It matches shared words,
// shared word pairs and shared spellings (character n-grams); it knows
// nothing about meaning. "car" and "automobile" are unrelated to it, and so
// are "I love tea" and "我喜欢茶". It exists so clawmem works with no network
// and no API key, and for tests. Use a real embedding model for recall that
// understands paraphrases and other languages.
//
// Vectors from different models, or from one model at different dimensions,
// are not comparable: the store must be re-embedded when either changes. The
// local embedder's hashing scheme is part of its "model" in the same sense.
package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/lrucache"
)

// Embedder turns text into vectors of a fixed dimension.
//
// Queries and passages are embedded separately because task-aware models
// (e.g. Jina v5) place them in different regions on purpose; a symmetric
// model simply receives no task hint.
type Embedder interface {
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
	EmbedPassage(ctx context.Context, text string) ([]float32, error)
	// EmbedPassages returns one vector per text, in input order.
	EmbedPassages(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
	Model() string
	// Test embeds the word "test" and reports whether that worked, so health
	// checks can tell a misconfigured endpoint from an empty store.
	Test(ctx context.Context) TestResult
}

// TestResult is the outcome of Embedder.Test.
type TestResult struct {
	Success    bool   `json:"success"`
	Dimensions int    `json:"dimensions"`
	Error      string `json:"error,omitempty"`
}

// CacheStats describes an embedder's vector cache.
type CacheStats = lrucache.Stats

// StatsProvider is implemented by embedders that cache vectors. The local
// embedder does not: computing its vectors is cheaper than hashing the cache
// key.
type StatsProvider interface {
	CacheStats() CacheStats
}

// ErrEmptyText is returned for empty or whitespace-only input, which every
// provider either rejects or embeds as noise. The capitalised wording is the
// seed plugin's, kept because clients match on it.
var ErrEmptyText = errors.New("Cannot embed empty text")

// ErrDimensionMismatch is wrapped when an endpoint returns vectors of a size
// other than the configured one; storing them would corrupt the index.
var ErrDimensionMismatch = errors.New("embedding dimension mismatch")

// Provider names accepted in Config.Provider.
const (
	ProviderOpenAI = "openai"
	ProviderLocal  = "local"
)

// Config selects and tunes an embedder. Zero values mean "use the default".
type Config struct {
	// Provider is "openai" (any OpenAI-compatible endpoint) or "local".
	// Empty means openai when APIKey or BaseURL is set, else local.
	Provider string
	// APIKey may hold ${ENV} references. Empty falls back to $OPENAI_API_KEY
	// for provider openai; it may stay empty for a custom BaseURL, since
	// local servers such as Ollama need no key.
	APIKey string
	// BaseURL may hold ${ENV} references. Default https://api.openai.com/v1.
	BaseURL string
	// Model defaults to text-embedding-3-small (openai) or local-lexical.
	Model string
	// Dimensions, when > 0, is sent to the API as `dimensions` and is the
	// size every returned vector must have; it overrides KnownDimensions.
	// For the local provider it is the number of hash buckets (default 384).
	Dimensions int
	// TaskQuery is sent as the body field `task` with query embeddings.
	TaskQuery string
	// TaskPassage is sent as the body field `task` with passage embeddings.
	TaskPassage string
	// Normalized is sent as the body field `normalized` when non-nil.
	Normalized *bool
	// Timeout bounds each API call (one batch). Default 30s.
	Timeout time.Duration
	// BatchSize caps the inputs per API call. Default 64.
	BatchSize int
	// CacheSize is the number of cached vectors. Default 256.
	CacheSize int
	// CacheTTL is how long a cached vector is served. Default 30 minutes.
	CacheTTL time.Duration
}

const (
	defaultBaseURL     = "https://api.openai.com/v1"
	defaultModel       = "text-embedding-3-small"
	defaultTimeout     = 30 * time.Second
	defaultBatchSize   = 64
	defaultCacheSize   = 256
	defaultCacheTTL    = 30 * time.Minute
	defaultLocalDims   = 384
	localModelName     = "local-lexical"
	openAIKeyEnv       = "OPENAI_API_KEY"
	configDimsKey      = "embedding.dimensions"
	maxLocalDimensions = 1 << 16
)

var knownDimensions = map[string]int{
	"text-embedding-3-small":        1536,
	"text-embedding-3-large":        3072,
	"text-embedding-004":            768,
	"gemini-embedding-001":          3072,
	"nomic-embed-text":              768,
	"mxbai-embed-large":             1024,
	"BAAI/bge-m3":                   1024,
	"all-MiniLM-L6-v2":              384,
	"all-mpnet-base-v2":             768,
	"jina-embeddings-v5-text-small": 1024,
	"jina-embeddings-v5-text-nano":  768,
}

// KnownDimensions reports the native output size of a well-known model.
func KnownDimensions(model string) (int, bool) {
	d, ok := knownDimensions[model]
	return d, ok
}

// New builds the embedder cfg describes. Configuration mistakes (unknown
// model, unset ${ENV} variable, missing key) fail here rather than on the
// first embedding.
func New(cfg Config) (Embedder, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	provider := strings.ToLower(strings.TrimSpace(cfg.Provider))
	if provider == "" {
		provider = ProviderLocal
		if cfg.APIKey != "" || cfg.BaseURL != "" {
			provider = ProviderOpenAI
		}
	}
	switch provider {
	case ProviderLocal:
		return newLocalFromConfig(cfg)
	case ProviderOpenAI:
		return newRemoteFromConfig(cfg)
	default:
		return nil, fmt.Errorf("embedding: unknown provider %q (want %q or %q)", cfg.Provider, ProviderOpenAI, ProviderLocal)
	}
}

func validateConfig(cfg Config) error {
	switch {
	case cfg.Dimensions < 0:
		return fmt.Errorf("embedding: %s must not be negative, got %d", configDimsKey, cfg.Dimensions)
	case cfg.Timeout < 0:
		return fmt.Errorf("embedding: timeout must not be negative, got %s", cfg.Timeout)
	case cfg.BatchSize < 0:
		return fmt.Errorf("embedding: batch size must not be negative, got %d", cfg.BatchSize)
	case cfg.CacheSize < 0:
		return fmt.Errorf("embedding: cache size must not be negative, got %d", cfg.CacheSize)
	case cfg.CacheTTL < 0:
		return fmt.Errorf("embedding: cache TTL must not be negative, got %s", cfg.CacheTTL)
	}
	return nil
}

func newLocalFromConfig(cfg Config) (Embedder, error) {
	if cfg.Model != "" && cfg.Model != localModelName {
		return nil, fmt.Errorf("embedding: provider local only offers model %q, got %q (set provider to openai to use a remote model)", localModelName, cfg.Model)
	}
	dims := cfg.Dimensions
	if dims == 0 {
		dims = defaultLocalDims
	}
	if dims > maxLocalDimensions {
		return nil, fmt.Errorf("embedding: local %s must be at most %d, got %d", configDimsKey, maxLocalDimensions, dims)
	}
	return newLocal(dims), nil
}

func newRemoteFromConfig(cfg Config) (Embedder, error) {
	apiKey, err := envsubst.Expand(cfg.APIKey)
	if err != nil {
		return nil, fmt.Errorf("embedding: apiKey: %w", err)
	}
	baseURL, err := envsubst.Expand(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("embedding: baseURL: %w", err)
	}
	if baseURL == "" {
		baseURL = defaultBaseURL
	}
	if err := checkBaseURL(baseURL); err != nil {
		return nil, err
	}
	if apiKey == "" {
		apiKey = os.Getenv(openAIKeyEnv)
	}
	if apiKey == "" && baseURL == defaultBaseURL {
		return nil, fmt.Errorf("embedding: no API key for %s: set embedding.apiKey (e.g. \"${%s}\") or the %s environment variable", baseURL, openAIKeyEnv, openAIKeyEnv)
	}

	model := cfg.Model
	if model == "" {
		model = defaultModel
	}
	dims := cfg.Dimensions
	if dims == 0 {
		known, ok := KnownDimensions(model)
		if !ok {
			return nil, fmt.Errorf("embedding: unknown vector size for model %q: set %s to the size of the vectors it returns", model, configDimsKey)
		}
		dims = known
	}

	return newRemote(remoteConfig{
		apiKey:      apiKey,
		baseURL:     baseURL,
		model:       model,
		dims:        dims,
		sendDims:    cfg.Dimensions > 0,
		taskQuery:   cfg.TaskQuery,
		taskPassage: cfg.TaskPassage,
		normalized:  cfg.Normalized,
		timeout:     orDefault(cfg.Timeout, defaultTimeout),
		batchSize:   orDefault(cfg.BatchSize, defaultBatchSize),
		cacheSize:   orDefault(cfg.CacheSize, defaultCacheSize),
		cacheTTL:    orDefault(cfg.CacheTTL, defaultCacheTTL),
	}), nil
}

// checkBaseURL catches values that would otherwise fail on every request
// with an opaque transport error, typically a ${VAR} holding the wrong thing.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("embedding: baseURL %q is not a valid URL: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("embedding: baseURL %q must be an http(s) URL such as %s", raw, defaultBaseURL)
	}
	return nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func isBlank(text string) bool {
	return strings.TrimSpace(text) == ""
}

// checkVector rejects vectors that would poison similarity search: a wrong
// length breaks the index, and a NaN or Inf makes every distance NaN.
func checkVector(vec []float32, dims int, model string) error {
	if len(vec) != dims {
		return fmt.Errorf("%w: model %q returned %d dimensions, expected %d (set %s to match the model, or fix the model name)",
			ErrDimensionMismatch, model, len(vec), dims, configDimsKey)
	}
	for i, v := range vec {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("model %q returned a non-finite value (%v) at position %d", model, v, i)
		}
	}
	return nil
}
