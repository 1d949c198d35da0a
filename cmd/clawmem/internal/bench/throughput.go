package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// RecallOptions are `clawmem bench recall`'s settings.
type RecallOptions struct {
	N, Dim int
	// Concurrency lists the numbers of concurrent callers, one run each.
	Concurrency []int
	// Seconds is how long each run lasts.
	Seconds float64
	// Memory is the vector memory mode (store.memory: float32 or int8;
	// empty: the default).
	Memory string
	// Dir, when set, keeps the store there and reuses it when it already
	// holds N memories of Dim dimensions (empty: a scratch directory).
	Dir string
	// Cache keeps the recall cache on (retrieval.recallCache's default).
	// Off, every recall is computed: the mix repeats its queries, which
	// the cache would otherwise answer from memory after their first time.
	Cache bool
	// Queries is the size of the query mix (0: defaultRecallQueries). The
	// store's row cache keeps the rows recalls read, so a small mix reads
	// them from SQLite less often than a large one.
	Queries int
	// HTTP runs each level a third time, over the HTTP API (POST
	// /v1/recall on the hook ingest listener, as `clawmem up` serves it,
	// which asks the query service over NATS).
	HTTP bool
	// ANN, when positive, checks the vector index against exact search on
	// the mix's first ANN queries before the runs (ANNCheck).
	ANN int
	// Rate, when positive, paces the callers: together they start Rate
	// recalls a second, on a fixed schedule, however fast the answers
	// come, and each recall's latency runs from its scheduled start. A
	// caller still waiting for its last answer starts the next one late,
	// and that wait counts. Zero: each caller asks again as soon as it is
	// answered, which finds the most the service can answer.
	Rate float64
	Logf func(format string, args ...any)
}

// RecallFigures are one run's: recalls answered per second, latency
// percentiles, and the process's CPU time per recall (every goroutine:
// callers, NATS server and service alike).
type RecallFigures struct {
	QPS             float64 `json:"qps"`
	P50Ms           float64 `json:"p50Ms"`
	P99Ms           float64 `json:"p99Ms"`
	CPUMsPerRecall  float64 `json:"cpuMsPerRecall"`
	Recalls         int     `json:"recalls"`
	Empty           int     `json:"empty,omitempty"`
	SecondsMeasured float64 `json:"seconds"`
}

// RecallLevel is one concurrency level's runs: in process against the
// engine, and over NATS through the query service.
type RecallLevel struct {
	Concurrency int           `json:"concurrency"`
	Engine      RecallFigures `json:"engine"`
	NATS        RecallFigures `json:"nats"`
	// NATSShare is the NATS rate over the engine's.
	NATSShare float64 `json:"natsShare"`
	// HTTP is the run over the HTTP API (with --http), and HTTPShare its
	// rate over the NATS run's.
	HTTP      *RecallFigures `json:"http,omitempty"`
	HTTPShare float64        `json:"httpShare,omitempty"`
}

// RecallReport is what `clawmem bench recall` reports.
type RecallReport struct {
	N       int           `json:"n"`
	Dim     int           `json:"dim"`
	Memory  string        `json:"memory"`
	Index   string        `json:"index"`
	Cores   int           `json:"cores"`
	Levels  []RecallLevel `json:"levels"`
	Queries int           `json:"queries"`
	// Rate is the recalls a second the callers were paced at (0: not
	// paced, each caller asked again at once).
	Rate float64 `json:"rate,omitempty"`
	// RecallCache is the recall cache's size in the run (0: off) and
	// RecallCacheHitRate the share of recalls it answered.
	RecallCache        int     `json:"recallCache"`
	RecallCacheHitRate float64 `json:"recallCacheHitRate,omitempty"`
	// RowCacheHitRate is the share of the rows recalls read that the
	// store's row cache held (absent for a store without one).
	RowCacheHitRate *float64 `json:"rowCacheHitRate,omitempty"`
	// ANN is the vector index's check against exact search (--ann).
	ANN *ANNCheck `json:"ann,omitempty"`
	// KernelMonitor is the kernel's DAMON access monitoring, when it was
	// on while the recalls ran (it takes CPU from them: see KernelMonitor).
	KernelMonitor *KernelMonitor `json:"kernelMonitor,omitempty"`
}

