package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawmem/clawmem/engine/embed"
)

// Fault is what a fake provider does to each request.
type Fault int32

const (
	Healthy  Fault = iota
	FailHalf       // every other request (at random) answers HTTP 503
	Hang           // no answer until the fault changes or the caller gives up
	Garbage        // HTTP 200 with a body that is not the API's format
	Gone           // the listener is closed: connections are refused
)

func (f Fault) String() string {
	return [...]string{"healthy", "fail 50%", "hang", "garbage", "gone"}[f]
}

// fake is a loopback provider (embeddings, rerank or chat) whose fault can
// be switched while it runs. Gone closes its listener; any other fault
// listens again on the same port.
type fake struct {
	name   string
	answer func(w http.ResponseWriter, body []byte) // a healthy answer
	fault  atomic.Int32
	port   int

	mu       sync.Mutex
	srv      *http.Server
	changed  chan struct{} // closed when the fault changes (releases hangs)
	rng      *rand.Rand
	requests atomic.Int64
}

func newFake(name string, seed uint64, answer func(http.ResponseWriter, []byte)) (*fake, error) {
	f := &fake{name: name, answer: answer, changed: make(chan struct{}), rng: rand.New(rand.NewPCG(seed, 3))}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.port = ln.Addr().(*net.TCPAddr).Port
	f.serve(ln)
	return f, nil
}

// URL is the fake's base URL.
func (f *fake) URL() string { return fmt.Sprintf("http://127.0.0.1:%d", f.port) }

func (f *fake) serve(ln net.Listener) {
	f.srv = &http.Server{Handler: http.HandlerFunc(f.handle), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
}

// Set switches the fault.
func (f *fake) Set(fault Fault) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := Fault(f.fault.Swap(int32(fault)))
	close(f.changed)
	f.changed = make(chan struct{})
	switch {
	case fault == Gone && old != Gone:
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			f.srv.Close()
		}
	case fault != Gone && old == Gone:
		var ln net.Listener
		var err error
		for range 50 { // the port may linger a moment
			if ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", f.port)); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("%s: listen again: %w", f.name, err)
		}
		f.serve(ln)
	}
	return nil
}

// Close stops the fake.
func (f *fake) Close() {
	f.Set(Gone)
}

func (f *fake) handle(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	f.mu.Lock()
	fault, changed := Fault(f.fault.Load()), f.changed
	fail := f.rng.IntN(2) == 0
	f.mu.Unlock()
	switch fault {
	case FailHalf:
		if fail {
			http.Error(w, `{"error":{"message":"chaos: overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
	case Hang:
		select {
		case <-r.Context().Done():
			return
		case <-changed:
			f.handle(w, r.WithContext(r.Context())) // answer as the new fault says
			return
		}
	case Garbage:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"chaos": [1, 2, "not what you asked for"`)
		return
	}
	f.answer(w, body)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// fakeEmbeddings answers /v1/embeddings with clawmem's own local
// (lexical) embedder's vectors, so duplicates and recall behave as with
// the default configuration.
func fakeEmbeddings(dims int) (func(http.ResponseWriter, []byte), error) {
	emb, err := embed.New(embed.Config{Provider: "local", Dimensions: dims})
	if err != nil {
		return nil, err
	}
	return func(w http.ResponseWriter, body []byte) {
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		out := make([]item, len(req.Input))
		for i, text := range req.Input {
			v, err := emb.EmbedPassage(context.Background(), text)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			out[i] = item{Object: "embedding", Index: i, Embedding: v}
		}
		writeJSON(w, map[string]any{"object": "list", "data": out, "model": "chaos-embed",
			"usage": map[string]int{"prompt_tokens": len(req.Input), "total_tokens": len(req.Input)}})
	}, nil
}

// fakeRerank answers a Jina-style /v1/rerank: documents sharing more of
// the query's words score higher.
func fakeRerank(w http.ResponseWriter, body []byte) {
	var req struct {
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(req.Query)) {
		words[w] = true
	}
	type result struct {
		Index int     `json:"index"`
		Score float64 `json:"relevance_score"`
	}
	out := make([]result, len(req.Documents))
	for i, d := range req.Documents {
		n := 0
		for _, w := range strings.Fields(strings.ToLower(d)) {
			if words[w] {
				n++
			}
		}
		out[i] = result{Index: i, Score: float64(n) / float64(len(words)+1)}
	}
	writeJSON(w, map[string]any{"model": "chaos-rerank", "results": out})
}

// fakeChat answers an OpenAI-style /v1/chat/completions for smart
// extraction: every line the user said is one fact to ADD, word for word.
func fakeChat(w http.ResponseWriter, body []byte) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type fact struct {
		Action     string  `json:"action"`
		Text       string  `json:"text"`
		Target     string  `json:"target"`
		Category   string  `json:"category"`
		Importance float64 `json:"importance"`
	}
	facts := []fact{}
	for _, m := range req.Messages {
		_, said, ok := strings.Cut(m.Content, "<user-said>\n")
		if !ok {
			continue
		}
		said, _, _ = strings.Cut(said, "</user-said>")
		for line := range strings.SplitSeq(strings.TrimSpace(said), "\n") {
			if line != "" {
				facts = append(facts, fact{Action: "ADD", Text: line, Category: "fact", Importance: 0.7})
			}
		}
	}
	content, _ := json.Marshal(map[string]any{"facts": facts})
	writeJSON(w, map[string]any{
		"id": "chaos", "object": "chat.completion", "created": time.Now().Unix(), "model": "chaos-llm",
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage": map[string]int{"prompt_tokens": len(body) / 4, "completion_tokens": len(content) / 4, "total_tokens": (len(body) + len(content)) / 4},
	})
}
