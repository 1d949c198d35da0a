package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/internal/chaos"
	"github.com/clawmem/clawmem/node"
)

func (a *app) chaosCmd() *cobra.Command {
	var f chaosFlags
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
			return a.runProfile(cmd, &f, p, corpus)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&quick, "quick", false, "the short profile (about 3 minutes; what CI runs)")
	cmd.Flags().StringVar(&corpus, "corpus", "testdata/chaos/hostile.json", "the hostile-input corpus")
	cmd.AddCommand(a.chaosHostileCmd(), a.chaosKillCmd(), a.chaosDiskCmd(), a.chaosProvidersCmd(), a.chaosNATSCmd(), a.chaosClusterCmd(), a.chaosWatcherCmd(), a.chaosSoakCmd())
	return cmd
}

func (a *app) chaosHostileCmd() *cobra.Command {
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
			cfg, err := a.config()
			if err != nil {
				return err
			}
			if ingestURL == "" {
				info, ok := node.ReadRunInfo(cfg.DataDir)
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
			entries, err := chaos.LoadCorpus(corpus)
			if err != nil {
				return err
			}
			url := a.natsURL
			if url == "" {
				url = node.LocalNATS(cfg)
			}
			nc, err := node.Connect(url, cfg, "clawmem-chaos")
			if err != nil {
				return err
			}
			defer nc.Close()
			rep, err := chaos.Hostile(cmd.Context(), chaos.Target{IngestURL: ingestURL, IngestToken: ingestToken, NC: nc}, entries)
			if err != nil {
				return err
			}
			if err := a.emit(rep, rep.WriteText); err != nil {
				return err
			}
			if !rep.Pass {
				return errSilent{fmt.Errorf("%d of %d entries not refused", rep.Tried-rep.Refused, rep.Tried)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&corpus, "corpus", "testdata/chaos/hostile.json", "the corpus file")
	cmd.Flags().StringVar(&ingestURL, "ingest-url", "", "the hook ingest's URL (default: the running clawmem's)")
	cmd.Flags().StringVar(&ingestToken, "ingest-token", "", "the hook ingest's bearer token (default: ingest.token, else the data dir's auth/ingest.token)")
	return cmd
}
