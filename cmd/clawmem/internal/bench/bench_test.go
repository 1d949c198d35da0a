package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/vecindex"
)

func TestStoreWritesThenAColdOpen(t *testing.T) {
	dir := t.TempDir()
	var rep StoreReport
	if err := storeWrites(context.Background(), dir, 1000, 32, 100, &rep, t.Logf); err != nil {
		t.Fatal(err)
	}
	if rep.Inserted != 1100 || rep.LoadRate <= 0 || rep.InsertRate <= 0 {
		t.Fatalf("writes: %+v", rep)
	}
	// The writes closed cleanly: the first open reads the segment; an open
	// without it reads the database, and so does the open after that one.
	for _, c := range []struct {
		noSegment bool
		from      string
	}{{false, "segment"}, {true, "database"}, {false, "database"}} {
		open, err := OpenOnce(context.Background(), dir, 32, c.noSegment, "exact")
		if err != nil {
			t.Fatal(err)
		}
		if open.Memories != 1100 || open.SearchP50ms <= 0 || open.OpenSeconds <= 0 || open.From != c.from ||
			open.FirstExactSeconds < open.OpenSeconds || open.Mem.RSS <= 0 {
			t.Fatalf("open (noSegment %v): %+v, want from the %s", c.noSegment, open, c.from)
		}
	}
}

// The approximate index is trained by an open and saved at its close; the
// cold opens in both memory modes then load it from the segment and answer
// with the recall of the exact search's top 10.
func TestStoreApproximateColdOpens(t *testing.T) {
	dir := t.TempDir()
	var rep StoreReport
	if err := storeWrites(context.Background(), dir, 5000, 16, 0, &rep, t.Logf); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"ivf", "int8"} {
		// Each mode's codes are trained by an open in that mode, as the
		// bench does (float32 keeps bit codes, int8 int8 codes).
		mem := vecindex.Float32
		if mode == "int8" {
			mem = vecindex.Int8
		}
		if took, err := trainIVF(context.Background(), dir, 16, mem); err != nil || took <= 0 {
			t.Fatalf("train: %v %v", took, err)
		}
		open, err := OpenOnce(context.Background(), dir, 16, false, mode)
		if err != nil {
			t.Fatal(err)
		}
		if open.Index != mode || open.From != "segment" || open.Memories != 5000 ||
			open.IVFP50ms <= 0 || open.Recall10 < 0.9 || open.QueriedMem.RSS <= 0 || open.HybridP50ms <= 0 {
			t.Fatalf("%s: %+v", mode, open)
		}
		// Both first answers come after the open. In float32 mode the
		// exact one is measured first, so the approximate one is later;
		// the int8 mode times its exact scan after the memory figures and
		// adds it to the open, so the two are not ordered.
		if open.FirstExactSeconds <= open.OpenSeconds || open.FirstIVFSeconds < open.OpenSeconds ||
			(mode == "ivf" && open.FirstIVFSeconds < open.FirstExactSeconds) {
			t.Fatalf("%s: open %v s, first exact %v s, first approximate %v s", mode, open.OpenSeconds, open.FirstExactSeconds, open.FirstIVFSeconds)
		}
	}
	if _, err := OpenOnce(context.Background(), dir, 16, false, "hnsw"); err == nil {
		t.Fatal("an unknown index mode was accepted")
	}
}

