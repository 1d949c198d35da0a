package embed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/schemas"
)

const (
	testKeyEnv  = "CLAWMEM_TEST_EMBED_KEY"
	testKey     = "sk-test-not-a-real-key"
	testURLEnv  = "CLAWMEM_TEST_EMBED_URL"
	testModel   = "jina-embeddings-v5-text-nano" // 768 in the known table
	testDims    = 768
	embedPath   = "/v1/embeddings"
	maxTestBody = 1 << 20
)

// sentRequest is what the fake server saw.
type sentRequest struct {
	Path   string
	Auth   string
	Fields map[string]json.RawMessage
	Input  []string
}

func (s sentRequest) field(t *testing.T, name string, into any) bool {
	t.Helper()
	raw, ok := s.Fields[name]
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("field %s = %s: %v", name, raw, err)
	}
	return true
}

func (s sentRequest) keys() []string {
	keys := make([]string, 0, len(s.Fields))
	for k := range s.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fakeAPI speaks the /v1/embeddings wire format. By default it answers every
// input with fakeVector(input, dims); the reply hook lets a test break that.
type fakeAPI struct {
	t    *testing.T
	srv  *httptest.Server
	dims int
	// reply, when set, writes the response instead of the default.
	reply func(w http.ResponseWriter, r *http.Request, req sentRequest)

	mu   sync.Mutex
	sent []sentRequest
}

func newFakeAPI(t *testing.T, dims int) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, dims: dims}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxTestBody))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := sentRequest{Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
	if err := json.Unmarshal(body, &req.Fields); err != nil {
		f.t.Errorf("client sent invalid JSON %q: %v", body, err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if err := json.Unmarshal(req.Fields["input"], &req.Input); err != nil {
		f.t.Errorf("input is not a list of strings: %s", req.Fields["input"])
	}
	f.mu.Lock()
	f.sent = append(f.sent, req)
	f.mu.Unlock()

	if f.reply != nil {
		f.reply(w, r, req)
		return
	}
	writeEmbeddings(w, req, f.dims, false)
}

func (f *fakeAPI) requests() []sentRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

func (f *fakeAPI) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sent)
}

func (f *fakeAPI) baseURL() string { return f.srv.URL + "/v1" }

type wireEmbedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float32 `json:"embedding"`
}

type wireReply struct {
	Object string          `json:"object"`
	Data   []wireEmbedding `json:"data"`
	Model  string          `json:"model"`
	Usage  map[string]int  `json:"usage"`
}

func writeEmbeddings(w http.ResponseWriter, req sentRequest, dims int, reversed bool) {
	var model string
	_ = json.Unmarshal(req.Fields["model"], &model)
	reply := wireReply{Object: "list", Model: model, Usage: map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}}
	for i, text := range req.Input {
		reply.Data = append(reply.Data, wireEmbedding{Object: "embedding", Index: i, Embedding: fakeVector(text, dims)})
	}
	if reversed {
		slices.Reverse(reply.Data)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(reply)
}

// fakeVector is a deterministic stand-in for a model, distinct per text so
// tests can tell which input a vector belongs to.
func fakeVector(text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64()
	vec := make([]float32, dims)
	for i := range vec {
		seed = seed*6364136223846793005 + 1442695040888963407
		vec[i] = float32(int32(seed>>32)) / (1 << 31)
	}
	return vec
}

// remoteConfigFor points a config at f, with the key and URL supplied
// through ${VAR} references as a user would write them.
func remoteConfigFor(t *testing.T, f *fakeAPI) Config {
	t.Helper()
	t.Setenv(testKeyEnv, testKey)
	t.Setenv(testURLEnv, f.baseURL())
	return Config{
		Provider: ProviderOpenAI,
		APIKey:   "${" + testKeyEnv + "}",
		BaseURL:  "${" + testURLEnv + "}",
		Model:    testModel,
	}
}

