package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/clawmem/clawmem/schemas"
)

type remoteConfig struct {
	apiKey, baseURL, model string
	dims                   int
	// sendDims is set only when the user configured dimensions: models
	// without Matryoshka support reject the field.
	sendDims               bool
	taskQuery, taskPassage string
	normalized             *bool
	timeout                time.Duration
	batchSize, cacheSize   int
	cacheTTL               time.Duration
}

// remote embeds through an OpenAI-compatible /v1/embeddings endpoint.
type remote struct {
	cfg    remoteConfig
	client *openai.Client
	cache  *vectorCache
}

func newRemote(cfg remoteConfig) *remote {
	cc := openai.DefaultConfig(cfg.apiKey)
	cc.BaseURL = cfg.baseURL
	return &remote{
		cfg:    cfg,
		client: openai.NewClientWithConfig(cc),
		cache:  newVectorCache(cfg.cacheSize, cfg.cacheTTL),
	}
}

func (r *remote) Dimensions() int { return r.cfg.dims }

func (r *remote) Model() string { return r.cfg.model }

func (r *remote) CacheStats() CacheStats { return r.cache.stats() }

func (r *remote) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	return r.embedOne(ctx, text, r.cfg.taskQuery)
}

func (r *remote) EmbedPassage(ctx context.Context, text string) ([]float32, error) {
	return r.embedOne(ctx, text, r.cfg.taskPassage)
}

func (r *remote) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	for i, text := range texts {
		if isBlank(text) {
			return nil, fmt.Errorf("passage %d of %d: %w", i, len(texts), ErrEmptyText)
		}
	}
	return r.embedCached(ctx, texts, r.cfg.taskPassage)
}

// Test bypasses the cache: a cached "test" vector would report a healthy
// endpoint that may since have gone away.
func (r *remote) Test(ctx context.Context) TestResult {
	vecs, err := r.call(ctx, []string{"test"}, r.cfg.taskPassage)
	if err != nil {
		return TestResult{Error: err.Error()}
	}
	return TestResult{Success: true, Dimensions: len(vecs[0])}
}

func (r *remote) embedOne(ctx context.Context, text, task string) ([]float32, error) {
	if isBlank(text) {
		return nil, ErrEmptyText
	}
	vecs, err := r.embedCached(ctx, []string{text}, task)
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// embedCached serves what it can from the cache and sends only the distinct
// misses to the API, BatchSize at a time.
func (r *remote) embedCached(ctx context.Context, texts []string, task string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	waiting := make(map[string][]int) // cache key -> positions in out
	var missTexts, missKeys []string
	for i, text := range texts {
		key := cacheKey(task, text)
		if vec, ok := r.cache.get(key); ok {
			out[i] = vec
			continue
		}
		if _, queued := waiting[key]; !queued {
			missTexts = append(missTexts, text)
			missKeys = append(missKeys, key)
		}
		waiting[key] = append(waiting[key], i)
	}

	for start := 0; start < len(missTexts); start += r.cfg.batchSize {
		end := min(start+r.cfg.batchSize, len(missTexts))
		vecs, err := r.call(ctx, missTexts[start:end], task)
		if err != nil {
			if len(missTexts) > end-start {
				return nil, fmt.Errorf("embedding uncached texts %d-%d of %d: %w", start+1, end, len(missTexts), err)
			}
			return nil, err
		}
		for j, vec := range vecs {
			key := missKeys[start+j]
			r.cache.add(key, vec)
			for n, pos := range waiting[key] {
				if n > 0 {
					vec = slices.Clone(vec)
				}
				out[pos] = vec
			}
		}
	}
	return out, nil
}

// call performs one API request and returns the vectors in input order. The
// timeout bounds each request rather than the whole of EmbedPassages, so a
// large backfill is not cut short just for having many batches.
func (r *remote) call(ctx context.Context, inputs []string, task string) ([][]float32, error) {
	// A provider's passing failure (a 5xx, a 429, a refused connection, a
	// garbled reply) is tried again twice at once, so a provider failing
	// one request in two costs little; a timeout is not (it would wait
	// as long again).
	for try := 0; ; try++ {
		vecs, err := r.callOnce(ctx, inputs, task)
		if err == nil || try == len(retryDelays) || !errors.Is(err, schemas.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
			return vecs, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(retryDelays[try]):
		}
	}
}

// retryDelays are the waits before call's second and third tries.
var retryDelays = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond}

