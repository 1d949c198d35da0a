package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/capture"
	"github.com/clawmem/clawmem/workers/query"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/store"
)

// PipelineReport is what `clawmem bench pipeline` reports.
type PipelineReport struct {
	Index         string       `json:"index"`
	Preloaded     int          `json:"preloaded"`
	Sync          string       `json:"natsSync"`
	PreloadSec    float64      `json:"preloadSeconds"`
	IngestHTTP    IngestResult `json:"ingestHttp"`
	IngestDirect  IngestResult `json:"ingestDirect"`
	Captured      int          `json:"captured"`
	OfferedPerSec float64      `json:"offeredPerSecond"`
	CapturePerSec float64      `json:"capturedPerSecond"`
	FreshP50ms    float64      `json:"freshnessP50ms"`
	FreshP99ms    float64      `json:"freshnessP99ms"`
	RecallEngine  [2]float64   `json:"recallEngineP50P99ms"`
	RecallNATS    [2]float64   `json:"recallNatsP50P99ms"`
	Contended     int          `json:"contendedCores,omitempty"`
}

// PipelineOptions are `clawmem bench pipeline`'s settings.
type PipelineOptions struct {
	Preload, Events, IngestEvents, Queries int
	// Rate is the end-to-end publish rate, events/s.
	Rate int
	// Index is the vector index: auto, exact or approximate.
	Index string
	// Contend is how many other processes keep a core busy during the
	// run, each running ContendCommand (clawmem's hidden `bench burn`),
	// which ends by itself after its bound.
	Contend        int
	ContendCommand []string
	// Sync is nats.sync for the bench's server: default, always or a
	// duration.
	Sync string
	Logf func(format string, args ...any)
}

// Pipeline runs the whole pipeline in process on a temporary data dir with
// the local embedder and measures ingest, capture and recall.
func Pipeline(ctx context.Context, o PipelineOptions) (PipelineReport, error) {
	preload, events, ingestEvents, queries, rate, index := o.Preload, o.Events, o.IngestEvents, o.Queries, o.Rate, o.Index
	rep := PipelineReport{Index: index, Contended: o.Contend}
	logf := o.Logf
	if o.Contend > 0 {
		stop, err := contend(ctx, o.ContendCommand, o.Contend)
		if err != nil {
			return rep, err
		}
		defer stop()
		logf("contention: %d other process(es) keep a core busy each", o.Contend)
	}
	dir, cfg, err := scratch("pipeline")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	cfg.Store.Index, cfg.NATS.Sync = index, o.Sync
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	always, interval, _ := cfg.NATS.SyncPolicy()
	rep.Sync = cmp.Or(o.Sync, "default")
	quiet := slog.New(slog.DiscardHandler)
	srv, err := natsembed.Start(natsembed.Options{StoreDir: dir + "/nats", Port: -1, Sync: natsembed.Sync{Always: always, Interval: interval}})
	if err != nil {
		return rep, err
	}
	defer srv.Stop()
	nc, err := instance.Connect(srv.ClientURL(), cfg, "clawmem-bench")
	if err != nil {
		return rep, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		return rep, err
	}
	eng, st, err := storeopen.Engine(ctx, cfg, quiet)
	if err != nil {
		return rep, err
	}
	defer st.Close()

	logf("preloading %d memories...", preload)
	start := time.Now()
	rng := rand.New(rand.NewPCG(5, 8))
	for done := 0; done < preload; {
		n := min(1000, preload-done)
		texts := make([]string, n)
		for i := range texts {
			texts[i] = testkit.Sentence(rng, done+i)
		}
		vecs, err := eng.Embedder().EmbedPassages(ctx, texts)
		if err != nil {
			return rep, err
		}
		ms := make([]schemas.Memory, n)
		for i := range ms {
			ms[i] = schemas.Memory{Text: texts[i], Vector: vecs[i], Scope: "agent:bench", Category: schemas.CategoryFact, Importance: 0.7}
		}
		if _, err := st.Add(ctx, ms...); err != nil {
			return rep, err
		}
		done += n
	}
	rep.Preloaded, rep.PreloadSec = st.Len(), time.Since(start).Seconds()

	// Ingest, before any worker runs; the events are purged afterwards.
	logf("ingest over HTTP...")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	ictx, stopIngest := context.WithCancel(ctx)
	token := authdir.NewToken()
	srvIngest := ingest.New(ingest.Config{Addr: ln.Addr().String(), Token: token}, producers.New(js), nil, quiet)
	var iwg sync.WaitGroup
	iwg.Go(func() { _ = srvIngest.Serve(ictx, ln) })
	rep.IngestHTTP, err = httpBench(ctx, "http://"+ln.Addr().String(), token, IngestOptions{Events: ingestEvents})
	stopIngest()
	iwg.Wait()
	if err != nil {
		return rep, err
	}
	logf("ingest by direct publish...")
	if rep.IngestDirect, err = publishBench(ctx, producers.New(js), IngestOptions{Events: ingestEvents}); err != nil {
		return rep, err
	}
	if s, err := js.Stream(ctx, schemas.StreamEvents); err == nil {
		_ = s.Purge(ctx)
	}

	logf("end to end: %d events through capture and store...", events)
	// Deferred in this order so the workers are told to stop before they
	// are waited for.
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	sm := stage.NewMetrics(nil)
	wg.Go(func() { _ = capture.New(js, eng.Embedder(), capture.Config{}, sm, quiet).Run(wctx) })
	wg.Go(func() { _ = store.New(js, eng, stage.Config{}, sm, nil, quiet).Run(wctx) })
	wg.Go(func() { _ = query.New(nc, eng, query.DefaultConfig(), nil, quiet).Run(wctx) })
	if err := endToEnd(ctx, js, st, events, rate, &rep); err != nil {
		return rep, err
	}

	logf("recall: engine vs NATS, %d queries each...", queries)
	qs := make([]string, 50)
	for i := range qs {
		qs[i] = strings.Join(strings.Fields(testkit.Sentence(rng, i))[3:7], " ")
	}
	var lat []time.Duration
	for i := 0; i < queries; i++ {
		t0 := time.Now()
		if _, err := eng.Recall(ctx, memory.Agent("bench"), qs[i%len(qs)], memory.RecallOptions{}); err != nil {
			return rep, err
		}
		lat = append(lat, time.Since(t0))
	}
	rep.RecallEngine = [2]float64{Ms(testkit.Percentile(lat, 0.5)), Ms(testkit.Percentile(lat, 0.99))}
	p50, p99, err := recallOverNATS(ctx, nc, "bench", qs, queries)
	if err != nil {
		return rep, err
	}
	rep.RecallNATS = [2]float64{Ms(p50), Ms(p99)}
	return rep, nil
}

