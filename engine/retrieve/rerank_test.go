package retrieve

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/rerank"
)

// The cross-encoder reranking stage against a fake jina-format endpoint.

// rerankServer is a jina-format endpoint that checks the request (POST,
// bearer key, JSON body) and hands it to a per-test handler; calls counts
// requests and reqs keeps the decoded bodies.
type rerankServer struct {
	*httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	reqs  []jinaRequest
}

type jinaRequest struct {
	Model     string   `json:"model"`
	Query     string   `json:"query"`
	Documents []string `json:"documents"`
	TopN      int      `json:"top_n"`
}

func newRerankServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, req jinaRequest)) *rerankServer {
	t.Helper()
	rs := &rerankServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.calls.Add(1)
		var req jinaRequest
		if r.Method != http.MethodPost || r.Header.Get("Authorization") != "Bearer k" ||
			json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		rs.mu.Lock()
		rs.reqs = append(rs.reqs, req)
		rs.mu.Unlock()
		handle(w, r, req)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *rerankServer) client(t *testing.T) rerank.Reranker {
	t.Helper()
	c, err := rerank.New(rerank.Config{Provider: "jina", Endpoint: rs.URL, APIKey: "k", Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// scoreByText answers with a relevance per document text prefix; documents
// matching no prefix are left out of the reply.
func scoreByText(scores map[string]float64) func(http.ResponseWriter, *http.Request, jinaRequest) {
	return func(w http.ResponseWriter, _ *http.Request, req jinaRequest) {
		type result struct {
			Index int     `json:"index"`
			Score float64 `json:"relevance_score"`
		}
		var out struct {
			Results []result `json:"results"`
		}
		for i, d := range req.Documents {
			for prefix, s := range scores {
				if strings.HasPrefix(d, prefix) {
					out.Results = append(out.Results, result{i, s})
				}
			}
		}
		json.NewEncoder(w).Encode(out)
	}
}

// rerankMems are three vector-only hits (the query text shares no word with
// them) with fused scores 1/(2-cos): 0.909, 0.714, 0.588.
var rerankMems = []tm{
	{key: 1, text: "Alpha: the user is based in Lisbon", cos: 0.9},
	{key: 2, text: "Bravo: the user's manager is Dana", cos: 0.6},
	{key: 3, text: "Charlie: the user writes Go at work", cos: 0.3},
}

// noBoost turns off recency, so final scores stay below 1 and comparable,
// and the hard minimum, so every candidate's score can be checked.
func noBoost(c *Config) { c.RecencyWeight, c.HardMinScore = 0, 0 }

func TestCrossEncoderReorders(t *testing.T) {
	srv := newRerankServer(t, scoreByText(map[string]float64{"Alpha": 0.1, "Charlie": 1.0})) // Bravo left out
	s := seedStore(t, rerankMems...)
	cfg := cfgWith(RerankCrossEncoder, noBoost)
	res := retrieve(t, newRetriever(t, s, cfg, WithReranker(srv.client(t))), Query{Text: "home city", Limit: 10})
	if res.Rerank != RerankCrossEncoder {
		t.Fatalf("rerank %q, want cross-encoder", res.Rerank)
	}
	if n := srv.calls.Load(); n != 1 {
		t.Fatalf("%d rerank calls, want 1", n)
	}
	req := srv.reqs[0]
	if req.Query != "home city" || req.Model == "" || len(req.Documents) != 3 || req.TopN != 3 {
		t.Errorf("request %+v: want the query, a model, 3 documents, top_n 3", req)
	}
	// Documents go out best-fused first.
	if !strings.HasPrefix(req.Documents[0], "Alpha") || !strings.HasPrefix(req.Documents[2], "Charlie") {
		t.Errorf("documents %q not in fused order", req.Documents)
	}
	want := map[string]float64{
		idOf(1): 0.6*0.1 + 0.4/(2-0.9), // 0.424
		idOf(2): 0.8 / (2 - 0.6),       // left out: ×0.8 = 0.571
		idOf(3): 0.6*1.0 + 0.4/(2-0.3), // 0.835
	}
	for _, c := range res.Candidates {
		if math.Abs(c.Sources.Reranked-want[c.Memory.ID]) > scoreTol {
			t.Errorf("%s: reranked %v, want %v", c.Memory.Text, c.Sources.Reranked, want[c.Memory.ID])
		}
	}
	if ids := candIDs(res.Candidates); !slices.Equal(ids, []string{idOf(3), idOf(2), idOf(1)}) {
		t.Errorf("order %v, want Charlie, Bravo, Alpha", ids)
	}
	checkFinal(t, cfg, res)
}

// TestCrossEncoderPartlyUsableReply: entries with a bad index are dropped,
// the good one still counts, so this is a rerank and not a fallback.
func TestCrossEncoderPartlyUsableReply(t *testing.T) {
	srv := newRerankServer(t, func(w http.ResponseWriter, _ *http.Request, _ jinaRequest) {
		io.WriteString(w, `{"results":[{"index":7,"relevance_score":0.9},{"index":2,"relevance_score":0.95},{"index":-1,"relevance_score":0.9},{"index":1.5,"relevance_score":0.9}]}`)
	})
	s := seedStore(t, rerankMems...)
	cfg := cfgWith(RerankCrossEncoder, noBoost)
	res := retrieve(t, newRetriever(t, s, cfg, WithReranker(srv.client(t))), Query{Text: "personal details", Limit: 10})
	if res.Rerank != RerankCrossEncoder {
		t.Fatalf("rerank %q, want cross-encoder", res.Rerank)
	}
	want := map[string]float64{
		idOf(1): 0.8 / (2 - 0.9),
		idOf(2): 0.8 / (2 - 0.6),
		idOf(3): 0.6*0.95 + 0.4/(2-0.3),
	}
	for _, c := range res.Candidates {
		if math.Abs(c.Sources.Reranked-want[c.Memory.ID]) > scoreTol {
			t.Errorf("%s: reranked %v, want %v", c.Memory.Text, c.Sources.Reranked, want[c.Memory.ID])
		}
	}
	checkFinal(t, cfg, res)
}

// TestCrossEncoderFallback: whatever goes wrong with the reranker, the
// query succeeds with 0.7·fused + 0.3·cosine — and those scores differ from
// the fused ones, which proves the fallback is not the plugin's silent no-op.
func TestCrossEncoderFallback(t *testing.T) {
	write := func(status int, body string) func(http.ResponseWriter, *http.Request, jinaRequest) {
		return func(w http.ResponseWriter, _ *http.Request, _ jinaRequest) {
			w.WriteHeader(status)
			io.WriteString(w, body)
		}
	}
	tests := []struct {
		name   string
		handle func(http.ResponseWriter, *http.Request, jinaRequest) // nil: no reranker configured
	}{
		{"slow", func(w http.ResponseWriter, r *http.Request, _ jinaRequest) {
			// Well past the 200ms timeout; ends early once the client gives up.
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			io.WriteString(w, `{"results":[{"index":0,"relevance_score":1}]}`)
		}},
		{"500", write(http.StatusInternalServerError, `{"error":"overloaded"}`)},
		{"429", write(http.StatusTooManyRequests, `rate limited`)},
		{"garbage JSON", write(http.StatusOK, `{"results":[{"index":0,"relevance_sc`)},
		{"HTML", write(http.StatusOK, `<html><body>gateway</body></html>`)},
		{"out-of-range index", write(http.StatusOK, `{"results":[{"index":3,"relevance_score":0.9},{"index":99,"relevance_score":0.8}]}`)},
		{"no results", write(http.StatusOK, `{"results":[]}`)},
		{"wrong shape", write(http.StatusOK, `{"data":[{"index":0,"score":0.9}]}`)},
		{"NaN-like scores", write(http.StatusOK, `{"results":[{"index":0,"relevance_score":null},{"index":1}]}`)},
		{"no reranker", nil},
	}
	// Pool 3: vector search finds Alpha, Bravo, Charlie; BM25 finds Alpha
	// (both) and Delta (BM25 only, fused ≥ 0.5, so it displaces Charlie,
	// 0.455, from the pool). Delta's cosine is negative: its fallback uses
	// max(cosine, 0) = 0.
	s := seedStore(t,
		tm{key: 1, text: "Alpha: the user is based in Lisbon", cos: 0.9},
		tm{key: 2, text: "Bravo: the user's manager is Dana", cos: 0.6},
		tm{key: 3, text: "Charlie: the user writes Go at work", cos: -0.2},
		tm{key: 4, text: "Delta: Lisbon office keys are at reception", cos: -0.4},
	)
	pool3 := func(c *Config) { c.CandidatePoolSize = 3 }
	cfg := cfgWith(RerankCrossEncoder, noBoost, pool3)
	q := Query{Text: "Lisbon", Limit: 3}

	none := retrieve(t, newRetriever(t, s, cfgWith(RerankNone, noBoost, pool3)), q)
	noneFinal := map[string]float64{}
	for _, c := range none.Candidates {
		noneFinal[c.Memory.ID] = c.Score
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []Option
			var srv *rerankServer
			if tt.handle != nil {
				srv = newRerankServer(t, tt.handle)
				opts = append(opts, WithReranker(srv.client(t)))
			}
			start := time.Now()
			q := q
			q.Vector, q.Scopes = queryVec(), engine.AllScopes()
			rt := newRetriever(t, s, cfg, opts...)
			res, err := rt.Retrieve(context.Background(), q)
			if err != nil {
				t.Fatalf("Retrieve: %v", err)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %v: the 200ms rerank timeout did not hold", el)
			}
			// For RerankDownFor after a failure the reranker is not asked.
			if again, err := rt.Retrieve(context.Background(), q); err != nil || again.Rerank != RerankCosineFallback {
				t.Fatalf("second Retrieve: %v %q", err, again.Rerank)
			}
			if srv != nil && srv.calls.Load() != 1 {
				t.Errorf("%d rerank calls in two retrievals, want 1", srv.calls.Load())
			}
			if res.Rerank != "cosine-fallback" {
				t.Fatalf("rerank %q, want cosine-fallback", res.Rerank)
			}
			if ids := candIDs(res.Candidates); len(ids) != 3 || !slices.Contains(ids, idOf(4)) {
				t.Fatalf("results %v, want Alpha, Bravo and the BM25-only Delta", ids)
			}
			if d := byID(res.Candidates)[idOf(4)].Sources; d.VectorHit || !d.BM25Hit {
				t.Fatalf("Delta is not a BM25-only hit: %+v", d)
			}
			for _, c := range res.Candidates {
				src := c.Sources
				want := 0.7*src.Fused + 0.3*math.Max(src.Cosine, 0)
				if math.Abs(src.Reranked-want) > scoreTol {
					t.Errorf("%s: reranked %v, want 0.7·%v + 0.3·max(%v,0) = %v", c.Memory.Text, src.Reranked, src.Fused, src.Cosine, want)
				}
				if math.Abs(src.Reranked-src.Fused) < 0.01 {
					t.Errorf("%s: fallback left the score at %v (fused %v): a no-op", c.Memory.Text, src.Reranked, src.Fused)
				}
				if math.Abs(c.Score-noneFinal[c.Memory.ID]) < 0.005 {
					t.Errorf("%s: final %v equals the no-rerank final %v", c.Memory.Text, c.Score, noneFinal[c.Memory.ID])
				}
			}
			checkFinal(t, cfg, res)
		})
	}
}

func TestLightweightMakesNoCall(t *testing.T) {
	srv := newRerankServer(t, scoreByText(map[string]float64{"": 1}))
	mems := []tm{
		{key: 1, text: "Alpha: the user likes green tea", cos: 0.9},
		{key: 2, text: "Bravo: oolong tea is the user's favourite", cos: 0.6},
		{key: 3, text: "Charlie: the user writes Go at work", cos: 0.8},
	}
	s := seedStore(t, mems...)
	cfg := cfgWith(RerankLightweight, noBoost)
	query := "favourite oolong"
	res := retrieve(t, newRetriever(t, s, cfg, WithReranker(srv.client(t))), Query{Text: query, Limit: 10})
	if n := srv.calls.Load(); n != 0 {
		t.Errorf("lightweight rerank made %d network calls", n)
	}
	if res.Rerank != RerankLightweight {
		t.Errorf("rerank %q, want lightweight", res.Rerank)
	}
	// Overlap with {favourite, oolong}: Alpha 0, Bravo 2/2, Charlie 0.
	overlap := map[string]float64{idOf(1): 0, idOf(2): 1, idOf(3): 0}
	for _, c := range res.Candidates {
		want := 0.8*c.Sources.Fused + 0.2*overlap[c.Memory.ID]
		if math.Abs(c.Sources.Reranked-want) > scoreTol {
			t.Errorf("%s: reranked %v, want %v", c.Memory.Text, c.Sources.Reranked, want)
		}
	}
	checkFinal(t, cfg, res)
}

// TestSingleCandidateIsReranked: one match goes through the reranker like
// twenty would. Skipping it (as the pipeline once did) left a lone
// irrelevant memory at its fused score, so the hard minimum could not drop
// it, and reported rerank "none" in cross-encoder mode.
func TestSingleCandidateIsReranked(t *testing.T) {
	s := seedStore(t, tm{key: 1, text: "The user's locker code is 4471", cos: 0.4})
	fused := 1 / (2 - 0.4) // 0.625
	tests := []struct {
		name     string
		handle   func(http.ResponseWriter, *http.Request, jinaRequest)
		wantMode string
		reranked float64
	}{
		{"irrelevant per cross-encoder", scoreByText(map[string]float64{"": 0.02}), RerankCrossEncoder, 0.6*0.02 + 0.4*fused},
		{"fallback", func(w http.ResponseWriter, _ *http.Request, _ jinaRequest) { w.WriteHeader(http.StatusBadGateway) },
			"cosine-fallback", 0.7*fused + 0.3*0.4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newRerankServer(t, tt.handle)
			cfg := cfgWith(RerankCrossEncoder, noBoost)
			res := retrieve(t, newRetriever(t, s, cfg, WithReranker(srv.client(t))), Query{Text: "gym", Limit: 5})
			if res.Rerank != tt.wantMode || srv.calls.Load() != 1 || len(res.Candidates) != 1 {
				t.Fatalf("rerank %q after %d calls with %d results, want %s after 1 call with 1",
					res.Rerank, srv.calls.Load(), len(res.Candidates), tt.wantMode)
			}
			if got := res.Candidates[0].Sources.Reranked; math.Abs(got-tt.reranked) > scoreTol {
				t.Errorf("reranked %v, want %v", got, tt.reranked)
			}
			checkFinal(t, cfg, res)
		})
	}
	// At the default hard minimum the cross-encoder's verdict removes it.
	srv := newRerankServer(t, scoreByText(map[string]float64{"": 0.02}))
	res := retrieve(t, newRetriever(t, s, cfgWith(RerankCrossEncoder, func(c *Config) { c.RecencyWeight = 0 }),
		WithReranker(srv.client(t))), Query{Text: "gym"})
	if len(res.Candidates) != 0 {
		t.Errorf("an irrelevant lone memory survived hardMinScore 0.35 at %v", res.Candidates[0].Score)
	}
}