// ANNCheck is how closely the store's vector index (IVF with bit codes
// past its training size) finds what exact search does, on the agent's
// scopes: RecallAt10 is the share of exact search's 10 best that the
// index's 10 include, a memory counting when its cosine is at least the
// exact tenth's (so a tie is not a miss), and the milliseconds a search
// took each way. Throughput bought by searching less shows here.
type ANNCheck struct {
	Queries    int     `json:"queries"`
	RecallAt10 float64 `json:"recallAt10"`
	IndexMs    float64 `json:"indexMs"`
	ExactMs    float64 `json:"exactMs"`
}

// The benchmark's texts are words of a synthetic vocabulary drawn with
// Zipf's law, as words of natural text are: a few words are in most
// memories (and BM25 leaves them out), most are rare. A memory's text
// depends only on its number, so a query can quote a stored memory
// without keeping its text.
const (
	benchVocab = 30_000
	zipfS      = 1.07
)

var syllables = strings.Fields("ka lo mi ne ru sa te vo zu pa di go ha je ki ma no pe ri so tu va we xi yo za be ce da fu")

// benchWord is the vocabulary's word of rank r: syllables spelling r.
func benchWord(r uint64) string {
	var b strings.Builder
	for {
		b.WriteString(syllables[r%uint64(len(syllables))])
		r /= uint64(len(syllables))
		if r == 0 {
			return b.String()
		}
	}
}

// benchText is memory i's text: 6 to 12 words.
func benchText(i int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 0x7e47))
	z := rand.NewZipf(rng, zipfS, 1, benchVocab-1)
	w := make([]string, 6+rng.IntN(7))
	for j := range w {
		w[j] = benchWord(z.Uint64())
	}
	return strings.Join(w, " ")
}

// defaultRecallQueries is the query mix's size unless --queries says.
const defaultRecallQueries = 256

// recallQueries is the query mix of count queries: three to five words
// of a stored memory (a prompt that shares words with a memory), and as
// many words drawn from the vocabulary that quote no memory.
func recallQueries(n, count int) []string {
	rng := rand.New(rand.NewPCG(21, 4))
	z := rand.NewZipf(rng, zipfS, 1, benchVocab-1)
	qs := make([]string, count)
	for i := range qs {
		k := 3 + rng.IntN(3)
		if i%2 == 0 {
			w := strings.Fields(benchText(rng.IntN(max(n, 1))))
			start := rng.IntN(max(len(w)-k, 0) + 1)
			qs[i] = strings.Join(w[start:min(start+k, len(w))], " ")
			continue
		}
		w := make([]string, k)
		for j := range w {
			w[j] = benchWord(z.Uint64())
		}
		qs[i] = strings.Join(w, " ")
	}
	return qs
}

