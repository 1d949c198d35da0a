// Package chaos is clawmem's fault harness, `clawmem chaos`. Each scenario
// starts its own `clawmem up` (this binary, a scratch data dir, loopback
// only), puts it through one kind of fault — SIGKILLs under load, flaky,
// hanging and vanished providers, a full disk, NATS restarts and a full
// JetStream, a cluster's rolling restarts, mangled session files, a long
// soak — and counts what was lost, repeated or leaked. The hostile-input
// scenario sends a corpus of bad bodies to every surface a running clawmem
// offers and checks each is refused and stores nothing. The package also
// holds the commands that run them, so that cmd/clawmem only adds them.
package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/instance"
)

// CLI is what the chaos commands take from clawmem's command line: the
// config and NATS the global flags name, and its way of printing.
type CLI interface {
	Config() (*config.Config, error)
	NATSURL() string
	JSON() bool
	Stdout() io.Writer
	PrintJSON(v any) error
	// Emit prints v as JSON with --json, else as text writes it.
	Emit(v any, text func(io.Writer) error) error
	// Silent marks a failure the command has already reported, so that
	// it exits 1 without printing err again.
	Silent(err error) error
}

// Command is `clawmem chaos` with its subcommands.
func Command(cli CLI) *cobra.Command { return commands{cli}.chaosCmd() }

type commands struct{ CLI }

// ingestTokenOf is the bearer token the hook ingest of cfg's data dir
// wants: ingest.token, else the data dir's generated one ("" when it
// serves without one).
func ingestTokenOf(cfg *config.Config) (string, error) {
	if cfg.Ingest.Insecure {
		return "", nil
	}
	tok, err := envsubst.Expand(cfg.Ingest.Token)
	if err != nil || tok != "" {
		return tok, err
	}
	tok, err = authdir.Read(cfg.DataDir, authdir.IngestToken)
	if err != nil {
		return "", fmt.Errorf("the hook ingest's token: %w (clawmem up makes it at first start)", err)
	}
	return tok, nil
}

func (c commands) chaosCmd() *cobra.Command {
	var f runFlags
	var quick bool
	var corpus string
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Fault and soak scenarios: kills, full disks, flaky providers, NATS restarts, hostile input",
		Long: `Runs clawmem through faults and counts what was lost. Each scenario starts its own clawmem up (this
binary, on a scratch data dir, loopback only), stops by itself, and prints a line of figures and
pass or fail; --json prints them all as one document. The command exits 1 if any scenario failed.

With no subcommand it runs the full profile: kill loop (3,000 events, 10 kills), provider faults (60 s
outage), hostile input, disk full, NATS faults, a 3-node cluster's rolling restarts, watcher faults and a
10-minute soak. --quick runs
the short profile CI runs (about 3 minutes): kill loop with 3 kills, provider faults with a 15 s
outage, hostile input and a 60 s soak. The subcommands run one scenario each, sized by flags.`,
		Example: "  clawmem chaos --quick\n  clawmem chaos --json > chaos.json\n  clawmem chaos kill --kills 20",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := fullProfile
			if quick {
				p = quickProfile
			}
			return c.runProfile(cmd, &f, p, corpus)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&quick, "quick", false, "the short profile (about 3 minutes; what CI runs)")
	cmd.Flags().StringVar(&corpus, "corpus", "testdata/chaos/hostile.json", "the hostile-input corpus")
	cmd.AddCommand(c.hostileCmd(), c.killCmd(), c.diskCmd(), c.providersCmd(), c.natsCmd(), c.clusterCmd(), c.watcherCmd(), c.soakCmd())
	return cmd
}

