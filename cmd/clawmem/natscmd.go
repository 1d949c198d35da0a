package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/internal/natsconf"
)

func (a *app) natsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "nats", Short: "NATS server configuration for clawmem deployments"}
	cmd.AddCommand(a.natsConfigCmd())
	return cmd
}

func (a *app) natsConfigCmd() *cobra.Command {
	var o natsconf.Options
	var out string
	cmd := &cobra.Command{
		Use:   "config --agents a,b,c [--cluster 3] | --cluster 3 --open",
		Short: "Generate NATS server configs: per-agent accounts and users, and one file per cluster node",
		Long: `Prints accounts.conf: clawmem's account with its service user (the pipeline, the memory log, the
writers' leases) and operator user, and one account per agent whose user can only hand in its own hook
events (requests to clawmem.hooks.v1.<agent>.<kind>) and ask its own clawmem.v1.<agent>.<op>; no agent
reaches the streams, the memory log, the leases, the writers' endpoints or the backups. With --cluster N, also nats-1.conf ... nats-N.conf
(JetStream, cluster routes, the same accounts). Passwords are read from the servers' environment
(CLAWMEM_NATS_PASSWORD, CLAWMEM_OPS_PASSWORD, CLAWMEM_AGENT_<ID>_PASSWORD). --out writes the files.
--open --cluster N writes node files without accounts, for a network nothing but clawmem reaches.`,
		Example: "  clawmem nats config --agents main,discord-bot\n  clawmem nats config --agents main --cluster 3 --out deploy/nats/generated",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := natsconf.Generate(o)
			if err != nil {
				return err
			}
			for _, f := range files {
				if out != "" {
					if err := os.MkdirAll(out, 0o755); err != nil {
						return err
					}
					path := filepath.Join(out, f.Name)
					if err := os.WriteFile(path, []byte(f.Text), 0o644); err != nil {
						return err
					}
					fmt.Fprintln(a.stdout, "wrote", path)
					continue
				}
				if len(files) > 1 {
					fmt.Fprintf(a.stdout, "# ==> %s <==\n", f.Name)
				}
				fmt.Fprint(a.stdout, f.Text)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Agents, "agents", nil, "the agents, comma-separated (required unless --open)")
	f.IntVar(&o.Partitions, "partitions", 16, "the memory log's partitions (nats.partitions)")
	f.IntVar(&o.Cluster, "cluster", 1, "cluster nodes (1: accounts.conf only)")
	f.BoolVar(&o.Open, "open", false, "cluster node files without accounts, for a private network only (docker compose's cluster profile)")
	f.StringVar(&out, "out", "", "write the files into this directory instead of printing them")
	return cmd
}