func newTestRemote(t *testing.T, cfg Config) Embedder {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func TestRemoteWireFormat(t *testing.T) {
	tests := []struct {
		name        string
		cfg         func(*Config)
		wantDims    int  // expected vector size
		sendDims    bool // whether `dimensions` must be in the body
		queryTask   string
		passageTask string
		normalized  *bool
	}{
		{name: "minimal", wantDims: testDims},
		{
			name:     "explicit dimensions",
			cfg:      func(c *Config) { c.Dimensions = 256 },
			wantDims: 256, sendDims: true,
		},
		{
			name: "jina style tasks and normalized",
			cfg: func(c *Config) {
				c.TaskQuery, c.TaskPassage, c.Normalized = "retrieval.query", "retrieval.passage", ptr(true)
			},
			wantDims: testDims, queryTask: "retrieval.query", passageTask: "retrieval.passage", normalized: ptr(true),
		},
		{
			name:     "normalized false is still sent",
			cfg:      func(c *Config) { c.Normalized = ptr(false) },
			wantDims: testDims, normalized: ptr(false),
		},
		{
			name:     "passage task only",
			cfg:      func(c *Config) { c.TaskPassage = "retrieval.passage" },
			wantDims: testDims, passageTask: "retrieval.passage",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, tt.wantDims)
			cfg := remoteConfigFor(t, f)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			e := newTestRemote(t, cfg)
			ctx := context.Background()
			q, err := e.EmbedQuery(ctx, "what tea does the user like?")
			if err != nil {
				t.Fatalf("EmbedQuery: %v", err)
			}
			p, err := e.EmbedPassage(ctx, "the user likes oolong tea")
			if err != nil {
				t.Fatalf("EmbedPassage: %v", err)
			}
			if !slices.Equal(q, fakeVector("what tea does the user like?", tt.wantDims)) ||
				!slices.Equal(p, fakeVector("the user likes oolong tea", tt.wantDims)) {
				t.Fatal("vectors do not match the server's")
			}

			sent := f.requests()
			if len(sent) != 2 {
				t.Fatalf("server saw %d requests, want 2", len(sent))
			}
			for i, req := range sent {
				wantTask := []string{tt.queryTask, tt.passageTask}[i]
				checkWireRequest(t, req, wantTask, tt.normalized, tt.sendDims, tt.wantDims)
			}
		})
	}
}

func checkWireRequest(t *testing.T, req sentRequest, wantTask string, wantNormalized *bool, sendDims bool, dims int) {
	t.Helper()
	if req.Path != embedPath {
		t.Errorf("path = %q, want %q", req.Path, embedPath)
	}
	if req.Auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the key from $%s", req.Auth, testKeyEnv)
	}
	want := []string{"encoding_format", "input", "model"}
	if sendDims {
		want = append(want, "dimensions")
	}
	if wantTask != "" {
		want = append(want, "task")
	}
	if wantNormalized != nil {
		want = append(want, "normalized")
	}
	slices.Sort(want)
	if got := req.keys(); !slices.Equal(got, want) {
		t.Errorf("body fields = %v, want exactly %v (task/normalized must be top level, never under extra_body)", got, want)
	}
	var model, format, task string
	var gotDims int
	var normalized bool
	req.field(t, "model", &model)
	req.field(t, "encoding_format", &format)
	if model != testModel || format != "float" {
		t.Errorf("model %q encoding_format %q, want %q float", model, format, testModel)
	}
	if req.field(t, "dimensions", &gotDims) && gotDims != dims {
		t.Errorf("dimensions = %d, want %d", gotDims, dims)
	}
	if req.field(t, "task", &task) && task != wantTask {
		t.Errorf("task = %q, want %q", task, wantTask)
	}
	if req.field(t, "normalized", &normalized) && normalized != *wantNormalized {
		t.Errorf("normalized = %v, want %v", normalized, *wantNormalized)
	}
}

func TestRemoteExtraBodyIsTopLevel(t *testing.T) {
	f := newFakeAPI(t, testDims)
	var raw []byte
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		raw, _ = json.Marshal(req.Fields)
		writeEmbeddings(w, req, testDims, false)
	}
	cfg := remoteConfigFor(t, f)
	cfg.TaskQuery, cfg.Normalized = "retrieval.query", ptr(true)
	if _, err := newTestRemote(t, cfg).EmbedQuery(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	if body["task"] != "retrieval.query" || body["normalized"] != true {
		t.Fatalf("body %s lacks top-level task/normalized", raw)
	}
	if _, nested := body["extra_body"]; nested {
		t.Fatalf("body %s nests fields under extra_body", raw)
	}
}

