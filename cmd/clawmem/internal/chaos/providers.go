package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// ProviderOptions size the provider-faults scenario.
type ProviderOptions struct {
	Phase  time.Duration // each of fail 50%, hang and garbage, and the healthy phases
	Outage time.Duration // how long the providers are gone
	Rate   float64       // events per second throughout
	Poison int           // malformed events published straight to the stream
}

// recallTally counts how recall answered during a fault.
type recallTally struct {
	mu     sync.Mutex
	byMode map[string]int // "mode/rerank"
	errs   int
	last   string
}

func (t *recallTally) add(key string, failed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if failed {
		t.errs++
		t.last = key
		return
	}
	t.byMode[key]++
}

// Providers runs `clawmem up` with an embedding endpoint, a reranker and
// a chat model (smart extraction) that are loopback fakes, publishes
// events and recalls throughout while the fakes fail half their requests,
// hang, answer garbage, then go away, and checks: every acknowledged event
// is stored once, only the poison messages are dead-lettered (with a
// reason), recall answers throughout on its documented fallbacks (BM25
// alone without embeddings, cosine without the reranker), and everything
// recovers without a restart.
func Providers(ctx context.Context, env Env, o ProviderOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "provider faults"}
	embedAnswer, err := fakeEmbeddings(256)
	if err != nil {
		return r, err
	}
	fakes := make([]*fake, 3)
	for i, a := range []func(w http.ResponseWriter, b []byte){embedAnswer, fakeRerank, fakeChat} {
		if fakes[i], err = newFake([]string{"embeddings", "rerank", "llm"}[i], env.Seed+uint64(i), a); err != nil {
			return r, err
		}
		defer fakes[i].Close()
	}
	emb, rr, llm := fakes[0], fakes[1], fakes[2]
	setAll := func(f Fault) error {
		for _, x := range fakes {
			if err := x.Set(f); err != nil {
				return err
			}
		}
		return nil
	}
	up, nc, err := env.start(ctx, "providers", map[string]any{
		"embedding": map[string]any{"provider": "openai", "baseURL": emb.URL() + "/v1", "model": "chaos-embed", "dimensions": 256, "apiKey": "chaos-fake"},
		"retrieval": map[string]any{"rerank": "cross-encoder", "rerankProvider": "jina", "rerankEndpoint": rr.URL() + "/v1/rerank",
			"rerankModel": "chaos-rerank", "rerankApiKey": "chaos-fake"},
		"distill":         map[string]any{"provider": "openai", "baseURL": llm.URL() + "/v1", "model": "chaos-llm", "apiKey": "chaos-fake", "timeoutSeconds": 5},
		"smartExtraction": map[string]any{"timeoutSeconds": 8},
	})
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	pid := up.PID()

	phases := []struct {
		fault Fault
		span  time.Duration
	}{{Healthy, o.Phase}, {FailHalf, o.Phase}, {Hang, o.Phase}, {Garbage, o.Phase}, {Gone, o.Outage}, {Healthy, o.Phase}}
	var total time.Duration
	for _, p := range phases {
		total += p.span
	}
	n := int(o.Rate * total.Seconds())
	load := NewLoad(up.Ingest(), n, o.Rate, env.Seed)
	loadCtx, cancel := context.WithTimeout(ctx, total+3*time.Minute)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()

	// Recall throughout, as agent main, two a second; each answer's mode
	// and rerank are tallied under the phase's fault.
	var phase atomic.Int32
	tallies := make([]*recallTally, len(phases))
	for i := range tallies {
		tallies[i] = &recallTally{byMode: map[string]int{}}
	}
	recallCtx, stopRecall := context.WithCancel(ctx)
	defer stopRecall()
	var recalls sync.WaitGroup
	recalls.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-recallCtx.Done():
				return
			case <-tick.C:
			}
			p := int(phase.Load())
			// A query never asked before: the embedder's cache cannot answer it.
			mode, failed := recallOnce(recallCtx, nc, fmt.Sprintf("%s, asked %d", load.Text(i), i))
			if recallCtx.Err() == nil {
				tallies[p].add(mode, failed)
			}
		}
	})

	// Poison: events no retry can fix, published straight to the stream.
	js, err := jetstream.New(nc)
	if err != nil {
		return r, err
	}
	for i := range o.Poison {
		if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), fmt.Appendf(nil, "chaos poison %d: not JSON", i)); err != nil {
			return r, fmt.Errorf("publish poison: %w", err)
		}
	}

	for i, p := range phases {
		phase.Store(int32(i))
		if err := setAll(p.fault); err != nil {
			return r, err
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(p.span):
		}
	}
	<-loaded
	t, err := load.Settle(ctx, nc, 60*time.Second)
	if err != nil {
		r.fail("counting the store: %v", err)
	}
	// Recovery: recall is hybrid and cross-encoder reranked again.
	recovered := -1.0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if mode, failed := recallOnce(ctx, nc, load.Text(0)); !failed && mode == "hybrid/cross-encoder" {
			recovered = time.Since(start).Seconds()
			break
		}
	}
	stopRecall()
	recalls.Wait()
	if recovered < 0 {
		r.fail("recall did not return to hybrid with the cross-encoder within 30 s of the providers' return")
	}
	dead, reasons, err := deadLetters(ctx, js)
	if err != nil {
		r.fail("reading the DLQ: %v", err)
	}
	t.DLQ = dead
	r.checkTally(t)
	if dead != o.Poison || reasons != o.Poison {
		r.fail("%d dead letters (%d with a reason), want exactly the %d poison events", dead, reasons, o.Poison)
	}
	if up.PID() != pid {
		r.fail("clawmem up restarted")
	}
	fig := map[string]any{"events": n, "poison": o.Poison, "phaseSec": o.Phase.Seconds(), "outageSec": o.Outage.Seconds(),
		"providerRequests": map[string]int64{"embeddings": emb.requests.Load(), "rerank": rr.requests.Load(), "llm": llm.requests.Load()}}
	var line string
	recallErrs := 0
	for i, p := range phases {
		tl := tallies[i]
		fig["recall "+p.fault.String()+fmt.Sprint(i)] = map[string]any{"answers": tl.byMode, "errors": tl.errs}
		line += fmt.Sprintf("; %s: recall %v", p.fault, tl.byMode)
		if tl.errs > 0 {
			line += fmt.Sprintf(" %d errors", tl.errs)
			recallErrs += tl.errs
			r.fail("%d recalls failed while the providers were %s (last: %s)", tl.errs, p.fault, tl.last)
		}
	}
	fallbacks := 0
	for i := 1; i < len(phases)-1; i++ {
		for k, v := range tallies[i].byMode {
			if k != "hybrid/cross-encoder" {
				fallbacks += v
			}
		}
	}
	if fallbacks == 0 {
		r.fail("no recall during the faults ran on a fallback: the faults did not reach clawmem")
	}
	if err := up.Stop(); err != nil {
		r.fail("graceful stop: %v", err)
	}
	r.Figures = fig
	r.Summary = fmt.Sprintf("poison %d dead-lettered with reasons, outage %.0f s, recovered without restart%s", dead, o.Outage.Seconds(), line)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}

// recallOnce asks main's recall for text and returns "mode/rerank", or
// the error.
func recallOnce(ctx context.Context, nc *nats.Conn, text string) (string, bool) {
	body, _ := json.Marshal(schemas.RecallRequest{Query: text, Limit: 5})
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, schemas.ServiceSubject("main", schemas.OpRecall), body)
	if err != nil {
		return err.Error(), true
	}
	var res struct {
		IsError bool `json:"isError"`
		Details struct {
			Mode   string `json:"mode"`
			Rerank string `json:"rerank"`
			Error  string `json:"error"`
		} `json:"details"`
	}
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return err.Error(), true
	}
	if res.IsError {
		return res.Details.Error, true
	}
	return res.Details.Mode + "/" + res.Details.Rerank, false
}

// deadLetters counts the DLQ's messages and those with a reason header.
func deadLetters(ctx context.Context, js jetstream.JetStream) (n, reasons int, err error) {
	s, err := js.Stream(ctx, schemas.StreamDLQ)
	if err != nil {
		return 0, 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, 0, err
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		n++
		if m.Header.Get(schemas.HeaderDLQReason) != "" {
			reasons++
		}
	}
	return n, reasons, nil
}