// A small pipeline run captures every event it offers and measures each
// figure it reports.
func TestPipelineCapturesEveryEvent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	rep, err := Pipeline(context.Background(), PipelineOptions{Preload: 200, Events: 200, IngestEvents: 200, Queries: 10,
		Rate: 2000, Index: "auto", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Preloaded != 200 || rep.Captured != 200 {
		t.Fatalf("preloaded %d, captured %d; want 200 and 200", rep.Preloaded, rep.Captured)
	}
	if rep.IngestHTTP.Events != 200 || rep.IngestDirect.Events != 200 || rep.FreshP99ms <= 0 || rep.RecallNATS[0] <= 0 || rep.RecallEngine[0] <= 0 {
		t.Fatalf("figures: %+v", rep)
	}
}

// A small cluster run: the replica catches up whole and answers as the
// writer does.
func TestClusterReplicaAgreesWithTheWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster")
	}
	rep, err := Cluster(context.Background(), ClusterOptions{N: 3000, Dim: 32, Nodes: 3, Queries: 200, LoadSeconds: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	if rep.SameTop10 != 1 || rep.CatchUpPerSec <= 0 || rep.FreshP99ms <= 0 || rep.Recall1PerSec <= 0 || rep.Recall2PerSec <= 0 || rep.LogBytesPerMemory <= 0 {
		t.Fatalf("report: %+v", rep)
	}
}

// --contend's processes run until stopped, and are stopped; a burner ends
// by itself after its bound.
func TestContend(t *testing.T) {
	stop, err := contend(context.Background(), []string{"sh", "-c", "sleep 30"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the contending processes were not stopped")
	}
	if _, err := contend(context.Background(), nil, 1); err == nil {
		t.Error("contend without a command")
	}
	start := time.Now()
	Burn(50 * time.Millisecond)
	if el := time.Since(start); el < 50*time.Millisecond || el > 5*time.Second {
		t.Errorf("Burn(50ms) took %v", el)
	}
}

// The console bench stores its memories and times every page, each of
// which must answer 200 (it fails otherwise).
func TestConsoleBench(t *testing.T) {
	rep, err := Console(context.Background(), ConsoleOptions{N: 300, Requests: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Memories != 300 || len(rep.Pages) != 6 {
		t.Fatalf("%+v", rep)
	}
	for _, p := range rep.Pages {
		if p.P50ms <= 0 || p.P99ms < p.P50ms {
			t.Fatalf("page %+v", p)
		}
	}
}

// bench recall measures real recalls at each level, both in process and
// over NATS (every recall answered, most with memories) with the recall
// cache off unless asked for, and a second run on the same directory
// reuses the store.
func TestRecallThroughput(t *testing.T) {
	dir := t.TempDir()
	o := RecallOptions{N: 3000, Dim: 64, Concurrency: []int{1, 4}, Seconds: 0.5, Dir: dir}
	rep, err := Recall(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Levels) != 2 || rep.Index != "auto" || rep.Queries != defaultRecallQueries || rep.RecallCache != 0 || rep.RecallCacheHitRate != 0 {
		t.Fatalf("report: %+v", rep)
	}
	// The mix repeats: the store's row cache holds some of the rows its
	// recalls read.
	if r := rep.RowCacheHitRate; r == nil || *r <= 0 || *r > 1 {
		t.Fatalf("row cache hit rate: %v", r)
	}
	for _, l := range rep.Levels {
		for name, f := range map[string]RecallFigures{"engine": l.Engine, "nats": l.NATS} {
			if f.Recalls < l.Concurrency || f.QPS <= 0 || f.P50Ms <= 0 || f.P99Ms < f.P50Ms || f.CPUMsPerRecall <= 0 || f.Empty > f.Recalls/2 {
				t.Errorf("%d callers, %s: %+v", l.Concurrency, name, f)
			}
		}
	}
	var logs []string
	o.Concurrency, o.Cache, o.Logf = []int{2}, true, func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	cachedRep, err := Recall(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) == 0 || !strings.Contains(logs[0], "reusing the store's 3000 memories") {
		t.Fatalf("second run: %q", logs)
	}
	// The mix repeats (each level's NATS run asks what its in-process run
	// asked first): with the cache, some recalls are answered from it.
	if cachedRep.RecallCache != memory.DefaultRecallCacheSize || cachedRep.RecallCacheHitRate <= 0 {
		t.Errorf("with --cache: recall cache %d, hit rate %.2f", cachedRep.RecallCache, cachedRep.RecallCacheHitRate)
	}
	// --http adds a run over the HTTP API, every recall answered.
	o.HTTP, o.Cache = true, false
	httpRep, err := Recall(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if l := httpRep.Levels[0]; l.HTTP == nil || l.HTTP.Recalls < 2 || l.HTTP.QPS <= 0 || l.HTTP.Empty > l.HTTP.Recalls/2 || l.HTTPShare <= 0 {
		t.Fatalf("--http: %+v", l)
	}
	if rep.Levels[0].HTTP != nil {
		t.Fatal("an HTTP run without --http")
	}
	// Paced, the callers start the run's recalls on a schedule: the k-th is
	// due k/rate seconds in, so 0.5 s at 40 a second is 20 recalls whatever
	// the machine's speed, each caller making every second one.
	o.HTTP, o.Rate, o.Concurrency, o.Queries, o.ANN = false, 40, []int{2}, 7, 5
	pacedRep, err := Recall(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// --ann 5 (of a mix of 7): 3,000 rows are below the index's training
	// size, so its search is exact and finds every one of the ten best.
	if a := pacedRep.ANN; a == nil || a.Queries != 5 || a.RecallAt10 != 1 || a.IndexMs <= 0 || a.ExactMs <= 0 {
		t.Fatalf("--ann 5: %+v", a)
	}
	if rep.ANN != nil {
		t.Fatal("a vector index check without --ann")
	}
	if pacedRep.Queries != 7 {
		t.Fatalf("--queries 7: a mix of %d", pacedRep.Queries)
	}
	if pacedRep.Rate != 40 || rep.Rate != 0 {
		t.Fatalf("rate in the reports: %v paced, %v not", pacedRep.Rate, rep.Rate)
	}
	for name, f := range map[string]RecallFigures{"engine": pacedRep.Levels[0].Engine, "nats": pacedRep.Levels[0].NATS} {
		if f.Recalls != 20 || f.QPS <= 0 || f.QPS > 41 || f.P50Ms <= 0 || f.P99Ms < f.P50Ms {
			t.Errorf("paced, %s: %+v", name, f)
		}
	}
	for _, c := range []struct {
		r    *RecallReport
		want string
	}{{&rep, "recall cache off"}, {&cachedRep, "recall cache ON (256 answers)"}, {&httpRep, "over HTTP (POST /v1/recall)"},
		{&pacedRep, "paced: the callers start 40 recalls a second"}, {&rep, "row cache: "},
		{&pacedRep, "vector index: recall@10 1.000 against exact search on 5 queries"}} {
		r, want := c.r, c.want
		var out strings.Builder
		if err := r.WriteText(&out); err != nil || !strings.Contains(out.String(), "over NATS") || !strings.Contains(out.String(), want) {
			t.Fatalf("text: %q %v, want it to say %q", out.String(), err, want)
		}
	}
}

// A level's turns add up as one run: every latency in the percentiles,
// the rate over the turns' time together, CPU over all recalls.
func TestRecallSampleAdd(t *testing.T) {
	var all recallSample
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	all.add(recallSample{lats: []time.Duration{ms(1), ms(2), ms(3)}, empty: 1, elapsed: time.Second, cpu: ms(30)})
	all.add(recallSample{lats: []time.Duration{ms(100)}, elapsed: time.Second, cpu: ms(10)})
	f := all.figures()
	if f.Recalls != 4 || f.QPS != 2 || f.Empty != 1 || f.SecondsMeasured != 2 || f.CPUMsPerRecall != 10 || f.P99Ms != 100 || f.P50Ms > 3 {
		t.Fatalf("figures of two turns: %+v", f)
	}
	if f := (recallSample{}).figures(); f.Recalls != 0 || f.QPS != 0 {
		t.Fatalf("figures of nothing: %+v", f)
	}
}