func TestRemoteBatching(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.BatchSize = 3
	cfg.TaskPassage = "retrieval.passage"
	e := newTestRemote(t, cfg)

	texts := make([]string, 8)
	for i := range texts {
		texts[i] = fmt.Sprintf("memory number %d", i)
	}
	vecs, err := e.EmbedPassages(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
	sent := f.requests()
	var sizes []int
	var all []string
	for _, req := range sent {
		sizes = append(sizes, len(req.Input))
		all = append(all, req.Input...)
		checkWireRequest(t, req, "retrieval.passage", nil, false, testDims)
	}
	if !slices.Equal(sizes, []int{3, 3, 2}) || !slices.Equal(all, texts) {
		t.Fatalf("batches %v carrying %q, want [3 3 2] in input order", sizes, all)
	}
}

func TestRemoteBatchSendsOnlyDistinctMisses(t *testing.T) {
	f := newFakeAPI(t, testDims)
	e := newTestRemote(t, remoteConfigFor(t, f))
	ctx := context.Background()
	if _, err := e.EmbedPassage(ctx, "cached"); err != nil {
		t.Fatal(err)
	}
	texts := []string{"new one", "cached", "new two", "new one"}
	vecs, err := e.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
	sent := f.requests()
	if len(sent) != 2 || !slices.Equal(sent[1].Input, []string{"new one", "new two"}) {
		t.Fatalf("second request carried %q, want only the two distinct misses", sent[len(sent)-1].Input)
	}
	vecs[0][0] = 99
	if vecs[3][0] == 99 {
		t.Fatal("duplicate inputs must not share a backing array")
	}
}

func TestRemoteEmptyBatch(t *testing.T) {
	f := newFakeAPI(t, testDims)
	vecs, err := newTestRemote(t, remoteConfigFor(t, f)).EmbedPassages(context.Background(), nil)
	if err != nil || len(vecs) != 0 || f.count() != 0 {
		t.Fatalf("got %d vectors, err %v, %d requests; want none", len(vecs), err, f.count())
	}
}

func TestRemoteEmptyText(t *testing.T) {
	f := newFakeAPI(t, testDims)
	e := newTestRemote(t, remoteConfigFor(t, f))
	ctx := context.Background()
	if _, err := e.EmbedQuery(ctx, " \n"); !errors.Is(err, ErrEmptyText) || err.Error() != "Cannot embed empty text" {
		t.Errorf("EmbedQuery error = %v", err)
	}
	if _, err := e.EmbedPassage(ctx, ""); !errors.Is(err, ErrEmptyText) {
		t.Errorf("EmbedPassage error = %v", err)
	}
	if _, err := e.EmbedPassages(ctx, []string{"ok", "\t"}); !errors.Is(err, ErrEmptyText) || !strings.Contains(err.Error(), "passage 1") {
		t.Errorf("EmbedPassages error = %v, want ErrEmptyText naming passage 1", err)
	}
	if f.count() != 0 {
		t.Fatalf("empty text reached the server %d times", f.count())
	}
}

func TestRemoteCache(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	e := newTestRemote(t, cfg)
	stats := e.(StatsProvider)
	ctx := context.Background()

	first, err := e.EmbedQuery(ctx, "tea")
	if err != nil {
		t.Fatal(err)
	}
	first[0] = 123 // must not leak into the cache
	second, err := e.EmbedQuery(ctx, "tea")
	if err != nil {
		t.Fatal(err)
	}
	if f.count() != 1 {
		t.Fatalf("cache hit still called the server: %d requests", f.count())
	}
	if !slices.Equal(second, fakeVector("tea", testDims)) {
		t.Fatal("cached vector was modified through a returned slice")
	}
	// No tasks configured: a passage of the same text is the same request.
	if _, err := e.EmbedPassage(ctx, "tea"); err != nil {
		t.Fatal(err)
	}
	if f.count() != 1 {
		t.Fatalf("passage with the same (empty) task missed the cache: %d requests", f.count())
	}
	got := stats.CacheStats()
	if got.Size != 1 || got.Hits != 2 || got.Misses != 1 || got.HitRate < 0.66 || got.HitRate > 0.67 {
		t.Fatalf("CacheStats = %+v, want size 1, 2 hits, 1 miss", got)
	}
}

func TestRemoteCacheSeparatesTasks(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.TaskQuery, cfg.TaskPassage = "retrieval.query", "retrieval.passage"
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	for _, embed := range []func(context.Context, string) ([]float32, error){e.EmbedQuery, e.EmbedPassage, e.EmbedQuery, e.EmbedPassage} {
		if _, err := embed(ctx, "tea"); err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 2 {
		t.Fatalf("%d requests, want one per task", f.count())
	}
	if got := e.(StatsProvider).CacheStats(); got.Size != 2 || got.Hits != 2 {
		t.Fatalf("CacheStats = %+v, want 2 entries and 2 hits", got)
	}
}

func TestRemoteCacheTTL(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.CacheTTL = 50 * time.Millisecond
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	for range 2 {
		if _, err := e.EmbedQuery(ctx, "tea"); err != nil {
			t.Fatal(err)
		}
	}
	if f.count() != 1 {
		t.Fatalf("%d requests before expiry, want 1", f.count())
	}
	time.Sleep(150 * time.Millisecond)
	if _, err := e.EmbedQuery(ctx, "tea"); err != nil {
		t.Fatal(err)
	}
	if f.count() != 2 {
		t.Fatalf("%d requests after expiry, want 2", f.count())
	}
}

func TestRemoteCacheLRUEviction(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.CacheSize = 2
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	embed := func(text string) {
		t.Helper()
		if _, err := e.EmbedQuery(ctx, text); err != nil {
			t.Fatal(err)
		}
	}
	embed("a")
	embed("b")
	embed("a") // hit; b is now least recently used
	embed("c") // evicts b
	if f.count() != 3 {
		t.Fatalf("%d requests, want 3", f.count())
	}
	embed("a")
	if f.count() != 3 {
		t.Fatal("recently used entry was evicted")
	}
	embed("b")
	if f.count() != 4 {
		t.Fatal("least recently used entry was not evicted")
	}
	if got := e.(StatsProvider).CacheStats().Size; got != 2 {
		t.Fatalf("cache size %d, want 2", got)
	}
}

func TestRemoteRepliesOutOfOrder(t *testing.T) {
	f := newFakeAPI(t, testDims)
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		writeEmbeddings(w, req, testDims, true)
	}
	texts := []string{"first", "second", "third"}
	vecs, err := newTestRemote(t, remoteConfigFor(t, f)).EmbedPassages(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
			t.Errorf("vector %d is not %q's", i, text)
		}
	}
}

func TestRemoteBadReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply func(w http.ResponseWriter, req sentRequest)
		want  []string // substrings of the error
		is    error
	}{
		{
			name:  "wrong dimension",
			reply: func(w http.ResponseWriter, req sentRequest) { writeEmbeddings(w, req, 512, false) },
			want:  []string{"returned 512 dimensions", "expected 768", "embedding.dimensions"},
			is:    ErrDimensionMismatch,
		},
		{
			name: "too few vectors",
			reply: func(w http.ResponseWriter, req sentRequest) {
				req.Input = req.Input[:1]
				writeEmbeddings(w, req, testDims, false)
			},
			want: []string{"returned 1 vectors for 2 inputs"},
		},
		{
			name: "index out of range",
			reply: func(w http.ResponseWriter, req sentRequest) {
				writeJSON(w, wireReply{Object: "list", Data: []wireEmbedding{
					{Index: 0, Embedding: fakeVector("x", testDims)}, {Index: 7, Embedding: fakeVector("y", testDims)},
				}})
			},
			want: []string{"index 7"},
		},
		{
			name: "duplicate index",
			reply: func(w http.ResponseWriter, req sentRequest) {
				writeJSON(w, wireReply{Object: "list", Data: []wireEmbedding{
					{Index: 1, Embedding: fakeVector("x", testDims)}, {Index: 1, Embedding: fakeVector("y", testDims)},
				}})
			},
			want: []string{"index 1 twice"},
		},
		{
			name: "garbage JSON",
			reply: func(w http.ResponseWriter, req sentRequest) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"object":"list","data":[{"embedding":[0.1, oops`)
			},
			want: []string{"unreadable reply", "OpenAI-compatible"},
		},
		{
			name: "HTML instead of JSON",
			reply: func(w http.ResponseWriter, req sentRequest) {
				_, _ = io.WriteString(w, "<html>login page</html>")
			},
			want: []string{"unreadable reply"},
		},
		{
			name: "overflowing float",
			reply: func(w http.ResponseWriter, req sentRequest) {
				_, _ = io.WriteString(w, `{"object":"list","data":[{"index":0,"embedding":[1e39]},{"index":1,"embedding":[1]}]}`)
			},
			want: []string{"unreadable reply"},
		},
		{
			name: "server 500",
			reply: func(w http.ResponseWriter, req sentRequest) {
				http.Error(w, "upstream exploded", http.StatusInternalServerError)
			},
			want: []string{"HTTP 500", "upstream exploded", "model \"" + testModel + "\""},
		},
		{
			name: "OpenAI style 401",
			reply: func(w http.ResponseWriter, req sentRequest) {
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
			},
			want: []string{"HTTP 401", "embedding.apiKey", "Incorrect API key provided"},
		},
		{
			name: "404",
			reply: func(w http.ResponseWriter, req sentRequest) {
				http.NotFound(w, nil)
			},
			want: []string{"HTTP 404", "embedding.baseURL", "embedding.model"},
		},
		{
			name: "400",
			reply: func(w http.ResponseWriter, req sentRequest) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":{"message":"dimensions not supported","type":"invalid_request_error"}}`)
			},
			want: []string{"HTTP 400", "embedding.dimensions", "dimensions not supported"},
		},
		{
			name: "429",
			reply: func(w http.ResponseWriter, req sentRequest) {
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			},
			want: []string{"rate limited", "429"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t, testDims)
			f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) { tt.reply(w, req) }
			e := newTestRemote(t, remoteConfigFor(t, f))
			vecs, err := e.EmbedPassages(context.Background(), []string{"one", "two"})
			if err == nil {
				t.Fatalf("no error; got %d vectors", len(vecs))
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			// A provider that is down or answers garbage is a failure of
			// the moment (the pipeline waits it out); a refusal of the
			// request or the key is not.
			refused := tt.name == "OpenAI style 401" || tt.name == "404" || tt.name == "400"
			if errors.Is(err, schemas.ErrUnavailable) == refused {
				t.Errorf("error %v: unavailable %v, want %v", err, !refused, refused)
			}
			if got := e.(StatsProvider).CacheStats().Size; got != 0 {
				t.Errorf("a failed reply left %d cache entries", got)
			}
		})
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func TestRemoteTimeout(t *testing.T) {
	f := newFakeAPI(t, testDims)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	cfg := remoteConfigFor(t, f)
	cfg.Timeout = 100 * time.Millisecond
	e := newTestRemote(t, cfg)

	start := time.Now()
	_, err := e.EmbedQuery(context.Background(), "anyone there?")
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, schemas.ErrUnavailable) || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("error = %v, want a timeout after 100ms", err)
	}
	if elapsed > 5*time.Second {
		t.Fatalf("took %s despite a 100ms timeout", elapsed)
	}
}

