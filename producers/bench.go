package producers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

// BenchOptions shape a producer benchmark: Events agent_end events for
// Agent, sent by Concurrency parallel clients.
type BenchOptions struct {
	Agent       string // default "bench"
	Events      int    // default 10000
	Concurrency int    // default 32
	Messages    int    // messages per agent_end history; default 4
}

// WithDefaults fills unset options.
func (o BenchOptions) WithDefaults() BenchOptions {
	if o.Agent == "" {
		o.Agent = "bench"
	}
	if o.Events <= 0 {
		o.Events = 10000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Messages <= 0 {
		o.Messages = 4
	}
	return o
}

// BenchResult is what a producer benchmark measured. Every counted event
// was acknowledged by JetStream, i.e. persisted.
type BenchResult struct {
	Events       int     `json:"events"`
	Duplicates   int     `json:"duplicates"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"eventsPerSecond"`
	P50Ms        float64 `json:"p50ms"`
	P99Ms        float64 `json:"p99ms"`
}

// BenchRun generates the events of one benchmark run. Each run draws a
// random nonce into the run ids, so a second run within the stream's
// duplicate window is not deduplicated against the first.
type BenchRun struct {
	opts  BenchOptions
	nonce string
}

// NewBenchRun starts a run.
func NewBenchRun(o BenchOptions) *BenchRun {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &BenchRun{opts: o.WithDefaults(), nonce: hex.EncodeToString(b[:])}
}

// Options are the run's options with defaults filled.
func (r *BenchRun) Options() BenchOptions { return r.opts }

// Event is the i-th agent_end event and its context: a short but realistic
// history, so the figure includes validation and envelope costs.
func (r *BenchRun) Event(i int) (json.RawMessage, Meta) {
	msgs := make([]schemas.Message, r.opts.Messages)
	for j := range msgs {
		role, text := "user", fmt.Sprintf("I prefer dark roast coffee and my build server is ci-%d; remember that for run %d.", j, i)
		if j%2 == 1 {
			role, text = "assistant", "Noted: you prefer dark roast coffee. I will keep the build server name in mind."
		}
		content, _ := json.Marshal([]schemas.ContentBlock{{Type: "text", Text: text}})
		msgs[j] = schemas.Message{Role: role, Content: content, Timestamp: 1767225600000 + int64(i*1000+j)}
	}
	ev, _ := json.Marshal(schemas.AgentEndEvent{Messages: msgs, Success: true, DurationMs: 1200})
	return ev, Meta{SessionKey: "agent:" + r.opts.Agent + ":bench", SessionID: "bench-" + r.nonce,
		RunID: fmt.Sprintf("run-%s-%d", r.nonce, i), ChannelID: "bench"}
}

// Body is the i-th event as an HTTP hook body.
func (r *BenchRun) Body(i int) []byte {
	ev, m := r.Event(i)
	b, _ := json.Marshal(map[string]any{
		"event": ev,
		"ctx": map[string]string{"agentId": r.opts.Agent, "sessionKey": m.SessionKey, "sessionId": m.SessionID,
			"runId": m.RunID, "channelId": m.ChannelID},
	})
	return b
}

// Drive runs send for events 0..Events-1 on Concurrency goroutines and
// times them. send reports whether the event was a duplicate. The first
// error stops the run.
func (r *BenchRun) Drive(ctx context.Context, send func(ctx context.Context, i int) (dup bool, err error)) (BenchResult, error) {
	o := r.opts
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, dups atomic.Int64
		mu         sync.Mutex
		firstErr   error
		lat        = make([][]time.Duration, o.Concurrency)
		wg         sync.WaitGroup
	)
	start := time.Now()
	for w := range o.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= o.Events {
					return
				}
				t := time.Now()
				dup, err := send(ctx, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("event %d: %w", i, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				lat[w] = append(lat[w], time.Since(t))
				if dup {
					dups.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	res := BenchResult{Events: len(all), Duplicates: int(dups.Load()), Seconds: elapsed.Seconds()}
	if elapsed > 0 {
		res.EventsPerSec = float64(len(all)) / elapsed.Seconds()
	}
	if len(all) > 0 {
		slices.Sort(all)
		res.P50Ms = ms(all[len(all)/2])
		res.P99Ms = ms(all[min(len(all)-1, len(all)*99/100)])
	}
	if firstErr == nil && res.Events < o.Events {
		firstErr = ctx.Err()
	}
	if firstErr == nil && res.Duplicates > 0 {
		// Each bench event is distinct; a duplicate means dedup misfired.
		firstErr = errors.New("bench: JetStream reported duplicates for distinct events")
	}
	return res, firstErr
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RunPublishBench measures direct publishing: parallel Publish calls, each
// waiting for its JetStream ack, as `clawmem publish` and Go producers do.
func RunPublishBench(ctx context.Context, pub *Publisher, o BenchOptions) (BenchResult, error) {
	run := NewBenchRun(o)
	// Events are built before the clock starts so the figure is about
	// publishing, not about generating test data.
	events := make([]json.RawMessage, run.opts.Events)
	metas := make([]Meta, run.opts.Events)
	for i := range events {
		events[i], metas[i] = run.Event(i)
	}
	return run.Drive(ctx, func(ctx context.Context, i int) (bool, error) {
		ack, err := pub.Publish(ctx, schemas.KindAgentEnd, run.opts.Agent, events[i], metas[i])
		return ack.Duplicate, err
	})
}