func (c commands) hostileCmd() *cobra.Command {
	var corpus, ingestURL, ingestToken string
	cmd := &cobra.Command{
		Use:   "hostile",
		Short: "Send the hostile-input corpus to a running clawmem and check every entry is refused",
		Long: `Sends every entry of the corpus (testdata/chaos/hostile.json, plus 10 MB bodies, 100,000-deep
nesting and 2 MB memories) to every surface of the running clawmem: its hook ingest, query
operations and raw subjects; import files, imported over NATS as clawmem import does; config files,
checked as clawmem config check does; and MCP sessions, served as clawmem mcp does with tool calls
going to the running clawmem. It passes when each is refused (a 4xx, an error reply, no responder,
an import with no row imported, a config error, a JSON-RPC error or a tool error), the count of
memories is unchanged and clawmem still answers. Run it against a scratch instance: an entry that
is not refused may store something.`,
		Example: "  clawmem chaos hostile --corpus testdata/chaos/hostile.json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := c.Config()
			if err != nil {
				return err
			}
			if ingestURL == "" {
				info, ok := instance.ReadRunInfo(cfg.DataDir)
				if !ok || info.IngestURL == "" {
					return fmt.Errorf("no running clawmem on %s: start clawmem up, or give --ingest-url and --nats-url", cfg.DataDir)
				}
				ingestURL = info.IngestURL
			}
			if ingestToken == "" {
				if ingestToken, err = ingestTokenOf(cfg); err != nil {
					return err
				}
			}
			entries, err := LoadCorpus(corpus)
			if err != nil {
				return err
			}
			url := c.NATSURL()
			if url == "" {
				url = instance.LocalNATS(cfg)
			}
			nc, err := instance.Connect(url, cfg, "clawmem-chaos")
			if err != nil {
				return err
			}
			defer nc.Close()
			rep, err := Hostile(cmd.Context(), Target{IngestURL: ingestURL, IngestToken: ingestToken, NC: nc, DataDir: cfg.DataDir}, entries)
			if err != nil {
				return err
			}
			if err := c.Emit(rep, rep.WriteText); err != nil {
				return err
			}
			if !rep.Pass {
				return c.Silent(fmt.Errorf("%d of %d entries not refused", rep.Tried-rep.Refused, rep.Tried))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&corpus, "corpus", "testdata/chaos/hostile.json", "the corpus file")
	cmd.Flags().StringVar(&ingestURL, "ingest-url", "", "the hook ingest's URL (default: the running clawmem's)")
	cmd.Flags().StringVar(&ingestToken, "ingest-token", "", "the hook ingest's bearer token (default: ingest.token, else the data dir's auth/ingest.token)")
	return cmd
}

// runFlags are the flags every scenario that runs its own clawmem takes.
type runFlags struct {
	scratch string
	keep    bool
	seed    uint64
	bin     string
}

func (f *runFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.scratch, "scratch", "", "directory for the scenarios' data dirs (default: a temporary one, removed afterwards)")
	cmd.Flags().BoolVar(&f.keep, "keep", false, "keep the scenarios' data dirs (for a look at what failed)")
	cmd.Flags().Uint64Var(&f.seed, "seed", 1, "seed of the events' texts and the kills' timing")
	cmd.Flags().StringVar(&f.bin, "bin", "", "the clawmem binary the scenarios run (default: this one)")
}

// env makes the scenarios' environment; done removes the scratch dir.
func (f *runFlags) env() (Env, func(), error) {
	dir := f.scratch
	if dir == "" {
		d, err := os.MkdirTemp("", "clawmem-chaos-")
		if err != nil {
			return Env{}, nil, err
		}
		dir = d
	}
	done := func() {
		if !f.keep && f.scratch == "" {
			os.RemoveAll(dir)
		}
	}
	return Env{Bin: f.bin, Scratch: dir, Seed: f.seed}, done, nil
}

// runScenarios runs each scenario in turn, prints the suite and fails the
// command if any scenario failed.
func (c commands) runScenarios(cmd *cobra.Command, f *runFlags, runs ...scenario) error {
	env, done, err := f.env()
	if err != nil {
		return err
	}
	defer done()
	var s Suite
	s.Pass = true
	for _, run := range runs {
		r, err := run(cmd.Context(), env)
		if err != nil {
			r.Failures = append(r.Failures, "did not complete: "+err.Error())
			r.Pass = false
		}
		if !c.JSON() {
			r.WriteText(c.Stdout())
		}
		s.Results = append(s.Results, r)
		s.Pass = s.Pass && (r.Pass || r.Skipped != "")
	}
	if c.JSON() {
		if err := c.PrintJSON(s); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.Stdout(), "chaos: %d scenario(s), %s\n", len(s.Results), map[bool]string{true: "pass", false: "FAIL"}[s.Pass])
	}
	if !s.Pass {
		return c.Silent(fmt.Errorf("chaos: a scenario failed (data dirs under %s%s)", env.Scratch, map[bool]string{true: "", false: "; --keep keeps them"}[f.keep]))
	}
	return nil
}