func TestRemoteCallerCancellation(t *testing.T) {
	f := newFakeAPI(t, testDims)
	ctx, cancel := context.WithCancel(context.Background())
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		cancel()
		<-r.Context().Done()
	}
	_, err := newTestRemote(t, remoteConfigFor(t, f)).EmbedQuery(ctx, "hello")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "abandoned") {
		t.Fatalf("error = %v, want the caller's cancellation", err)
	}
}

func TestRemoteUnreachable(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	f.srv.Close()
	_, err := newTestRemote(t, cfg).EmbedQuery(context.Background(), "hello")
	if !errors.Is(err, schemas.ErrUnavailable) || !strings.Contains(err.Error(), "could not reach") {
		t.Fatalf("error = %v, want an unreachable-server error", err)
	}
}

func TestRemoteTest(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.TaskPassage = "retrieval.passage"
	e := newTestRemote(t, cfg)
	ctx := context.Background()
	for range 2 {
		if got := e.Test(ctx); got != (TestResult{Success: true, Dimensions: testDims}) {
			t.Fatalf("Test() = %+v", got)
		}
	}
	sent := f.requests()
	if len(sent) != 2 {
		t.Fatalf("Test() made %d requests over two calls, want 2 (no caching)", len(sent))
	}
	if !slices.Equal(sent[0].Input, []string{"test"}) {
		t.Fatalf("Test() embedded %q, want [test]", sent[0].Input)
	}
	checkWireRequest(t, sent[0], "retrieval.passage", nil, false, testDims)

	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) { writeEmbeddings(w, req, 3, false) }
	got := e.Test(ctx)
	if got.Success || got.Dimensions != 0 || !strings.Contains(got.Error, "returned 3 dimensions, expected 768") {
		t.Fatalf("Test() against a wrong-size model = %+v", got)
	}
}

