package embed

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
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
