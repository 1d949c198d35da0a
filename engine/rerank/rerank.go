// Package rerank scores retrieval candidates with a hosted cross-encoder and
// blends those scores into the fused retrieval score. The network clients
// speak six providers' wire formats; the blending maths (Blend, Fallback,
// Lightweight) is kept as pure functions so the pipeline can apply it without
// a network and tests can pin the numbers.
package rerank

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Provider names a rerank API wire format.
type Provider string

// The supported providers, in the order error messages list them.
const (
	Jina        Provider = "jina"
	SiliconFlow Provider = "siliconflow"
	Voyage      Provider = "voyage"
	Pinecone    Provider = "pinecone"
	DashScope   Provider = "dashscope"
	TEI         Provider = "tei"
)

// Config selects and configures a provider. Zero fields take the provider's
// defaults.
type Config struct {
	Provider Provider // default Jina
	Endpoint string   // full URL; every provider but TEI has a default
	// APIKey must already be ${ENV}-expanded; an unexpanded reference is
	// rejected rather than sent, since the plugin silently sent it verbatim.
	// Required for every provider but TEI.
	APIKey     string
	Model      string        // TEI serves one model and ignores it
	Timeout    time.Duration // whole call, reply body included; default 5s
	HTTPClient *http.Client  // default: a plain client; the timeout comes from the context
}

// Score is a reranker's relevance score for documents[Index].
type Score struct {
	Index int
	Score float64
}

// Reranker scores documents against a query.
type Reranker interface {
	// Rerank returns at most topN scores (all documents when topN <= 0),
	// best first, each Index valid and distinct. Documents the provider left
	// out are simply absent. No documents means no call and a nil result.
	Rerank(ctx context.Context, query string, documents []string, topN int) ([]Score, error)
}

const (
	defaultTimeout = 5 * time.Second
	// maxReplyBytes bounds what a misbehaving endpoint can make us buffer;
	// real replies for a candidate pool of tens of documents are a few KB.
	maxReplyBytes = 4 << 20
	// snippetBytes is how much of an error reply goes into the error text:
	// enough for a provider's message, not enough to flood a log line.
	snippetBytes = 200
)

var providers = []Provider{Jina, SiliconFlow, Voyage, Pinecone, DashScope, TEI}

type client struct {
	provider Provider
	wire     wire
	endpoint string
	apiKey   string
	model    string
	timeout  time.Duration
	http     *http.Client
}

// New validates cfg and returns a client for its provider.
func New(cfg Config) (Reranker, error) {
	p := Provider(strings.ToLower(strings.TrimSpace(string(cfg.Provider))))
	if p == "" {
		p = Jina
	}
	w, ok := wires[p]
	if !ok {
		names := make([]string, len(providers))
		for i, v := range providers {
			names[i] = string(v)
		}
		return nil, fmt.Errorf("rerank: unknown provider %q (valid: %s)", cfg.Provider, strings.Join(names, ", "))
	}
	c := &client{
		provider: p,
		wire:     w,
		endpoint: strings.TrimSpace(cfg.Endpoint),
		// Keys read from files or env often carry a trailing newline, which
		// would otherwise surface as an opaque 401.
		apiKey:  strings.TrimSpace(cfg.APIKey),
		model:   strings.TrimSpace(cfg.Model),
		timeout: cfg.Timeout,
		http:    cfg.HTTPClient,
	}
	if c.endpoint == "" {
		c.endpoint = w.endpoint
	}
	if c.endpoint == "" {
		return nil, fmt.Errorf("rerank %s: an endpoint is required (e.g. http://localhost:8080/rerank)", p)
	}
	u, err := url.Parse(c.endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("rerank %s: endpoint %q is not an http(s) URL", p, c.endpoint)
	}
	if c.apiKey == "" && !w.keyOptional {
		return nil, fmt.Errorf("rerank %s: an API key is required", p)
	}
	if strings.Contains(c.apiKey, "${") {
		return nil, fmt.Errorf("rerank %s: API key looks like an unexpanded ${VAR} reference", p)
	}
	if c.model == "" {
		c.model = w.model
	}
	if c.timeout <= 0 {
		c.timeout = defaultTimeout
	}
	if c.http == nil {
		c.http = &http.Client{}
	}
	return c, nil
}

func (c *client) Rerank(ctx context.Context, query string, documents []string, topN int) ([]Score, error) {
	if len(documents) == 0 {
		return nil, nil
	}
	if topN <= 0 || topN > len(documents) {
		topN = len(documents)
	}
	scores, err := c.call(ctx, query, documents, topN)
	if err != nil {
		return nil, fmt.Errorf("rerank %s: %w", c.provider, err)
	}
	return scores, nil
}

func (c *client) call(ctx context.Context, query string, documents []string, topN int) ([]Score, error) {
	// The deadline covers reading the body too, so a server that sends
	// headers and then stalls cannot hold the caller past the timeout.
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	body, err := json.Marshal(c.wire.request(c.model, query, documents, topN))
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	c.wire.headers(req.Header, c.apiKey)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading reply (status %d): %w", resp.StatusCode, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, snippet(data))
	}
	if len(data) > maxReplyBytes {
		return nil, fmt.Errorf("reply larger than %d bytes", maxReplyBytes)
	}
	return parseResponse(c.wire, data, len(documents), topN)
}

// parseResponse decodes a provider reply and keeps only scores that can be
// trusted to point at a document.
func parseResponse(w wire, data []byte, n, topN int) ([]Score, error) {
	items, err := w.parse(data)
	if err != nil {
		return nil, fmt.Errorf("decoding reply: %w", err)
	}
	return usable(items, n, topN)
}

// usable drops entries with a missing, fractional, out-of-range or repeated
// index or a missing or non-finite score, then orders best first and cuts to
// topN. Some providers (TEI) ignore top_n, so the cut is done here for all.
func usable(items []item, n, topN int) ([]Score, error) {
	seen := make(map[int]bool, len(items))
	out := make([]Score, 0, min(len(items), n))
	for _, it := range items {
		if it.Index == nil || it.Score == nil {
			continue
		}
		f, s := *it.Index, *it.Score
		if !(f >= 0 && f < float64(n)) || f != math.Trunc(f) || math.IsNaN(s) || math.IsInf(s, 0) {
			continue
		}
		i := int(f)
		if seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, Score{Index: i, Score: s})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no usable scores in reply (%d entries for %d documents)", len(items), n)
	}
	slices.SortStableFunc(out, func(a, b Score) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Index, b.Index)
	})
	return out[:min(len(out), topN)], nil
}

// snippet renders the start of an error reply on one line.
func snippet(data []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(data), "?")), " ")
	if len(s) <= snippetBytes {
		if s == "" {
			return "(empty body)"
		}
		return s
	}
	cut := snippetBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