func (r *remote) callOnce(ctx context.Context, inputs []string, task string) ([][]float32, error) {
	callCtx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	resp, err := r.client.CreateEmbeddings(callCtx, r.request(inputs, task))
	if err != nil {
		return nil, r.describe(ctx, err)
	}
	return r.ordered(resp, len(inputs))
}

// request builds the body. `task` and `normalized` are not part of OpenAI's
// schema; go-openai merges ExtraBody into the top level of the JSON body for
// embeddings, which is where Jina and other providers expect them.
func (r *remote) request(inputs []string, task string) openai.EmbeddingRequestStrings {
	req := openai.EmbeddingRequestStrings{
		Input:          inputs,
		Model:          openai.EmbeddingModel(r.cfg.model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat,
	}
	if r.cfg.sendDims {
		req.Dimensions = r.cfg.dims
	}
	extra := make(map[string]any, 2)
	if task != "" {
		extra["task"] = task
	}
	if r.cfg.normalized != nil {
		extra["normalized"] = *r.cfg.normalized
	}
	if len(extra) > 0 {
		req.ExtraBody = extra
	}
	return req
}

// ordered places each vector by its `index` field: the API does not promise
// to answer in input order, and some proxies do not.
func (r *remote) ordered(resp openai.EmbeddingResponse, n int) ([][]float32, error) {
	if len(resp.Data) != n {
		return nil, schemas.Unavailable(fmt.Errorf("embedding endpoint %s returned %d vectors for %d inputs", r.cfg.baseURL, len(resp.Data), n))
	}
	out := make([][]float32, n)
	for _, item := range resp.Data {
		if item.Index < 0 || item.Index >= n {
			return nil, schemas.Unavailable(fmt.Errorf("embedding endpoint %s returned index %d for a batch of %d inputs", r.cfg.baseURL, item.Index, n))
		}
		if out[item.Index] != nil {
			return nil, schemas.Unavailable(fmt.Errorf("embedding endpoint %s returned index %d twice", r.cfg.baseURL, item.Index))
		}
		if err := checkVector(item.Embedding, r.cfg.dims, r.cfg.model); err != nil {
			return nil, schemas.Unavailable(err)
		}
		out[item.Index] = item.Embedding
	}
	return out, nil
}

// describe turns a go-openai error into one that says what to check. ctx is
// the caller's context, to tell its cancellation apart from our timeout.
func (r *remote) describe(ctx context.Context, err error) error {
	where := fmt.Sprintf("embedding request to %s (model %q)", r.cfg.baseURL, r.cfg.model)
	status := 0
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	var urlErr *url.Error
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("%s was refused with HTTP %d; check embedding.apiKey: %w", where, status, err)
	case status == http.StatusNotFound:
		return fmt.Errorf("%s failed with HTTP 404; check embedding.baseURL (usually ending in /v1) and embedding.model: %w", where, err)
	case status == http.StatusTooManyRequests:
		return fmt.Errorf("%s was rate limited (HTTP 429); retry later or check the account's quota: %w", where, schemas.Unavailable(err))
	case status >= 500:
		return fmt.Errorf("%s failed with HTTP %d on the provider's side; retry later: %w", where, status, schemas.Unavailable(err))
	case status != 0:
		return fmt.Errorf("%s was rejected with HTTP %d; check embedding.model, embedding.dimensions and the task settings: %w", where, status, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s abandoned: %w", where, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s timed out after %s; check that embedding.baseURL is reachable and responsive: %w", where, r.cfg.timeout, schemas.Unavailable(err))
	case errors.As(err, &urlErr):
		return fmt.Errorf("%s could not reach the server; check embedding.baseURL: %w", where, schemas.Unavailable(err))
	default:
		return fmt.Errorf("%s got an unreadable reply; check that embedding.baseURL is an OpenAI-compatible endpoint: %w", where, schemas.Unavailable(err))
	}
}