func TestRemoteConcurrentUse(t *testing.T) {
	f := newFakeAPI(t, testDims)
	cfg := remoteConfigFor(t, f)
	cfg.BatchSize = 2
	e := newTestRemote(t, cfg)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			texts := []string{"shared", fmt.Sprintf("own %d", g), "shared too"}
			vecs, err := e.EmbedPassages(context.Background(), texts)
			if err != nil {
				t.Error(err)
				return
			}
			for i, text := range texts {
				if !slices.Equal(vecs[i], fakeVector(text, testDims)) {
					t.Errorf("goroutine %d: vector %d is not %q's", g, i, text)
				}
			}
		})
	}
	wg.Wait()
}

func TestRemoteAPIKeyFallsBackToOpenAIEnv(t *testing.T) {
	f := newFakeAPI(t, testDims)
	t.Setenv("OPENAI_API_KEY", "sk-from-openai-env")
	e := newTestRemote(t, Config{BaseURL: f.baseURL(), Model: testModel})
	if _, err := e.EmbedQuery(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Auth; got != "Bearer sk-from-openai-env" {
		t.Fatalf("Authorization = %q", got)
	}
}

func TestRemoteWithoutKeyForCustomEndpoint(t *testing.T) {
	f := newFakeAPI(t, testDims)
	t.Setenv("OPENAI_API_KEY", "")
	e := newTestRemote(t, Config{Provider: "openai", BaseURL: f.baseURL(), Model: testModel})
	if _, err := e.EmbedQuery(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	if got := f.requests()[0].Auth; got != "" {
		t.Fatalf("Authorization = %q, want none for a keyless local server", got)
	}
}

func TestNewRemoteConfigErrors(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CLAWMEM_TEST_UNSET", "")
	tests := []struct {
		name string
		cfg  Config
		want []string
		is   error
	}{
		{
			name: "unknown model",
			cfg:  Config{APIKey: "k", Model: "my-custom-embedder"},
			want: []string{`"my-custom-embedder"`, "set embedding.dimensions"},
		},
		{
			name: "unset key variable",
			cfg:  Config{APIKey: "${CLAWMEM_TEST_UNSET}"},
			want: []string{"apiKey", "environment variable CLAWMEM_TEST_UNSET is not set"},
			is:   envsubst.ErrUnset,
		},
		{
			name: "unset URL variable",
			cfg:  Config{APIKey: "k", BaseURL: "http://${CLAWMEM_TEST_UNSET}/v1"},
			want: []string{"baseURL", "CLAWMEM_TEST_UNSET"},
			is:   envsubst.ErrUnset,
		},
		{
			name: "no key for OpenAI",
			cfg:  Config{Provider: "openai"},
			want: []string{"no API key", "OPENAI_API_KEY"},
		},
		{
			name: "URL without scheme",
			cfg:  Config{APIKey: "k", BaseURL: "localhost:11434/v1"},
			want: []string{"http(s) URL"},
		},
		{
			name: "unknown provider",
			cfg:  Config{Provider: "cohere"},
			want: []string{`unknown provider "cohere"`},
		},
		{
			name: "negative dimensions",
			cfg:  Config{APIKey: "k", Dimensions: -1},
			want: []string{"embedding.dimensions must not be negative"},
		},
		{
			name: "negative timeout",
			cfg:  Config{APIKey: "k", Timeout: -time.Second},
			want: []string{"timeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.cfg)
			if err == nil {
				t.Fatalf("New succeeded with %T", e)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestNewRemoteDefaults(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-x")
	e := newTestRemote(t, Config{Provider: "OpenAI"})
	if e.Model() != "text-embedding-3-small" || e.Dimensions() != 1536 {
		t.Fatalf("defaults: model %q dims %d", e.Model(), e.Dimensions())
	}
	r := e.(*remote)
	if r.cfg.baseURL != defaultBaseURL || r.cfg.timeout != 30*time.Second || r.cfg.batchSize != 64 ||
		r.cfg.cacheSize != 256 || r.cfg.cacheTTL != 30*time.Minute || r.cfg.sendDims {
		t.Fatalf("defaults: %+v", r.cfg)
	}
	// An API key alone selects the openai provider.
	if _, ok := newTestRemote(t, Config{APIKey: "k"}).(*remote); !ok {
		t.Fatal("APIKey without provider did not select openai")
	}
	// Configured dimensions override the table.
	if got := newTestRemote(t, Config{APIKey: "k", Model: "text-embedding-3-large", Dimensions: 1024}).Dimensions(); got != 1024 {
		t.Fatalf("Dimensions = %d, want 1024", got)
	}
}

func TestKnownDimensions(t *testing.T) {
	want := map[string]int{
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
	for model, dims := range want {
		if got, ok := KnownDimensions(model); !ok || got != dims {
			t.Errorf("KnownDimensions(%q) = %d, %v; want %d", model, got, ok, dims)
		}
	}
	if len(knownDimensions) != len(want) {
		t.Errorf("table has %d models, want exactly %d", len(knownDimensions), len(want))
	}
	if _, ok := KnownDimensions("text-embedding-ada-002"); ok {
		t.Error("unexpected entry for text-embedding-ada-002")
	}
}

func TestCheckVectorRejectsNonFinite(t *testing.T) {
	nan := float32(0)
	nan /= nan
	inf := float32(1e38)
	inf *= 10
	for _, vec := range [][]float32{{0, nan}, {inf, 0}, {0, -inf}} {
		if err := checkVector(vec, 2, "m"); err == nil || !strings.Contains(err.Error(), "non-finite") {
			t.Errorf("checkVector(%v) = %v, want a non-finite error", vec, err)
		}
	}
	if err := checkVector([]float32{0.5, -0.5}, 2, "m"); err != nil {
		t.Errorf("finite vector rejected: %v", err)
	}
}

func TestCacheKey(t *testing.T) {
	k := cacheKey("retrieval.query", "tea")
	if len(k) != 24 || strings.Trim(k, "0123456789abcdef") != "" {
		t.Fatalf("cacheKey = %q, want 24 lower-case hex chars", k)
	}
	if k != cacheKeyReference("retrieval.query:tea") {
		t.Fatalf("cacheKey = %q, want %q", k, cacheKeyReference("retrieval.query:tea"))
	}
	if cacheKey("", "tea") == cacheKey("retrieval.passage", "tea") {
		t.Fatal("tasks must separate cache entries")
	}
}

// cacheKeyReference is the key definition written the obvious way.
func cacheKeyReference(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:24]
}

func TestRemoteFailedBatchKeepsEarlierBatches(t *testing.T) {
	f := newFakeAPI(t, testDims)
	var calls int
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		calls++                                        // requests are sequential
		if calls >= 2 && calls <= 2+len(retryDelays) { // the second batch, and each of its tries
			http.Error(w, "flaky", http.StatusBadGateway)
			return
		}
		writeEmbeddings(w, req, testDims, false)
	}
	cfg := remoteConfigFor(t, f)
	cfg.BatchSize = 2
	e := newTestRemote(t, cfg)
	texts := []string{"a", "b", "c", "d"}
	_, err := e.EmbedPassages(context.Background(), texts)
	if err == nil || !strings.Contains(err.Error(), "uncached texts 3-4 of 4") || !strings.Contains(err.Error(), "HTTP 502") {
		t.Fatalf("error = %v, want the failing batch and status named", err)
	}
	if _, err := e.EmbedPassages(context.Background(), texts); err != nil {
		t.Fatal(err)
	}
	sent := f.requests()
	if len(sent) != 3+len(retryDelays) || !slices.Equal(sent[len(sent)-1].Input, []string{"c", "d"}) {
		t.Fatalf("retry sent %q, want only the batch that failed", sent[len(sent)-1].Input)
	}
}

// A provider's passing failure (here a 503, then a garbled reply) is
// tried again at once; a refusal (400) is not.
func TestRemoteRetriesPassingFailures(t *testing.T) {
	f := newFakeAPI(t, testDims)
	var calls int
	f.reply = func(w http.ResponseWriter, r *http.Request, req sentRequest) {
		calls++
		switch calls {
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 2:
			io.WriteString(w, "{garbled")
		case 4:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"input too long"}}`)
		default:
			writeEmbeddings(w, req, testDims, false)
		}
	}
	e := newTestRemote(t, remoteConfigFor(t, f))
	if _, err := e.EmbedQuery(context.Background(), "first"); err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want success on the third", err, calls)
	}
	if _, err := e.EmbedQuery(context.Background(), "second"); err == nil || calls != 4 || errors.Is(err, schemas.ErrUnavailable) {
		t.Fatalf("err %v after %d calls, want the 400 at once, not marked unavailable", err, calls)
	}
}