// profile is what `clawmem chaos` runs: the full profile, or with
// --quick the short one CI runs.
type profile struct {
	kill      KillOptions
	providers ProviderOptions
	soak      SoakOptions
	full      bool
}

var (
	quickProfile = profile{
		kill:      KillOptions{Events: 600, Rate: 30, Kills: 3},
		providers: ProviderOptions{Phase: 6 * time.Second, Outage: 15 * time.Second, Rate: 10, Poison: 3},
		soak:      SoakOptions{Duration: 60 * time.Second, Rate: 20, RecallRate: 10},
	}
	fullProfile = profile{
		kill:      KillOptions{Events: 3000, Rate: 50, Kills: 10},
		providers: ProviderOptions{Phase: 20 * time.Second, Outage: 60 * time.Second, Rate: 10, Poison: 3},
		soak:      SoakOptions{Duration: 10 * time.Minute, Rate: 20, RecallRate: 10},
		full:      true,
	}
)

// runProfile runs the profile's scenarios; corpus is the hostile corpus.
func (c commands) runProfile(cmd *cobra.Command, f *runFlags, p profile, corpus string) error {
	runs := []scenario{
		func(ctx context.Context, env Env) (Result, error) {
			return KillLoop(ctx, env, p.kill)
		},
		func(ctx context.Context, env Env) (Result, error) {
			return Providers(ctx, env, p.providers)
		},
		func(ctx context.Context, env Env) (Result, error) {
			return HostileScenario(ctx, env, corpus)
		},
	}
	if p.full {
		runs = append(runs, c.fullOnly()...)
	}
	runs = append(runs, func(ctx context.Context, env Env) (Result, error) { return Soak(ctx, env, p.soak) })
	return c.runScenarios(cmd, f, runs...)
}

// fullOnly are the scenarios only the full profile runs.
func (c commands) fullOnly() []scenario {
	return []scenario{
		func(ctx context.Context, env Env) (Result, error) {
			return DiskFull(ctx, env, DiskOptions{SizeMB: 96, Events: 600, Rate: 20, Full: 15 * time.Second})
		},
		func(ctx context.Context, env Env) (Result, error) {
			return NATSFaults(ctx, env, NATSOptions{Events: 1500, Rate: 50, Restarts: 3, Down: 2 * time.Second, FullMB: 4, Flood: 3000})
		},
		func(ctx context.Context, env Env) (Result, error) {
			return ClusterFaults(ctx, env, ClusterOptions{Events: 1200, Rate: 20, Restarts: 3, Down: 3 * time.Second})
		},
		func(ctx context.Context, env Env) (Result, error) {
			return WatcherFaults(ctx, env, WatcherOptions{Files: 4, Entries: 80, Every: 150 * time.Millisecond})
		},
	}
}

// scenario runs one scenario in env.
type scenario = func(context.Context, Env) (Result, error)

// scenarioCmd completes cmd as a subcommand running one scenario: the
// common flags, the scenario's own (flags), and the run.
func (c commands) scenarioCmd(cmd *cobra.Command, flags func(*pflag.FlagSet), run scenario) *cobra.Command {
	var f runFlags
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return c.runScenarios(cmd, &f, run) }
	f.add(cmd)
	flags(cmd.Flags())
	return cmd
}

func (c commands) killCmd() *cobra.Command {
	var o KillOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "kill",
		Short: "Publish events while SIGKILLing and restarting clawmem up; count lost and duplicated",
		Long: `Starts clawmem up on a scratch data dir, publishes --events distinct capturable agent_end events to its
hook ingest at --rate per second (retrying each until it is acknowledged), and SIGKILLs and restarts
clawmem up --kills times at random moments meanwhile. Then it counts the memories: every acknowledged
event must be stored exactly once, nothing dead-lettered, and the last instance must stop cleanly.`,
		Example: "  clawmem chaos kill --events 3000 --rate 50 --kills 10",
	}, func(fs *pflag.FlagSet) {
		fs.IntVar(&o.Events, "events", 3000, "events to publish")
		fs.Float64Var(&o.Rate, "rate", 50, "events per second")
		fs.IntVar(&o.Kills, "kills", 10, "SIGKILLs of clawmem up")
	}, func(ctx context.Context, env Env) (Result, error) { return KillLoop(ctx, env, o) })
}

