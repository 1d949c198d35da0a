package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/internal/bench"
)

func (a *app) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure performance and print figures",
	}
	cmd.AddCommand(a.benchStoreCmd(), a.benchStoreOpenCmd(), a.benchPipelineCmd())
	return cmd
}

func (a *app) benchStoreCmd() *cobra.Command {
	o := bench.StoreOptions{}
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
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.OpenCommand = []string{exe, "bench", "store-open"}
			o.Progress = a.progress()
			o.Logf = func(format string, args ...any) { fmt.Fprintf(a.progress(), format+"\n", args...) }
			rep, err := bench.Store(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
			}
			printStoreBench(a.stdout, rep, o.SkipIndex)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.N, "n", 100_000, "memories")
	f.IntVar(&o.Dim, "dim", 1024, "vector dimensions")
	f.IntVar(&o.Queries, "queries", 200, "search queries per mode")
	f.IntVar(&o.Extra, "extra", 10_000, "memories inserted after N to measure insert throughput")
	f.StringVar(&o.Dir, "dir", "", "store directory to use (default: a temporary one, removed afterwards)")
	f.BoolVar(&o.SkipIndex, "skip-index", false, "skip the in-memory index benchmark")
	return cmd
}

// progress is where long benchmarks report how far they are: stderr,
// unless the output is JSON for a machine.
func (a *app) progress() io.Writer {
	if a.jsonOut {
		return io.Discard
	}
	return a.stderr
}

func printStoreBench(w io.Writer, r bench.StoreReport, skipIndex bool) {
	ms := bench.Ms
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

func (a *app) benchStoreOpenCmd() *cobra.Command {
	var dir string
	var dim int
	cmd := &cobra.Command{
		Use:    "store-open",
		Short:  "Open a store, report time and RSS as JSON (used by bench store)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := bench.OpenOnce(cmd.Context(), dir, dim)
			if err != nil {
				return err
			}
			return a.printJSON(rep)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "store directory")
	cmd.Flags().IntVar(&dim, "dim", 1024, "vector dimensions")
	return cmd
}

func (a *app) benchPipelineCmd() *cobra.Command {
	o := bench.PipelineOptions{}
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "pipeline",
		Short: "Benchmark ingest, capture-to-store throughput, freshness and recall over NATS",
		Long: `Runs the whole pipeline in-process on a temporary data dir with the local embedder:
  - hook ingest: events/s accepted and persisted, through HTTP and by direct NATS publish
  - end to end: captured memories/s with PRELOAD memories already stored, and freshness
    (publish → recallable) p50/p99
  - recall over NATS request-reply next to the engine's own recall, p50/p99`,
		Example: "  clawmem bench pipeline\n  clawmem bench pipeline --preload 20000 --index approximate --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			o.Logf = func(format string, args ...any) { fmt.Fprintf(a.progress(), format+"\n", args...) }
			rep, err := bench.Pipeline(cmd.Context(), o)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rep)
			}
			w := a.stdout
			fmt.Fprintf(w, "pipeline, local embedder, %s index, %d memories preloaded (%.1f s)\n", rep.Index, rep.Preloaded, rep.PreloadSec)
			fmt.Fprintf(w, "  ingest HTTP      %8.0f events/s  (p50 %.2f ms, p99 %.2f ms, %d events)\n", rep.IngestHTTP.EventsPerSec, rep.IngestHTTP.P50Ms, rep.IngestHTTP.P99Ms, rep.IngestHTTP.Events)
			fmt.Fprintf(w, "  ingest direct    %8.0f events/s  (p50 %.2f ms, p99 %.2f ms, %d events)\n", rep.IngestDirect.EventsPerSec, rep.IngestDirect.P50Ms, rep.IngestDirect.P99Ms, rep.IngestDirect.Events)
			fmt.Fprintf(w, "  end to end       %8.0f captured memories/s (%d memories, offered at %.0f/s)\n", rep.CapturePerSec, rep.Captured, rep.OfferedPerSec)
			fmt.Fprintf(w, "  freshness        p50 %.1f ms  p99 %.1f ms (publish → stored and recallable)\n", rep.FreshP50ms, rep.FreshP99ms)
			fmt.Fprintf(w, "  recall, engine   p50 %.2f ms  p99 %.2f ms\n", rep.RecallEngine[0], rep.RecallEngine[1])
			fmt.Fprintf(w, "  recall, NATS     p50 %.2f ms  p99 %.2f ms  (p99 overhead %+.2f ms)\n", rep.RecallNATS[0], rep.RecallNATS[1], rep.RecallNATS[1]-rep.RecallEngine[1])
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Preload, "preload", 100_000, "memories stored before measuring")
	f.IntVar(&o.Events, "events", 20_000, "agent_end events for the end-to-end run (one new memory each)")
	f.IntVar(&o.IngestEvents, "ingest-events", 20_000, "events per ingest benchmark")
	f.IntVar(&o.Queries, "queries", 300, "recall queries")
	f.StringVar(&o.Index, "index", "auto", "vector index: auto, exact or approximate")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.IntVar(&o.Rate, "rate", 1000, "end-to-end publish rate, events/s (the sustained load freshness is measured at)")
	return cmd
}