// Recall measures recall throughput: a store of N memories (the default
// configuration, the local embedder at Dim dimensions), then for each
// concurrency level the same query mix in process against the engine and
// over NATS through the query service.
func Recall(ctx context.Context, o RecallOptions) (RecallReport, error) {
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	rep := RecallReport{N: o.N, Dim: o.Dim, Cores: runtime.NumCPU(), Rate: o.Rate}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "clawmem-bench-recall-")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	cfg, err := config.Load("", dir)
	if err != nil {
		return rep, err
	}
	cfg.Embedding.Dimensions = o.Dim
	if o.Memory != "" {
		cfg.Store.Memory = o.Memory
	}
	if !o.Cache {
		cfg.Retrieval.RecallCache = 0
	}
	rep.Memory, rep.Index, rep.RecallCache = cfg.Store.Memory, cfg.Store.Index, cfg.Retrieval.RecallCache
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	quiet := slog.New(slog.DiscardHandler)
	eng, st, err := storeopen.Engine(ctx, cfg, quiet)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	if err := fillRecallStore(ctx, eng, st, o.N, logf); err != nil {
		return rep, err
	}
	// Measure the store as it serves, not while it is still building
	// its indexes in the background (the IVF training, the full-text
	// index of a large store).
	if w, ok := st.(interface{ WaitIndex() }); ok {
		w.WaitIndex()
	}
	if o.Queries <= 0 {
		o.Queries = defaultRecallQueries
	}
	qs := recallQueries(o.N, o.Queries)
	rep.Queries = len(qs)
	if o.ANN > 0 {
		logf("checking the vector index against exact search on %d queries...", min(o.ANN, len(qs)))
		check, err := checkANN(ctx, eng, qs[:min(o.ANN, len(qs))])
		if err != nil {
			return rep, err
		}
		rep.ANN = &check
	}
	rows, _ := st.(interface{ RowCacheStats() (asked, hits uint64) })
	var asked0, hits0 uint64
	if rows != nil {
		asked0, hits0 = rows.RowCacheStats()
	}

	srv, err := natsembed.Start(natsembed.Options{StoreDir: filepath.Join(dir, "nats"), Port: -1})
	if err != nil {
		return rep, err
	}
	defer srv.Stop()
	svcConn, err := srv.Connect()
	if err != nil {
		return rep, err
	}
	defer svcConn.Close()
	svc := query.New(svcConn, eng, query.DefaultConfig(), prometheus.NewRegistry(), quiet)
	if err := svc.Start(); err != nil {
		return rep, err
	}
	defer svc.Stop()
	nc, err := srv.Connect()
	if err != nil {
		return rep, err
	}
	defer nc.Close()

	var viaHTTP recallFn
	if o.HTTP {
		url, token, stop, err := serveHTTPAPI(ctx, srv, dir, "main")
		if err != nil {
			return rep, err
		}
		defer stop()
		viaHTTP = httpRecall(url, token, max(slices.Max(o.Concurrency), 1))
	}

	seconds := time.Duration(o.Seconds * float64(time.Second))
	turn := seconds / recallTurns
	damon := watchDAMON("/")
	for _, c := range o.Concurrency {
		lv := RecallLevel{Concurrency: c}
		// A short warm-up at the level's number of callers, not measured:
		// the index's first searches, SQLite's page cache, and the
		// database connections that many callers keep open (each opened
		// with a cold cache and its statements unprepared; warmed by two
		// callers, the first second of sixteen was a third slower).
		if _, err := runRecalls(ctx, c, seconds/4, 0, qs, engineRecall(eng)); err != nil {
			return rep, err
		}
		// The ways take turns, each running for --seconds in all, so that
		// they meet the same machine: on a shared one whose speed drifts
		// by a tenth from one second to the next, a window each put the
		// drift into their ratio (NATS/engine ranged 0.77-1.06 over runs).
		ways := []recallWay{{name: "in process", recall: engineRecall(eng)}, {name: "over NATS", recall: natsRecall(nc, "main")}}
		if viaHTTP != nil {
			ways = append(ways, recallWay{name: "over HTTP", recall: viaHTTP})
		}
		for t := range recallTurns {
			for i := range ways {
				w := &ways[i]
				logf("%d concurrent callers: %s (turn %d of %d)...", c, w.name, t+1, recallTurns)
				s, err := runRecalls(ctx, c, turn, o.Rate, qs, w.recall)
				if err != nil {
					return rep, err
				}
				w.got.add(s)
			}
		}
		lv.Engine, lv.NATS = ways[0].got.figures(), ways[1].got.figures()
		lv.NATSShare = lv.NATS.QPS / max(lv.Engine.QPS, 1e-9)
		if viaHTTP != nil {
			f := ways[2].got.figures()
			lv.HTTP, lv.HTTPShare = &f, f.QPS/max(lv.NATS.QPS, 1e-9)
		}
		rep.Levels = append(rep.Levels, lv)
	}
	rep.KernelMonitor = damon.stop()
	if st, ok := eng.RecallCacheStats(); ok {
		rep.RecallCacheHitRate = st.HitRate
	}
	if rows != nil {
		asked, hits := rows.RowCacheStats()
		rate := float64(hits-hits0) / max(float64(asked-asked0), 1)
		rep.RowCacheHitRate = &rate
	}
	return rep, nil
}

// fillRecallStore adds memories until the store holds n: benchText's, in
// the agent's own scope, global and another agent's, embedded by the
// engine's embedder.
func fillRecallStore(ctx context.Context, eng *memory.Engine, st storeopen.EngineStore, n int, logf func(string, ...any)) error {
	have := st.Len()
	if have >= n {
		logf("reusing the store's %d memories", have)
		return nil
	}
	logf("storing %d memories...", n-have)
	rng := rand.New(rand.NewPCG(17, uint64(have)))
	emb := eng.Embedder()
	now := time.Now().UnixMilli()
	for done := have; done < n; {
		k := min(1000, n-done)
		texts := make([]string, k)
		for i := range texts {
			texts[i] = benchText(done + i)
		}
		vecs, err := emb.EmbedPassages(ctx, texts)
		if err != nil {
			return err
		}
		ms := make([]schemas.Memory, k)
		for i := range ms {
			ms[i] = schemas.Memory{Text: texts[i], Vector: vecs[i], Category: schemas.Categories[rng.IntN(len(schemas.Categories))],
				Scope: []string{"agent:main", "agent:main", schemas.GlobalScope, "agent:ops"}[rng.IntN(4)], Importance: 0.7,
				Timestamp: now - int64(n-done-i)*1000}
		}
		if err := st.Import(ctx, ms...); err != nil {
			return err
		}
		done += k
		if done%50_000 == 0 {
			logf("  %d", done)
		}
	}
	return nil
}