func (c commands) providersCmd() *cobra.Command {
	var o ProviderOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "providers",
		Short: "Flaky, hanging, garbage-answering and vanished embedding, rerank and LLM providers",
		Long: `Starts clawmem up with an OpenAI-compatible embedding endpoint, a Jina-style reranker and an
OpenAI-compatible chat model (smart extraction) that are loopback fakes in this process. It publishes
events at --rate and recalls twice a second throughout, while the fakes answer healthily, fail half
their requests (HTTP 503), hang, answer garbage, and go away for --outage, then return.

It passes when every acknowledged event is stored exactly once (nothing dead-lettered for a provider's
outage), the --poison malformed events published straight to the stream are dead-lettered with a
reason, every recall is answered (on BM25 alone while embeddings fail, with the cosine fallback while
the reranker fails), and recall is hybrid and reranked again after the providers return, without a
restart.`,
		Example: "  clawmem chaos providers --outage 60s",
	}, func(fs *pflag.FlagSet) {
		fs.DurationVar(&o.Phase, "phase", 20*time.Second, "how long each fault (and each healthy phase) lasts")
		fs.DurationVar(&o.Outage, "outage", 60*time.Second, "how long the providers are gone")
		fs.Float64Var(&o.Rate, "rate", 10, "events per second")
		fs.IntVar(&o.Poison, "poison", 3, "malformed events published straight to the events stream")
	}, func(ctx context.Context, env Env) (Result, error) { return Providers(ctx, env, o) })
}

func (c commands) soakCmd() *cobra.Command {
	var o SoakOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "soak",
		Short: "A fixed ingest and recall load for a while; resources must stay flat",
		Long: `Starts clawmem up on a scratch data dir and runs --rate events and --recall-rate recalls a second for
--duration, sampling every second the process's resident memory, goroutines and open files and the
streams' and KV buckets' sizes. After the warm-up (a fifth of the run, at least 10 s) the median of
the last ten samples must stay within bounds of the first ten: resident memory ×1.15 + 16 MB,
goroutines +10% (at least +10), open files +8, and the work queue's backlog must not build up. Every
acknowledged event must be stored once and every recall answered. The texts cycle after the warm-up, so
the store stops growing; with --distinct every text is new and the store grows all along, and resident
memory may then grow by each stored memory's vector bytes + 2 KB, + 8 MB.`,
		Example: "  clawmem chaos soak --duration 10m --rate 20 --recall-rate 10\n  clawmem chaos soak --duration 10m --distinct",
	}, func(fs *pflag.FlagSet) {
		fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long the load runs")
		fs.Float64Var(&o.Rate, "rate", 20, "events per second")
		fs.Float64Var(&o.RecallRate, "recall-rate", 10, "recalls per second")
		fs.BoolVar(&o.Distinct, "distinct", false, "keep every text distinct, so the store grows all along (resident memory is bounded per memory)")
	}, func(ctx context.Context, env Env) (Result, error) { return Soak(ctx, env, o) })
}

func (c commands) natsCmd() *cobra.Command {
	var o NATSOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "nats",
		Short: "Restart an external NATS server under load, fill JetStream's storage, flood the query service",
		Long: `Starts a NATS server with JetStream in this process (loopback, a scratch store directory) and clawmem
up against it (nats.url). While --events events are published at --rate, the server is stopped for
--down and started again --restarts times. Then JetStream's storage is capped --full-mb above what it
holds and events of 32 KB are published until it is full: ingest must answer 503 (the hook retries
later) and recall must still answer; the cap is lifted with another restart and every event must get
in. Last, --flood recalls are fired at once: the service may shed some, but must answer normally
afterwards. It passes when every acknowledged event is stored exactly once, nothing is dead-lettered
and clawmem up stops cleanly.`,
		Example: "  clawmem chaos nats --restarts 5 --down 3s",
	}, func(fs *pflag.FlagSet) {
		fs.IntVar(&o.Events, "events", 1500, "events published across the restarts")
		fs.Float64Var(&o.Rate, "rate", 50, "events per second")
		fs.IntVar(&o.Restarts, "restarts", 3, "restarts of the server under load")
		fs.DurationVar(&o.Down, "down", 2*time.Second, "how long the server stays down each time")
		fs.IntVar(&o.FullMB, "full-mb", 4, "storage left before JetStream is full (MB)")
		fs.IntVar(&o.Flood, "flood", 3000, "recall requests fired at once")
	}, func(ctx context.Context, env Env) (Result, error) { return NATSFaults(ctx, env, o) })
}

