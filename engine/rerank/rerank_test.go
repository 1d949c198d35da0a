package rerank

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var testDocs = []string{"the user prefers tea", "unrelated note", "the user drinks coffee every morning"}

// wantTop2 is what every provider reply below decodes to with topN 2: the
// replies score document 2 highest, then document 0.
var wantTop2 = []Score{{Index: 2, Score: 0.91}, {Index: 0, Score: 0.35}}

// decodeBody reads the request JSON and fails unless its top-level keys are
// exactly want, so a provider getting top_n where it expects top_k is caught.
func decodeBody(t *testing.T, r *http.Request, want ...string) map[string]any {
	t.Helper()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatalf("reading request: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("request is not a JSON object: %v: %s", err, raw)
	}
	got := slices.Sorted(maps.Keys(body))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("request keys = %v, want %v (body %s)", got, want, raw)
	}
	return body
}

func wantField(t *testing.T, body map[string]any, key string, want any) {
	t.Helper()
	if got := body[key]; !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", key, got, want)
	}
}

func wantCommon(t *testing.T, r *http.Request, path string) {
	t.Helper()
	if r.Method != http.MethodPost {
		t.Errorf("method = %s, want POST", r.Method)
	}
	if r.URL.Path != path {
		t.Errorf("path = %s, want %s", r.URL.Path, path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func wantHeader(t *testing.T, r *http.Request, key, want string) {
	t.Helper()
	if got := r.Header.Get(key); got != want {
		t.Errorf("header %s = %q, want %q", key, got, want)
	}
}

var stringDocs = []any{testDocs[0], testDocs[1], testDocs[2]}

func TestProviderWireFormats(t *testing.T) {
	tests := []struct {
		provider Provider
		key      string
		path     string
		check    func(t *testing.T, r *http.Request)
		reply    string
	}{
		{
			provider: Jina, key: "jina-key", path: "/v1/rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Authorization", "Bearer jina-key")
				b := decodeBody(t, r, "model", "query", "documents", "top_n", "return_documents")
				wantField(t, b, "model", "jina-reranker-v3")
				wantField(t, b, "query", "coffee")
				wantField(t, b, "documents", stringDocs)
				wantField(t, b, "top_n", 2.0)
				wantField(t, b, "return_documents", false)
			},
			reply: `{"model":"jina-reranker-v3","usage":{"total_tokens":37},"results":[
				{"index":2,"relevance_score":0.91},{"index":0,"relevance_score":0.35}]}`,
		},
		{
			provider: SiliconFlow, key: "sf-key", path: "/v1/rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Authorization", "Bearer sf-key")
				b := decodeBody(t, r, "model", "query", "documents", "top_n", "return_documents")
				wantField(t, b, "model", "BAAI/bge-reranker-v2-m3")
				wantField(t, b, "documents", stringDocs)
				wantField(t, b, "top_n", 2.0)
			},
			reply: `{"id":"0192","results":[{"index":2,"relevance_score":0.91},
				{"index":0,"relevance_score":0.35}],"tokens":{"input_tokens":30,"output_tokens":0}}`,
		},
		{
			provider: Voyage, key: "pa-key", path: "/v1/rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Authorization", "Bearer pa-key")
				b := decodeBody(t, r, "model", "query", "documents", "top_k", "return_documents")
				wantField(t, b, "model", "rerank-2.5")
				wantField(t, b, "documents", stringDocs)
				wantField(t, b, "top_k", 2.0)
			},
			reply: `{"object":"list","data":[{"relevance_score":0.91,"index":2},
				{"relevance_score":0.35,"index":0}],"model":"rerank-2.5","usage":{"total_tokens":30}}`,
		},
		{
			provider: Pinecone, key: "pc-key", path: "/rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Api-Key", "pc-key")
				wantHeader(t, r, "X-Pinecone-API-Version", "2024-10")
				wantHeader(t, r, "Authorization", "")
				b := decodeBody(t, r, "model", "query", "documents", "top_n", "rank_fields", "return_documents")
				wantField(t, b, "model", "bge-reranker-v2-m3")
				wantField(t, b, "documents", []any{
					map[string]any{"text": testDocs[0]},
					map[string]any{"text": testDocs[1]},
					map[string]any{"text": testDocs[2]},
				})
				wantField(t, b, "top_n", 2.0)
				wantField(t, b, "rank_fields", []any{"text"})
			},
			reply: `{"model":"bge-reranker-v2-m3","data":[{"index":2,"score":0.91},
				{"index":0,"score":0.35}],"usage":{"rerank_units":1}}`,
		},
		{
			provider: DashScope, key: "sk-ds", path: "/api/v1/services/rerank/text-rerank/text-rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Authorization", "Bearer sk-ds")
				b := decodeBody(t, r, "model", "input", "parameters")
				wantField(t, b, "model", "gte-rerank-v2")
				wantField(t, b, "input", map[string]any{"query": "coffee", "documents": stringDocs})
				wantField(t, b, "parameters", map[string]any{"top_n": 2.0, "return_documents": false})
			},
			reply: `{"output":{"results":[{"index":2,"relevance_score":0.91},
				{"index":0,"relevance_score":0.35}]},"usage":{"total_tokens":79},"request_id":"8e2b"}`,
		},
		{
			provider: TEI, path: "/rerank",
			check: func(t *testing.T, r *http.Request) {
				if _, ok := r.Header["Authorization"]; ok {
					t.Error("keyless TEI request carries an Authorization header")
				}
				b := decodeBody(t, r, "query", "texts", "truncate")
				wantField(t, b, "query", "coffee")
				wantField(t, b, "texts", stringDocs)
			},
			// TEI ignores top_n and scores everything; the client cuts.
			reply: `[{"index":2,"score":0.91},{"index":0,"score":0.35},{"index":1,"score":0.02}]`,
		},
		{
			provider: TEI, key: "tei-key", path: "/rerank",
			check: func(t *testing.T, r *http.Request) {
				wantHeader(t, r, "Authorization", "Bearer tei-key")
				decodeBody(t, r, "query", "texts", "truncate")
			},
			reply: `[{"index":1,"score":0.02},{"index":0,"score":0.35},{"index":2,"score":0.91}]`,
		},
	}
	for _, tc := range tests {
		t.Run(string(tc.provider)+"/key="+tc.key, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				wantCommon(t, r, tc.path)
				tc.check(t, r)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tc.reply)
			}))
			defer srv.Close()
			rr, err := New(Config{Provider: tc.provider, Endpoint: srv.URL + tc.path, APIKey: tc.key})
			if err != nil {
				t.Fatal(err)
			}
			got, err := rr.Rerank(context.Background(), "coffee", testDocs, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantTop2) {
				t.Errorf("scores = %v, want %v", got, wantTop2)
			}
			if calls.Load() != 1 {
				t.Errorf("%d calls, want 1", calls.Load())
			}
		})
	}
}