// endToEnd publishes events agent_end events, each with one new
// capturable sentence, and measures throughput and freshness.
func endToEnd(ctx context.Context, js jetstream.JetStream, st interface {
	Len() int
	Has(context.Context, string) (bool, error)
}, events, rate int, rep *PipelineReport) error {
	rng := rand.New(rand.NewPCG(9, 9))
	base := st.Len()
	type sample struct {
		id  string
		pub time.Time
	}
	var (
		mu      sync.Mutex
		pending []sample
		fresh   []time.Duration
	)
	done := make(chan struct{})
	var pollers sync.WaitGroup
	pollers.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			// Only the oldest few are checked per round: memories are
			// stored in about publishing order, and checking thousands
			// of ids every 2 ms would load the store the bench measures.
			// A sample stored out of order is seen a little late, which
			// errs towards a worse freshness figure, never a better one.
			mu.Lock()
			batch := slices.Clone(pending[:min(len(pending), 16)])
			mu.Unlock()
			for _, s := range batch {
				if ok, _ := st.Has(ctx, s.id); ok {
					seen := time.Now()
					mu.Lock()
					fresh = append(fresh, seen.Sub(s.pub))
					pending = slices.DeleteFunc(pending, func(p sample) bool { return p.id == s.id })
					mu.Unlock()
				}
			}
		}
	})
	start := time.Now()
	// Paced at rate events/s so freshness is measured at a sustained load,
	// not as the queueing delay of one burst.
	interval := time.Second / time.Duration(max(rate, 1))
	for i := 0; i < events; i++ {
		if due := start.Add(time.Duration(i) * interval); time.Until(due) > 0 {
			time.Sleep(time.Until(due))
		}
		text := fmt.Sprintf("Remember that %s", testkit.Sentence(rng, 1_000_000+i))
		session := fmt.Sprintf("e2e-%d", i)
		ev, _ := json.Marshal(schemas.AgentEndEvent{Success: true, Messages: []schemas.Message{{Role: "user", Content: mustJSON(text)}}})
		body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: session, Timestamp: time.Now().UnixMilli(), Event: ev})
		if i%50 == 0 {
			mu.Lock()
			pending = append(pending, sample{id: store.MemoryID("bench", capture.SourceID("bench", session, text)), pub: time.Now()})
			mu.Unlock()
		}
		if _, err := js.PublishAsync(schemas.EventSubject(schemas.KindAgentEnd, "bench"), body); err != nil {
			return err
		}
		if i%1000 == 999 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	published := time.Since(start)
	deadline := time.Now().Add(10 * time.Minute)
	for st.Len() < base+events {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d memories stored", st.Len()-base, events)
		}
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(start)
	time.Sleep(20 * time.Millisecond)
	close(done)
	pollers.Wait()
	rep.Captured = st.Len() - base
	rep.CapturePerSec = float64(rep.Captured) / el.Seconds()
	rep.OfferedPerSec = float64(events) / published.Seconds()
	rep.FreshP50ms, rep.FreshP99ms = Ms(testkit.Percentile(fresh, 0.5)), Ms(testkit.Percentile(fresh, 0.99))
	return nil
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// WriteText prints the figures for a person.
func (rep PipelineReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "pipeline, local embedder, %s index, %d memories preloaded (%.1f s), nats.sync %s\n", rep.Index, rep.Preloaded, rep.PreloadSec, rep.Sync)
	if rep.Contended > 0 {
		fmt.Fprintf(w, "  while %d other process(es) kept a core busy each (--contend)\n", rep.Contended)
	}
	fmt.Fprintf(w, "  ingest HTTP      %8.0f events/s  (p50 %.2f ms, p99 %.2f ms, %d events)\n", rep.IngestHTTP.EventsPerSec, rep.IngestHTTP.P50Ms, rep.IngestHTTP.P99Ms, rep.IngestHTTP.Events)
	fmt.Fprintf(w, "  ingest direct    %8.0f events/s  (p50 %.2f ms, p99 %.2f ms, %d events)\n", rep.IngestDirect.EventsPerSec, rep.IngestDirect.P50Ms, rep.IngestDirect.P99Ms, rep.IngestDirect.Events)
	fmt.Fprintf(w, "  end to end       %8.0f captured memories/s (%d memories, offered at %.0f/s)\n", rep.CapturePerSec, rep.Captured, rep.OfferedPerSec)
	fmt.Fprintf(w, "  freshness        p50 %.1f ms  p99 %.1f ms (publish → stored and recallable)\n", rep.FreshP50ms, rep.FreshP99ms)
	fmt.Fprintf(w, "  recall, engine   p50 %.2f ms  p99 %.2f ms\n", rep.RecallEngine[0], rep.RecallEngine[1])
	fmt.Fprintf(w, "  recall, NATS     p50 %.2f ms  p99 %.2f ms  (p99 overhead %+.2f ms)\n", rep.RecallNATS[0], rep.RecallNATS[1], rep.RecallNATS[1]-rep.RecallEngine[1])
	return nil
}

// contendBound is how long a burner runs at most: it ends by itself even
// if the benchmark that started it dies.
const contendBound = 15 * time.Minute

// contend starts n processes (command) that each keep a core busy, and
// returns the function that stops them.
func contend(ctx context.Context, command []string, n int) (func(), error) {
	if len(command) == 0 {
		return nil, errors.New("contend: no command to run")
	}
	var procs []*exec.Cmd
	stop := func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
	}
	for range n {
		args := append(slices.Clone(command[1:]), "--seconds", strconv.Itoa(int(contendBound.Seconds())))
		p := exec.CommandContext(ctx, command[0], args...)
		if err := p.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("contend: %w", err)
		}
		procs = append(procs, p)
	}
	return stop, nil
}

// Burn keeps one core busy for d (clawmem's hidden `bench burn`, which
// runs it with GOMAXPROCS 1).
func Burn(d time.Duration) float64 {
	x, end := 1.0, time.Now().Add(d)
	for time.Now().Before(end) {
		for range 1 << 20 {
			x = x*1.0000001 + 1e-9
		}
	}
	return x
}
