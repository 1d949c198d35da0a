// Package bench is clawmem's performance harness, `clawmem bench`: the
// vector index and the default store at a given size (search latency
// against the memory-bandwidth floor, approximate recall, inserts, cold
// opens and resident memory, measured in a child process), the whole
// pipeline in process (hook ingest, capture to store, freshness, recall
// over NATS), the memory log on a JetStream cluster (replicas catching up,
// recall with one and two replicas, capture by several writer processes)
// and the web console's server time. Each run prints its figures, or a
// JSON report a later run can be compared with. The package also holds the
// commands that run them, so that cmd/clawmem only adds them.
package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
)

// CLI is what the bench commands take from clawmem's command line: its
// way of printing.
type CLI interface {
	PrintJSON(v any) error
	// Emit prints v as JSON with --json, else as text writes it.
	Emit(v any, text func(io.Writer) error) error
	// Progress is where a long benchmark says how far it is: stderr,
	// unless the output is JSON for a machine.
	Progress() io.Writer
}

// Command is `clawmem bench` with its subcommands.
func Command(cli CLI) *cobra.Command { return commands{cli}.benchCmd() }

type commands struct{ CLI }

func (c commands) benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure performance and print figures",
	}
	cmd.AddCommand(c.storeCmd(), c.storeOpenCmd(), c.pipelineCmd(), c.clusterCmd(), c.recallCmd(), c.consoleCmd(), c.burnCmd())
	return cmd
}

func (c commands) recallCmd() *cobra.Command {
	o := RecallOptions{}
	var levels []int
	var cpuProfile, allocProfile string
	cmd := &cobra.Command{
		Use:   "recall",
		Short: "Benchmark recall throughput: in process and over NATS, at several numbers of concurrent callers",
		Long: `Builds a store of N memories of DIM dimensions (the default configuration and the local embedder;
--dir keeps it for the next run), then for each --concurrency level runs the same query mix for
--seconds in process against the engine and over NATS through the query service (default recall:
hybrid, 5 memories), and prints recalls/s, p50 and p99 for both and the process's CPU time per recall.
The two take four turns each, alternating, so that both meet the machine as it is at the time.
The recall cache (retrieval.recallCache) is off, since the mix repeats its queries: every recall is
computed. --cache turns it on, to measure what it saves. The store's row cache (the rows recalls
read, kept decoded) stays on, as in clawmem up: the report says what share of rows it held, and
--queries sets how many queries the mix repeats (a larger mix reads more rows for the first time).
--http adds a run over the HTTP API (POST /v1/recall on the hook ingest listener, as clawmem up
serves it) and its rate over NATS's. --ann N first checks the vector index against exact search on N
queries of the mix: the share of exact search's 10 best it finds (recall@10), and each way's time, so
that a faster index shows what it gives up.

By default each caller asks again as soon as it is answered, which measures the most recalls a second
the service can answer, and the latency of recalls queued behind one another at that rate. --rate paces
the callers instead: between them they start that many recalls a second on a fixed schedule, and each
recall's latency runs from its scheduled start (a recall started late because its caller was still
waiting counts that wait), which measures the latency at a given load.

On Linux the report also says when the kernel's DAMON access monitor (kdamond) was on, and the CPU it
took while the recalls ran: on the 2-core virtual machine clawmem's figures come from, each of its
sampling rounds held a core for 14-56 ms, which shows in p99 and which no setting of clawmem's avoids.`,
		Example: "  clawmem bench recall\n  clawmem bench recall --cache\n  clawmem bench recall --concurrency 16 --rate 300\n  clawmem bench recall --http --concurrency 16\n  clawmem bench recall --ann 200 --concurrency 16\n  clawmem bench recall --n 1000000 --dim 1024 --memory float32 --concurrency 16 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.N < 1 || o.Dim < 1 || o.Seconds <= 0 || len(levels) == 0 {
				return fmt.Errorf("--n, --dim, --seconds and --concurrency must be positive")
			}
			if o.Rate < 0 || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate > 1e6 {
				return fmt.Errorf("--rate %v: want 0 (callers not paced) up to 1000000 recalls a second", o.Rate)
			}
			for _, l := range levels {
				if l < 1 || l > 4096 {
					return fmt.Errorf("--concurrency %d: want 1 to 4096 callers", l)
				}
			}
			o.Concurrency = levels
			stop, err := startProfiles(cpuProfile, allocProfile)
			if err != nil {
				return err
			}
			o.Logf = func(format string, args ...any) { fmt.Fprintf(c.Progress(), format+"\n", args...) }
			rep, err := Recall(cmd.Context(), o)
			if err := stop(); err != nil {
				return err
			}
			if err != nil {
				return err
			}
			return c.Emit(rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.N, "n", 100_000, "memories")
	f.IntVar(&o.Dim, "dim", 384, "vector dimensions")
	f.IntSliceVar(&levels, "concurrency", []int{1, 4, 16, 64}, "concurrent callers, one run per value")
	f.Float64Var(&o.Seconds, "seconds", 5, "length of each run")
	f.Float64Var(&o.Rate, "rate", 0, "pace the callers: recalls a second they start between them, latency from each one's scheduled start (0: each caller asks again once answered)")
	f.StringVar(&o.Memory, "memory", "", "store.memory: float32 or int8 (default: the configuration's)")
	f.StringVar(&o.Dir, "dir", "", "keep the store in this directory and reuse it (default: a scratch directory)")
	f.BoolVar(&o.HTTP, "http", false, "also run each level over the HTTP API (POST /v1/recall on the ingest listener)")
	f.BoolVar(&o.Cache, "cache", false, "keep the recall cache on (retrieval.recallCache's default); off, every recall is computed")
	f.IntVar(&o.Queries, "queries", defaultRecallQueries, "queries in the mix the callers repeat")
	f.IntVar(&o.ANN, "ann", 0, "first check the vector index against exact search on this many queries of the mix (recall@10)")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.StringVar(&allocProfile, "allocprofile", "", "write the run's allocation profile to this file")
	return cmd
}