func TestDefaultsAndModelOverride(t *testing.T) {
	for p, w := range wires {
		if p != TEI && (w.endpoint == "" || w.model == "") {
			t.Errorf("%s: missing default endpoint or model", p)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := decodeBody(t, r, "model", "query", "documents", "top_n", "return_documents")
		wantField(t, b, "model", "jina-reranker-v2-base-multilingual")
		wantField(t, b, "top_n", 3.0) // topN 0 means all documents
		io.WriteString(w, `{"results":[{"index":0,"relevance_score":0.5}]}`)
	}))
	defer srv.Close()
	rr, err := New(Config{Endpoint: srv.URL, APIKey: " key\n", Model: "jina-reranker-v2-base-multilingual"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Rerank(context.Background(), "q", testDocs, 0); err != nil {
		t.Fatal(err)
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // "" means New must succeed
	}{
		{"default provider is jina", Config{APIKey: "k"}, ""},
		{"provider is case-insensitive", Config{Provider: " Voyage ", APIKey: "k"}, ""},
		{"keyless tei", Config{Provider: TEI, Endpoint: "http://localhost:8080/rerank"}, ""},
		{"unknown provider lists valid ones", Config{Provider: "cohere", APIKey: "k"},
			`unknown provider "cohere" (valid: jina, siliconflow, voyage, pinecone, dashscope, tei)`},
		{"tei needs an endpoint", Config{Provider: TEI}, "endpoint is required"},
		{"missing key", Config{Provider: Pinecone}, "rerank pinecone: an API key is required"},
		{"blank key", Config{APIKey: "  "}, "API key is required"},
		{"unexpanded key", Config{APIKey: "${JINA_API_KEY}"}, "unexpanded"},
		{"relative endpoint", Config{APIKey: "k", Endpoint: "/v1/rerank"}, "not an http(s) URL"},
		{"wrong scheme", Config{APIKey: "k", Endpoint: "ftp://example.com/rerank"}, "not an http(s) URL"},
		{"unparsable endpoint", Config{APIKey: "k", Endpoint: "http://[::1"}, "not an http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func newJina(t *testing.T, h http.HandlerFunc, timeout time.Duration) (Reranker, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	rr, err := New(Config{Provider: Jina, Endpoint: srv.URL, APIKey: "k", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return rr, &calls
}

func TestEmptyDocumentsMakeNoCall(t *testing.T) {
	rr, calls := newJina(t, func(w http.ResponseWriter, r *http.Request) {}, 0)
	got, err := rr.Rerank(context.Background(), "q", nil, 5)
	if got != nil || err != nil || calls.Load() != 0 {
		t.Fatalf("got %v, %v after %d calls; want nil, nil, no call", got, err, calls.Load())
	}
}

func TestTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	stall := func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client hang-up only once the body is consumed;
		// the bound keeps the server's Close from waiting long if it does not.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"no headers", stall},
		{"headers then a stalled body", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"results":[`)
			w.(http.Flusher).Flush()
			stall(w, r)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rr, _ := newJina(t, tc.handler, timeout)
			start := time.Now()
			_, err := rr.Rerank(context.Background(), "q", testDocs, 2)
			elapsed := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error = %v, want a deadline error", err)
			}
			if !strings.Contains(err.Error(), "rerank jina") {
				t.Errorf("error %q does not name the provider", err)
			}
			if elapsed < timeout || elapsed > timeout+time.Second {
				t.Errorf("returned after %v, want about %v", elapsed, timeout)
			}
		})
	}
}

func TestCallerContextIsHonoured(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	rr, _ := newJina(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := rr.Rerank(ctx, "q", testDocs, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want the caller's deadline", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("took %v despite a 50ms caller deadline", elapsed)
	}
}

func TestBadReplies(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr []string
	}{
		{"server error", 500, `{"detail":"upstream overloaded"}`, []string{"rerank jina", "status 500", "upstream overloaded"}},
		{"rate limited, empty body", 429, ``, []string{"status 429", "(empty body)"}},
		{"long error body is cut", 502, strings.Repeat("gateway ", 1000), []string{"status 502", "…"}},
		{"garbage JSON", 200, `<html>not json</html>`, []string{"rerank jina", "decoding reply"}},
		{"truncated JSON", 200, `{"results":[{"index":0,`, []string{"decoding reply"}},
		{"wrong shape", 200, `{"results":{"index":0}}`, []string{"decoding reply"}},
		{"no results", 200, `{"results":[]}`, []string{"no usable scores"}},
		{"only unusable results", 200,
			`{"results":[{"index":3,"relevance_score":0.9},{"index":-1,"relevance_score":0.9},{"relevance_score":0.9}]}`,
			[]string{"no usable scores", "3 entries for 3 documents"}},
		{"oversized reply", 200, `{"results":[],"pad":"` + strings.Repeat("x", maxReplyBytes) + `"}`, []string{"larger than"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rr, _ := newJina(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}, 0)
			got, err := rr.Rerank(context.Background(), "q", testDocs, 2)
			if err == nil {
				t.Fatalf("no error; scores %v", got)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if len(err.Error()) > 400 {
				t.Errorf("error is %d bytes long", len(err.Error()))
			}
		})
	}
}

func TestInvalidEntriesAreDropped(t *testing.T) {
	rr, _ := newJina(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[
			{"index":7,"relevance_score":0.99},
			{"index":-1,"relevance_score":0.98},
			{"index":1.5,"relevance_score":0.97},
			{"relevance_score":0.96},
			{"index":2},
			{"index":2,"relevance_score":null},
			{"index":1,"relevance_score":0.4},
			{"index":1,"relevance_score":0.95},
			{"index":0.0,"relevance_score":0.1}]}`)
	}, 0)
	got, err := rr.Rerank(context.Background(), "q", testDocs, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []Score{{Index: 1, Score: 0.4}, {Index: 0, Score: 0.1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scores = %v, want %v", got, want)
	}
}

func TestUsable(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		items []item
		topN  int
		want  []Score
	}{
		{"non-finite scores dropped",
			[]item{{f(0), f(math.NaN())}, {f(1), f(math.Inf(1))}, {f(2), f(math.Inf(-1))}, {f(1), f(0.3)}},
			3, []Score{{1, 0.3}}},
		{"best first, ties by index, cut to topN",
			[]item{{f(2), f(0.5)}, {f(0), f(0.5)}, {f(1), f(0.9)}},
			2, []Score{{1, 0.9}, {0, 0.5}}},
		{"huge index dropped",
			[]item{{f(1e300), f(0.9)}, {f(0), f(-3.2)}},
			3, []Score{{0, -3.2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := usable(tc.items, 3, tc.topN)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzParseResponse(f *testing.F) {
	for _, seed := range []string{
		`{"results":[{"index":2,"relevance_score":0.91},{"index":0,"relevance_score":0.35}]}`,
		`{"data":[{"index":1,"relevance_score":0.5}]}`,
		`{"data":[{"index":1,"score":0.5}]}`,
		`{"output":{"results":[{"index":0,"relevance_score":1e308}]}}`,
		`[{"index":0,"score":0.1},{"index":0,"score":0.2},{"index":-0,"score":-1}]`,
		`[{"index":1e400,"score":0.1}]`,
		`null`, `[]`, `{}`, `{"results":null}`, `"x"`, ``,
	} {
		f.Add([]byte(seed), 3, 2)
	}
	f.Fuzz(func(t *testing.T, data []byte, n, topN int) {
		n, topN = n%64, topN%64
		if n <= 0 {
			n = 1
		}
		if topN <= 0 {
			topN = n
		}
		for p, w := range wires {
			got, err := parseResponse(w, data, n, topN)
			if err != nil {
				if got != nil {
					t.Fatalf("%s: scores %v alongside error %v", p, got, err)
				}
				continue
			}
			if len(got) == 0 || len(got) > topN {
				t.Fatalf("%s: %d scores for topN %d", p, len(got), topN)
			}
			seen := map[int]bool{}
			for i, s := range got {
				if s.Index < 0 || s.Index >= n || seen[s.Index] || math.IsNaN(s.Score) || math.IsInf(s.Score, 0) {
					t.Fatalf("%s: bad score %+v in %v", p, s, got)
				}
				if i > 0 && s.Score > got[i-1].Score {
					t.Fatalf("%s: not best first: %v", p, got)
				}
				seen[s.Index] = true
			}
		}
	})
}
