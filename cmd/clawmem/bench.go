package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure performance and print figures",
	}
	cmd.AddCommand(a.benchStoreCmd(), a.benchStoreOpenCmd(), a.benchPipelineCmd())
	return cmd
}

// storeBench is what `clawmem bench store` reports.
type storeBench struct {
	Index       vecindex.BenchReport `json:"index"`
	ExactRatio  [2]float64           `json:"exactRatioToFloorP50P99"`
	Inserted    int                  `json:"inserted"`
	LoadRate    float64              `json:"loadPerSecond"`
	InsertRate  float64              `json:"insertPerSecondAtN"`
	Open        openReport           `json:"open"`
	RawVectorMB float64              `json:"rawVectorMB"`
	RSSLimitMB  float64              `json:"rssLimitMB"`
}

// openReport is what the child process measuring a cold open reports.
type openReport struct {
	OpenSeconds float64 `json:"openSeconds"`
	Memories    int     `json:"memories"`
	RSSMB       float64 `json:"rssMB"`
	PeakRSSMB   float64 `json:"peakRssMB"`
	SearchP50ms float64 `json:"storeSearchP50ms"`
}

func (a *app) benchStoreCmd() *cobra.Command {
	var n, dim, queries, extra int
	var dir string
	var skipIndex bool
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Benchmark the vector index and the default store",
		Long: `Measures, at N memories of DIM dimensions:
  - the memory floor: streaming the whole vector matrix once (every search figure is also given as a ratio to it)
  - exact and approximate (IVF) top-10 search latency, IVF recall@10 and build time
  - insert throughput of a single batching writer with N memories already stored
  - a cold open of the store (loading every vector) and the process RSS afterwards`,
		Example: "  clawmem bench store\n  clawmem bench store --n 20000 --dim 384 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep storeBench
			logf := func(format string, args ...any) {
				if !a.jsonOut {
					fmt.Fprintf(a.stderr, format+"\n", args...)
				}
			}
			if !skipIndex {
				logf("index: %d x %d, %d queries...", n, dim, queries)
				ir, err := vecindex.RunBench(n, dim, queries, a.progress())
				if err != nil {
					return err
				}
				rep.Index = ir
				rep.ExactRatio = [2]float64{ratio(ir.ExactP50, ir.FloorP50), ratio(ir.ExactP99, ir.FloorP50)}
			}
			if dir == "" {
				tmp, err := os.MkdirTemp("", "clawmem-bench-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			if err := benchStoreWrites(cmd.Context(), dir, n, dim, extra, &rep, logf); err != nil {
				return err
			}
			logf("store: cold open in a fresh process...")
			open, err := coldOpen(cmd.Context(), dir, dim)
			if err != nil {
				return err
			}
			rep.Open = open
			rep.RawVectorMB = float64(rep.Inserted) * float64(dim) * 4 / (1 << 20)
			rep.RSSLimitMB = 1.5*rep.RawVectorMB + 150
			if a.jsonOut {
				return a.printJSON(rep)
			}
			printStoreBench(a, rep, skipIndex)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&n, "n", 100_000, "memories")
	f.IntVar(&dim, "dim", 1024, "vector dimensions")
	f.IntVar(&queries, "queries", 200, "search queries per mode")
	f.IntVar(&extra, "extra", 10_000, "memories inserted after N to measure insert throughput")
	f.StringVar(&dir, "dir", "", "store directory to use (default: a temporary one, removed afterwards)")
	f.BoolVar(&skipIndex, "skip-index", false, "skip the in-memory index benchmark")
	return cmd
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// progress is where long benchmarks report how far they are: stderr,
// unless the output is JSON for a machine.
func (a *app) progress() io.Writer {
	if a.jsonOut {
		return io.Discard
	}
	return a.stderr
}

func printStoreBench(a *app, r storeBench, skipIndex bool) {
	w := a.stdout
	if !skipIndex {
		ir := r.Index
		fmt.Fprintf(w, "vector index, %d x %d\n", ir.N, ir.Dim)
		fmt.Fprintf(w, "  memory floor (stream matrix once)  p50 %8.2f ms\n", ms(ir.FloorP50))
		fmt.Fprintf(w, "  exact top-10                       p50 %8.2f ms (%.2fx floor)  p99 %8.2f ms (%.2fx floor)\n",
			ms(ir.ExactP50), r.ExactRatio[0], ms(ir.ExactP99), r.ExactRatio[1])
		fmt.Fprintf(w, "  approximate (IVF) top-10           p50 %8.2f ms  p99 %8.2f ms  recall@10 %.4f  build %.1f s\n",
			ms(ir.IVFP50), ms(ir.IVFP99), ir.IVFRecall10, ir.IVFBuild.Seconds())
	}
	fmt.Fprintf(w, "store (sqlite), %d memories\n", r.Inserted)
	fmt.Fprintf(w, "  bulk load                          %8.0f memories/s\n", r.LoadRate)
	fmt.Fprintf(w, "  insert at N (batched writer)       %8.0f memories/s\n", r.InsertRate)
	fmt.Fprintf(w, "  cold open (load all vectors)       %8.2f s\n", r.Open.OpenSeconds)
	fmt.Fprintf(w, "  RSS after open                     %8.0f MB (peak %.0f MB; limit 1.5 x %.0f MB raw + 150 = %.0f MB)\n",
		r.Open.RSSMB, r.Open.PeakRSSMB, r.RawVectorMB, r.RSSLimitMB)
	fmt.Fprintf(w, "  store vector search (exact)        p50 %8.2f ms\n", r.Open.SearchP50ms)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchBatch is the writer's batch size, as the store worker batches.
const benchBatch = 500

var benchWords = strings.Fields(`docker compose server deploy port config database backup user prefers dark mode
tea coffee meeting monday project deadline python golang rust kubernetes cluster token api key editor vim emacs
invoice customer email phone birthday travel flight hotel budget report review release bug fix test build cache`)

// benchMemories makes count deterministic memories starting at offset.
func benchMemories(rng *rand.Rand, offset, count, dim int) []schemas.Memory {
	out := make([]schemas.Memory, count)
	for i := range out {
		words := make([]string, 8)
		for j := range words {
			words[j] = benchWords[rng.IntN(len(benchWords))]
		}
		v := make([]float32, dim)
		var norm float64
		for j := range v {
			x := rng.NormFloat64()
			v[j] = float32(x)
			norm += x * x
		}
		inv := float32(1 / math.Sqrt(norm))
		for j := range v {
			v[j] *= inv
		}
		out[i] = schemas.Memory{
			Text:       fmt.Sprintf("memory %d: %s", offset+i, strings.Join(words, " ")),
			Vector:     v,
			Category:   schemas.Categories[rng.IntN(5)],
			Scope:      []string{"global", "agent:main", "agent:ops"}[rng.IntN(3)],
			Importance: 0.7,
		}
	}
	return out
}

func benchStoreWrites(ctx context.Context, dir string, n, dim, extra int, rep *storeBench, logf func(string, ...any)) error {
	s, err := sqlitestore.Open(ctx, dir, sqlitestore.Options{Dimensions: dim})
	if err != nil {
		return err
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	have := s.Len()
	start := time.Now()
	for have < n {
		batch := min(benchBatch, n-have)
		if _, err := s.Add(ctx, benchMemories(rng, have, batch, dim)...); err != nil {
			return err
		}
		have += batch
		if have%20_000 == 0 {
			logf("store: loaded %d", have)
		}
	}
	if el := time.Since(start); have > 0 && el > 0 {
		rep.LoadRate = float64(n) / el.Seconds()
	}
	start = time.Now()
	for done := 0; done < extra; done += benchBatch {
		if _, err := s.Add(ctx, benchMemories(rng, have+done, min(benchBatch, extra-done), dim)...); err != nil {
			return err
		}
	}
	if extra > 0 {
		rep.InsertRate = float64(extra) / time.Since(start).Seconds()
	}
	rep.Inserted = s.Len()
	return nil
}

// coldOpen measures opening the store in a fresh process, so its RSS is the
// store's and not the benchmark's.
func coldOpen(ctx context.Context, dir string, dim int) (openReport, error) {
	var rep openReport
	exe, err := os.Executable()
	if err != nil {
		return rep, err
	}
	out, err := exec.CommandContext(ctx, exe, "bench", "store-open", "--dir", dir, "--dim", strconv.Itoa(dim)).Output()
	if err != nil {
		return rep, fmt.Errorf("cold open: %w", err)
	}
	return rep, json.Unmarshal(out, &rep)
}

func (a *app) benchStoreOpenCmd() *cobra.Command {
	var dir string
	var dim int
	cmd := &cobra.Command{
		Use:    "store-open",
		Short:  "Open a store, report time and RSS as JSON (used by bench store)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			s, err := sqlitestore.Open(cmd.Context(), dir, sqlitestore.Options{Dimensions: dim})
			if err != nil {
				return err
			}
			defer s.Close()
			rep := openReport{OpenSeconds: time.Since(start).Seconds(), Memories: s.Len()}
			runtime.GC()
			rep.RSSMB, rep.PeakRSSMB = rssMB()
			rng := rand.New(rand.NewPCG(3, 4))
			var lat []time.Duration
			for i := 0; i < 50; i++ {
				q := benchMemories(rng, 0, 1, dim)[0].Vector
				t0 := time.Now()
				if _, err := s.VectorSearch(cmd.Context(), q, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10}); err != nil {
					return err
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			rep.SearchP50ms = ms(lat[len(lat)/2])
			return a.printJSON(rep)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "store directory")
	cmd.Flags().IntVar(&dim, "dim", 1024, "vector dimensions")
	return cmd
}

// rssMB reads the current and peak resident set size from /proc.
func rssMB() (cur, peak float64) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "VmRSS:":
			cur = kb / 1024
		case "VmHWM:":
			peak = kb / 1024
		}
	}
	return cur, peak
}