// startProfiles writes a CPU profile to cpu until stop is called, and at
// stop the allocation profile of the whole run to allocs (an empty path:
// not that profile): `go tool pprof -sample_index=alloc_space` shows what
// allocated most.
func startProfiles(cpu, allocs string) (stop func() error, err error) {
	stopCPU := func() {}
	if cpu != "" {
		f, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stopCPU = func() { pprof.StopCPUProfile(); f.Close() }
	}
	return func() error {
		stopCPU()
		if allocs == "" {
			return nil
		}
		f, err := os.Create(allocs)
		if err != nil {
			return err
		}
		defer f.Close()
		return pprof.Lookup("allocs").WriteTo(f, 0)
	}, nil
}

func (c commands) consoleCmd() *cobra.Command {
	o := ConsoleOptions{}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Benchmark the web console's server time",
		Long: `Stores N memories in a fresh store (local embedder) and measures the web console's server time,
its handler called directly, p50 and p99 over --requests each: the memories list (first page, a page
halfway down by cursor, a text filter, an agent's view), a memory's page and an explained search.`,
		Example: "  clawmem bench console\n  clawmem bench console --n 20000 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.N < 1 || o.Requests < 1 {
				return fmt.Errorf("--n and --requests must be at least 1")
			}
			o.Logf = func(format string, args ...any) { fmt.Fprintf(c.Progress(), format+"\n", args...) }
			rep, err := Console(cmd.Context(), o)
			if err != nil {
				return err
			}
			return c.Emit(rep, rep.WriteText)
		},
	}
	cmd.Flags().IntVar(&o.N, "n", 100_000, "memories stored first")
	cmd.Flags().IntVar(&o.Requests, "requests", 50, "requests per page")
	return cmd
}