// checkANN runs each query's vector search in the bench agent's scopes
// (as its recalls read them) twice, through the index and exactly (more
// probes than the index has lists: every row scored), and compares the 10
// best.
func checkANN(ctx context.Context, eng *memory.Engine, qs []string) (ANNCheck, error) {
	const k = 10
	scopes := eng.Scopes().Filter("main")
	var found, want int
	var index, exact time.Duration
	for _, q := range qs {
		vec, err := eng.Embedder().EmbedQuery(ctx, q)
		if err != nil {
			return ANNCheck{}, err
		}
		t0 := time.Now()
		got, err := eng.Backend().VectorSearch(ctx, vec, engine.SearchOptions{Scopes: scopes, Limit: k})
		index += time.Since(t0)
		if err != nil {
			return ANNCheck{}, err
		}
		t0 = time.Now()
		best, err := eng.Backend().VectorSearch(ctx, vec, engine.SearchOptions{Scopes: scopes, Limit: k, Probes: math.MaxInt32})
		exact += time.Since(t0)
		if err != nil {
			return ANNCheck{}, err
		}
		if len(best) == 0 {
			continue
		}
		// Raw is the cosine, the same float32 dot product both ways.
		tenth := best[len(best)-1].Raw
		for _, h := range got[:min(len(got), len(best))] {
			if h.Raw >= tenth {
				found++
			}
		}
		want += len(best)
	}
	ms := func(d time.Duration) float64 { return Ms(d) / float64(max(len(qs), 1)) }
	return ANNCheck{Queries: len(qs), RecallAt10: float64(found) / float64(max(want, 1)), IndexMs: ms(index), ExactMs: ms(exact)}, nil
}

// recallFn answers one query; empty is true when no memory matched. A
// refused query is an error: a benchmark of refusals measures nothing.
type recallFn func(ctx context.Context, q string) (empty bool, err error)

func engineRecall(eng *memory.Engine) recallFn {
	return func(ctx context.Context, q string) (bool, error) {
		res, err := eng.Recall(ctx, memory.Agent("main"), q, memory.RecallOptions{Limit: 5})
		return len(res.Candidates) == 0, err
	}
}

// recallWay is one way of recalling a level measures, and what its turns
// measured so far.
type recallWay struct {
	name   string
	recall recallFn
	got    recallSample
}

// recallTurns is how many turns each way of recalling takes in a level.
const recallTurns = 4

// recallSample is what a run of callers measured: each recall's latency,
// the answers that found nothing, and the time and CPU the run took.
type recallSample struct {
	lats         []time.Duration
	empty        int
	elapsed, cpu time.Duration
}

// add counts o's recalls in s, as if one run had made them all.
func (s *recallSample) add(o recallSample) {
	s.lats = append(s.lats, o.lats...)
	s.empty += o.empty
	s.elapsed += o.elapsed
	s.cpu += o.cpu
}

// figures are s's rate, percentiles and CPU per recall, as a level reports
// them.
func (s recallSample) figures() RecallFigures {
	n := len(s.lats)
	return RecallFigures{
		QPS:             float64(n) / max(s.elapsed.Seconds(), 1e-9),
		P50Ms:           Ms(testkit.Percentile(s.lats, 0.5)),
		P99Ms:           Ms(testkit.Percentile(s.lats, 0.99)),
		CPUMsPerRecall:  Ms(s.cpu) / float64(max(n, 1)),
		Recalls:         n,
		Empty:           s.empty,
		SecondsMeasured: s.elapsed.Seconds(),
	}
}