func (c commands) diskCmd() *cobra.Command {
	var o DiskOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "disk",
		Short: "Fill the data dir's filesystem while events arrive; clawmem must refuse, serve recall and recover",
		Long: `Mounts a --size-mb tmpfs (root only: skipped with a message otherwise), starts clawmem up with its data
dir on it, publishes --events at --rate, and fills the filesystem with a ballast file for --full. While
full, ingest must refuse events with 503 or 507 (the hook retries) and recall must still answer; when
the ballast is deleted, every event must get in and be stored exactly once, without a restart.`,
		Example: "  sudo clawmem chaos disk --size-mb 96 --full 20s",
	}, func(fs *pflag.FlagSet) {
		fs.IntVar(&o.SizeMB, "size-mb", 96, "size of the tmpfs (MB)")
		fs.IntVar(&o.Events, "events", 600, "events published")
		fs.Float64Var(&o.Rate, "rate", 20, "events per second")
		fs.DurationVar(&o.Full, "full", 15*time.Second, "how long the filesystem stays full")
	}, func(ctx context.Context, env Env) (Result, error) { return DiskFull(ctx, env, o) })
}

func (c commands) watcherCmd() *cobra.Command {
	var o WatcherOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "watcher",
		Short: "Truncate, rotate, rewrite and delete the session files clawmem up follows; count entries lost and repeated",
		Long: `Starts clawmem up on a scratch data dir and writes OpenClaw session files (JSONL) and an OpenClaw SQLite
transcript database for its watcher to follow, one entry every --every per file, while it truncates files
(and writes them back, or starts them over), rotates them as /new does, replaces them atomically by a copy
with new entries, deletes them, and vacuums, replaces and re-creates the database; clawmem up is SIGKILLed
and restarted once in the middle. Then every entry written must be in the transcript stream exactly once.`,
		Example: "  clawmem chaos watcher --files 8 --entries 200",
	}, func(fs *pflag.FlagSet) {
		fs.IntVar(&o.Files, "files", 4, "JSONL session files written at once (file i suffers the faults of kind i mod 4)")
		fs.IntVar(&o.Entries, "entries", 80, "entries appended to each file and to the database")
		fs.DurationVar(&o.Every, "every", 150*time.Millisecond, "pause between two rounds of appends")
	}, func(ctx context.Context, env Env) (Result, error) {
		return WatcherFaults(ctx, env, o)
	})
}

func (c commands) clusterCmd() *cobra.Command {
	var o ClusterOptions
	return c.scenarioCmd(&cobra.Command{
		Use:   "cluster",
		Short: "Restart the nodes of a 3-node JetStream cluster one at a time under load",
		Long: `Starts a 3-node NATS cluster with JetStream in this process (loopback, scratch store directories) and
clawmem up against it with every stream and bucket replicated 3 times (nats.replicas: 3). While --events
events are published at --rate, one node at a time is stopped for --down and restarted, --restarts times
in turn. Every acknowledged event must be stored exactly once, nothing dead-lettered, and clawmem up must
stop cleanly.`,
		Example: "  clawmem chaos cluster --restarts 6",
	}, func(fs *pflag.FlagSet) {
		fs.IntVar(&o.Events, "events", 1200, "events published")
		fs.Float64Var(&o.Rate, "rate", 20, "events per second")
		fs.IntVar(&o.Restarts, "restarts", 3, "node restarts, one node at a time")
		fs.DurationVar(&o.Down, "down", 3*time.Second, "how long a node stays down")
	}, func(ctx context.Context, env Env) (Result, error) {
		return ClusterFaults(ctx, env, o)
	})
}