func (c commands) storeCmd() *cobra.Command {
	o := StoreOptions{}
	var baseline string
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Benchmark the vector index and the default store",
		Long: `Measures, at N memories of DIM dimensions:
  - the memory floor: streaming the whole vector matrix once (every search figure is also given as a ratio to it)
  - exact and approximate (IVF) top-10 search latency, IVF recall@10 and build time
  - insert throughput of a single batching writer with N memories already stored
  - a cold open of the store from its vector segment, and one from the database, and the process RSS
  - the approximate index's training, and cold opens of it (its clustering saved in the segment) in the
    float32 and int8 memory modes: time to the first exact and approximate answers, resident memory
    (anonymous and mapped), search latency and recall@10 through the store
With --baseline FILE (an earlier run's --json output) each figure is also given as a ratio to that run's.`,
		Example: "  clawmem bench store\n  clawmem bench store --n 20000 --dim 384 --json > before.json\n  clawmem bench store --n 20000 --dim 384 --baseline before.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.OpenCommand = []string{exe, "bench", "store-open"}
			o.Progress = c.Progress()
			o.Logf = func(format string, args ...any) { fmt.Fprintf(c.Progress(), format+"\n", args...) }
			var base StoreReport
			if baseline != "" {
				if base, err = LoadStoreBaseline(baseline); err != nil {
					return err
				}
			}
			rep, err := Store(cmd.Context(), o)
			if err != nil {
				return err
			}
			if baseline != "" {
				rep.Compare(base)
			}
			return c.Emit(rep, func(w io.Writer) error { return rep.WriteText(w, o.SkipIndex) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.N, "n", 100_000, "memories")
	f.IntVar(&o.Dim, "dim", 1024, "vector dimensions")
	f.IntVar(&o.Queries, "queries", 200, "search queries per mode")
	f.IntVar(&o.Extra, "extra", 10_000, "memories inserted after N to measure insert throughput")
	f.StringVar(&o.Dir, "dir", "", "store directory to use (default: a temporary one, removed afterwards)")
	f.BoolVar(&o.SkipIndex, "skip-index", false, "skip the in-memory index benchmark")
	f.StringVar(&baseline, "baseline", "", "an earlier run's --json output: print each figure's ratio to it")
	return cmd
}

func (c commands) storeOpenCmd() *cobra.Command {
	var (
		dir, index string
		noSegment  bool
	)
	var dim int
	cmd := &cobra.Command{
		Use:    "store-open",
		Short:  "Open a store, report time and RSS as JSON (used by bench store)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := OpenOnce(cmd.Context(), dir, dim, noSegment, index)
			if err != nil {
				return err
			}
			return c.PrintJSON(rep)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "store directory")
	cmd.Flags().IntVar(&dim, "dim", 1024, "vector dimensions")
	cmd.Flags().BoolVar(&noSegment, "no-segment", false, "load the vectors from the database, not the segment")
	cmd.Flags().StringVar(&index, "index", "exact", "index: exact, ivf (approximate, float32) or int8 (approximate, int8 memory mode)")
	return cmd
}

func (c commands) pipelineCmd() *cobra.Command {
	o := PipelineOptions{}
	var cpuProfile, allocProfile string
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
			stop, err := startProfiles(cpuProfile, allocProfile)
			if err != nil {
				return err
			}
			defer stop()
			o.Logf = func(format string, args ...any) { fmt.Fprintf(c.Progress(), format+"\n", args...) }
			if o.Contend > 0 {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.ContendCommand = []string{exe, "bench", "burn"}
			}
			rep, err := Pipeline(cmd.Context(), o)
			if err != nil {
				return err
			}
			return c.Emit(rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Preload, "preload", 100_000, "memories stored before measuring")
	f.IntVar(&o.Events, "events", 20_000, "agent_end events for the end-to-end run (one new memory each)")
	f.IntVar(&o.IngestEvents, "ingest-events", 20_000, "events per ingest benchmark")
	f.IntVar(&o.Queries, "queries", 300, "recall queries")
	f.StringVar(&o.Index, "index", "auto", "vector index: auto, exact or approximate")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.StringVar(&allocProfile, "allocprofile", "", "write the run's allocation profile to this file")
	f.IntVar(&o.Rate, "rate", 1000, "end-to-end publish rate, events/s (the sustained load freshness is measured at)")
	f.IntVar(&o.Contend, "contend", 0, "other processes that keep a core busy each during the run (each ends by itself within 15 minutes)")
	f.StringVar(&o.Sync, "sync", "default", "nats.sync of the bench's embedded server: default, always or a duration such as 1s")
	return cmd
}

func (c commands) burnCmd() *cobra.Command {
	var seconds int
	cmd := &cobra.Command{
		Use:    "burn",
		Short:  "Keep one core busy for --seconds (bench pipeline --contend runs it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			runtime.GOMAXPROCS(1)
			Burn(time.Duration(seconds) * time.Second)
			return nil
		},
	}
	cmd.Flags().IntVar(&seconds, "seconds", 60, "how long")
	return cmd
}

func (c commands) clusterCmd() *cobra.Command {
	o := ClusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Benchmark the memory log on a JetStream cluster: publish, replica catch-up, freshness, recall with 1 and 2 replicas",
		Long: `Starts a JetStream cluster of --nodes servers in this process (R3 streams on 3 nodes), stores N
memories of DIM dimensions in a writer's store and measures:
  - publishing them to the memory log, and the log's bytes per memory
  - a new replica catching up from the log, and whether it answers the writer's exact top-10
  - freshness: a write on the writer until it is on a following replica, p50/p99
  - recall throughput over NATS with one query replica, then two
  - capture: --captured candidates queued for 64 agents, stored into the log by one, then two,
    'clawmem worker store' processes sharing the partitions`,
		Example: "  clawmem bench cluster\n  clawmem bench cluster --n 20000 --dim 384 --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Logf = func(format string, args ...any) { fmt.Fprintf(c.Progress(), format+"\n", args...) }
			if o.Captured > 0 {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				o.Binary = exe
			}
			rep, err := Cluster(cmd.Context(), o)
			if err != nil {
				return err
			}
			return c.Emit(rep, rep.WriteText)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.N, "n", 100_000, "memories")
	f.IntVar(&o.Dim, "dim", 1024, "vector dimensions")
	f.IntVar(&o.Nodes, "nodes", 3, "JetStream cluster nodes")
	f.IntVar(&o.Queries, "queries", 200, "top-10 searches compared between writer and replica")
	f.Float64Var(&o.LoadSeconds, "load-seconds", 5, "length of each recall throughput run")
	f.IntVar(&o.Captured, "captured", 20_000, "memory candidates stored by 1, then 2, writer processes (0: skip)")
	return cmd
}