// runRecalls runs c callers, each cycling through qs from its own offset,
// for d (each at least once), and measures them. With rate > 0 the callers
// are paced (RecallOptions.Rate): the k-th recall of the run is due k/rate
// seconds after the start, caller k mod c makes it, and its latency is
// measured from when it was due. A failed recall fails the run.
func runRecalls(ctx context.Context, c int, d time.Duration, rate float64, qs []string, recall recallFn) (recallSample, error) {
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	lats := make([][]time.Duration, c)
	empties := make([]int, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	for w := range c {
		wg.Go(func() {
			// Every caller makes at least one recall, however slow the
			// machine: a level always has figures.
			for i := 0; ; i++ {
				due := time.Now()
				if rate > 0 {
					due = start.Add(time.Duration(float64(i*c+w) / rate * float64(time.Second)))
				}
				if i > 0 && (!due.Before(deadline) || ctx.Err() != nil) {
					return
				}
				if wait := time.Until(due); wait > 0 {
					select {
					case <-time.After(wait):
					case <-ctx.Done():
						return
					}
				}
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				empty, err := recall(rctx, qs[(w*7+i)%len(qs)])
				cancel()
				if err != nil {
					errs[w] = err
					return
				}
				lats[w] = append(lats[w], time.Since(due))
				if empty {
					empties[w]++
				}
			}
		})
	}
	wg.Wait()
	s := recallSample{elapsed: time.Since(start), cpu: cpuTime() - cpu0}
	if rate > 0 {
		// Paced, the recalls were due over d: a run whose last answer came
		// before d ends has still run for d.
		s.elapsed = max(s.elapsed, d)
	}
	if err := errors.Join(errs...); err != nil {
		return recallSample{}, err
	}
	for w := range c {
		s.lats = append(s.lats, lats[w]...)
		s.empty += empties[w]
	}
	return s, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteText prints the figures for a person.
func (r RecallReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "recall throughput, %d memories x %d (store.memory %s, index %s), %d cores, %d queries in the mix\n",
		r.N, r.Dim, r.Memory, r.Index, r.Cores, r.Queries)
	if r.RecallCache > 0 {
		fmt.Fprintf(w, "  recall cache ON (%d answers): %.0f%% of recalls answered from it, so these figures are not the cost of a recall\n",
			r.RecallCache, 100*r.RecallCacheHitRate)
	} else {
		fmt.Fprintf(w, "  recall cache off: every recall is computed (--cache turns it on)\n")
	}
	if r.RowCacheHitRate != nil {
		fmt.Fprintf(w, "  row cache: %.0f%% of the rows recalls read were decoded before (--queries sets how many queries the mix repeats)\n",
			100**r.RowCacheHitRate)
	}
	if a := r.ANN; a != nil {
		fmt.Fprintf(w, "  vector index: recall@10 %.3f against exact search on %d queries (a search %.2f ms, exact %.2f ms)\n",
			a.RecallAt10, a.Queries, a.IndexMs, a.ExactMs)
	}
	if k := r.KernelMonitor; k != nil {
		fmt.Fprintf(w, "  kernel: DAMON's access monitor (kdamond) was on, sampling every %.0f ms, and took %.2f s of CPU while the recalls ran,\n"+
			"    on the cores they run on: each of its rounds takes a core while it runs, which shows in p99 when rounds are long (README, Benchmarks)\n",
			k.SampleMs, k.CPUSeconds)
	}
	if r.Rate > 0 {
		fmt.Fprintf(w, "  paced: the callers start %.0f recalls a second between them; latency runs from each recall's scheduled start\n", r.Rate)
	}
	fmt.Fprintf(w, "  %-8s %28s   %28s   %s\n", "callers", "in process (engine)", "over NATS (query service)", "NATS/engine")
	fmt.Fprintf(w, "  %-8s %9s %8s %9s   %9s %8s %9s\n", "", "recalls/s", "p50 ms", "p99 ms", "recalls/s", "p50 ms", "p99 ms")
	for _, l := range r.Levels {
		fmt.Fprintf(w, "  %-8d %9.0f %8.2f %9.2f   %9.0f %8.2f %9.2f   %.2f\n", l.Concurrency,
			l.Engine.QPS, l.Engine.P50Ms, l.Engine.P99Ms, l.NATS.QPS, l.NATS.P50Ms, l.NATS.P99Ms, l.NATSShare)
	}
	fmt.Fprintf(w, "  CPU per recall (ms, whole process):")
	for _, l := range r.Levels {
		fmt.Fprintf(w, " %d: %.2f/%.2f", l.Concurrency, l.Engine.CPUMsPerRecall, l.NATS.CPUMsPerRecall)
	}
	fmt.Fprintln(w, " (engine/NATS)")
	if len(r.Levels) > 0 && r.Levels[0].HTTP != nil {
		fmt.Fprintf(w, "  %-8s %28s   %s\n", "callers", "over HTTP (POST /v1/recall)", "HTTP/NATS")
		for _, l := range r.Levels {
			fmt.Fprintf(w, "  %-8d %9.0f %8.2f %9.2f   %.2f  (CPU %.2f ms a recall)\n", l.Concurrency,
				l.HTTP.QPS, l.HTTP.P50Ms, l.HTTP.P99Ms, l.HTTPShare, l.HTTP.CPUMsPerRecall)
		}
	}
	return nil
}
