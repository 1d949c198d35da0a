package main

import (
	"github.com/spf13/cobra"
)

func (a *app) statusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the deployment: the writer, the memory log, dead letters, and each query service with its lag",
		Long: `Reads the writer's lease, the memory log's position and size, the dead letter count, and asks every
query service instance ($SRV.STATS) how far its copy has the log: LAG is the entries a replica has
not applied yet. A "stalled:" line names a stage whose messages have waited with none acknowledged
for longer than twice its ack wait. It talks to the running clawmem's NATS; when none runs, to the data dir's NATS store.`,
		Example: "  clawmem status\n  clawmem status --json --nats-url nats://nats-1:4222,nats://nats-2:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			t, err := a.Target("clawmem-cli")
			if err != nil {
				return err
			}
			p := pipeline(t, t.Running())
			defer p.Close()
			st, err := p.Status(cmd.Context())
			if err != nil {
				return err
			}
			return a.Emit(st, st.WriteText)
		},
	}
}
