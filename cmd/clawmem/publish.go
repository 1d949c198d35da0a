package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/producers"
)

func (a *app) publishCmd() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "publish [KIND]",
		Short: "Publish one hook event read from stdin (for HOOK.md handlers and scripts)",
		Long: `Reads a hook body from stdin — {"event": {...}, "ctx": {"agentId": ..., "sessionKey": ...,
"sessionId": ..., "runId": ...}} as an OpenClaw hook handler receives it — and publishes it to the
running clawmem's EVENTS stream. KIND is the hook (agent_end, before_prompt_build, command:new,
command:reset, before_reset, session_end, message:received, message:sent); it may be left out when
the body names it. Retries of the same event are deduplicated.`,
		Example: `  echo '{"event":{"success":true,"messages":[{"role":"user","content":"I prefer tea"}]},"ctx":{"agentId":"main","sessionKey":"s1"}}' \
    | clawmem publish agent_end`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := ""
			if len(args) == 1 {
				kind = args[0]
			}
			t, err := a.Target("clawmem-publish")
			if err != nil {
				return err
			}
			nc, err := t.Dial()
			if err != nil {
				return err
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				return err
			}
			ack, err := producers.PublishFromReader(cmd.Context(), producers.New(js, producers.WithSecrets(t.Config.SecretsMode())), kind, agent, os.Stdin)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(ack)
			}
			state := "stored"
			if ack.Duplicate {
				state = "duplicate (already stored)"
			}
			fmt.Fprintf(a.stdout, "%s seq %d: %s\n", ack.Stream, ack.Seq, state)
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent id (default: the body's ctx.agentId)")
	return cmd
}
