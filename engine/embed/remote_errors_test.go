package embed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

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
