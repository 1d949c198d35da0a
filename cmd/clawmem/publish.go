package main

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/envsubst"
	"github.com/clawmem/clawmem/internal/authdir"
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
			t, err := a.target("clawmem-publish")
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
				return a.printJSON(ack)
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
