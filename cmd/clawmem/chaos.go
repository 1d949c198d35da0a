package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/internal/chaos"
	"github.com/clawmem/clawmem/node"
)

func (a *app) chaosCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Fault scenarios against a running clawmem (so far: hostile input)",
	}
	cmd.AddCommand(a.chaosHostileCmd())
	return cmd
}

func (a *app) chaosHostileCmd() *cobra.Command {
	var corpus, ingestURL string
	cmd := &cobra.Command{
		Use:   "hostile",
		Short: "Send the hostile-input corpus to a running clawmem and check every entry is refused",
		Long: `Sends every entry of the corpus (testdata/chaos/hostile.json, plus a 10 MB body, 100,000-deep
nesting and a 2 MB memory) to the running clawmem's hook ingest, query operations and raw subjects.
It passes when each is refused (a 4xx, an error reply, no responder), the count of memories is
unchanged and clawmem still answers. Run it against a scratch instance: an entry that is not
refused may store something.`,
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
			rep, err := chaos.Hostile(cmd.Context(), chaos.Target{IngestURL: ingestURL, NC: nc}, entries)
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
	return cmd
}
