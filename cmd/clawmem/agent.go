package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/node"
)

func (a *app) agentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Give agents their own NATS credentials on the embedded server (add, list, remove)",
		Long: `The embedded NATS server of clawmem up admits only holders of the data dir's credentials: clawmem's
own processes, and each agent added here. An agent's user can hand in its own hook events and ask its own
clawmem.v1.<agent>.<op>, nothing else: not another agent's memories, not the streams, not the admin
operations. Credentials are nkey seeds in <data-dir>/auth/nats/agents/<agent>.nk (owner-only); a running
clawmem up takes a change in at once (its NATS server restarts; clients reconnect within a second).
With an external NATS server, agents' users live in its accounts.conf instead (clawmem nats config).`,
	}
	cmd.AddCommand(a.agentAddCmd(), a.agentListCmd(), a.agentRemoveCmd(), a.agentTokenCmd())
	return cmd
}

// embeddedOnly refuses agent commands against an external server, whose
// users this data dir does not hold.
func embeddedOnly(cfg *config.Config, natsURL string) error {
	if natsURL != "" || cfg.NATS.URL != "" {
		return errors.New("agents' NATS users are the embedded server's; with an external server (nats.url or --nats-url) they are in its accounts.conf: see `clawmem nats config`")
	}
	return nil
}

func (a *app) agentAddCmd() *cobra.Command {
	var reaches []string
	cmd := &cobra.Command{
		Use:   "add AGENT [AGENT...] | add GATEWAY --agents a,b",
		Short: "Create an agent's credentials (if it has none) and print what its gateway or MCP client needs",
		Long: `Creates credentials for each AGENT, which act for that agent alone. With --agents, creates one set of
credentials named GATEWAY that acts for each of the agents listed (an OpenClaw gateway hosting several
agents), or for every agent with --agents '*' (a gateway trusted with all of them, as on a one-user laptop).`,
		Example: `  clawmem agent add main
  openclaw config set plugins.entries.clawmem.config.credentialsFile ~/.clawmem/auth/nats/agents/main.nk
  clawmem agent add gateway --agents main,discord-bot`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(reaches) > 0 && len(args) != 1 {
				return errors.New("--agents names the agents of one gateway: give one name")
			}
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if err := embeddedOnly(cfg, a.natsURL); err != nil {
				return err
			}
			var out []node.AgentCreds
			changed := false
			for _, id := range args {
				_, created, err := natsauth.AddUser(cfg.DataDir, id, reaches)
				if err != nil {
					return err
				}
				changed = changed || created
				out = append(out, node.AgentCredentials(cfg, id, created))
			}
			if changed {
				if err := node.ReloadAuth(cfg); err != nil {
					return err
				}
				if err := node.AwaitAdmitted(cfg, out[0].CredentialsFile); err != nil {
					return err
				}
			}
			if a.jsonOut {
				return a.PrintJSON(out)
			}
			for _, c := range out {
				c.WriteText(a.stdout)
			}
			fmt.Fprintf(a.stdout, "\nOpenClaw: openclaw config set plugins.entries.clawmem.config.credentialsFile %s\n", out[0].CredentialsFile)
			fmt.Fprintln(a.stdout, "Keep the file private: whoever holds it reads and writes these agents' memories.")
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&reaches, "agents", nil, "make one gateway's credentials, acting for these agents ('*': every agent)")
	return cmd
}

func (a *app) agentListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the agents that have credentials on this data dir",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			agents, err := natsauth.Agents(cfg.DataDir)
			if err != nil {
				return err
			}
			if a.jsonOut {
				out := []node.AgentCreds{}
				for _, id := range agents {
					out = append(out, node.AgentCredentials(cfg, id, false))
				}
				return a.PrintJSON(out)
			}
			if len(agents) == 0 {
				fmt.Fprintln(a.stdout, "no agent has credentials yet: clawmem agent add <agent>")
			}
			for _, id := range agents {
				fmt.Fprintf(a.stdout, "%s  acts for %s  %s\n", id, strings.Join(natsauth.Reaches(cfg.DataDir, id), ", "), natsauth.AgentSeed(cfg.DataDir, id))
			}
			return nil
		},
	}
}

func (a *app) agentRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove AGENT",
		Short: "Revoke an agent's credentials (its memories stay; its gateway can no longer connect)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if err := embeddedOnly(cfg, a.natsURL); err != nil {
				return err
			}
			if err := natsauth.RemoveAgent(cfg.DataDir, args[0]); err != nil {
				return err
			}
			if _, err := httpapi.RemoveAgentToken(cfg.DataDir, args[0]); err != nil {
				return err
			}
			if err := node.ReloadAuth(cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "agent %s: credentials (and HTTP API token) revoked\n", args[0])
			return nil
		},
	}
}

func (a *app) agentTokenCmd() *cobra.Command {
	var revoke bool
	cmd := &cobra.Command{
		Use:   "token AGENT",
		Short: "Print the agent's HTTP API token (made if it has none), or revoke it",
		Long: `Prints the bearer token that acts for AGENT alone on the HTTP API (served on the hook ingest
listener, default http://127.0.0.1:7433; GET /v1/openapi.json describes it; mem0's clients send it as
their API key). The token lives in <data-dir>/auth/http/AGENT.token (owner-only); a running clawmem
takes a new one at its first use, and a revoked one stops working at once.`,
		Example: `  TOKEN=$(clawmem agent token main)
  curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    -d '{"query":"what editor do I use"}' http://127.0.0.1:7433/v1/recall
  clawmem agent token main --revoke`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if revoke {
				removed, err := httpapi.RemoveAgentToken(cfg.DataDir, args[0])
				if err != nil {
					return err
				}
				if !removed {
					return fmt.Errorf("agent %s has no HTTP API token in %s", args[0], cfg.DataDir)
				}
				fmt.Fprintf(a.stdout, "agent %s: HTTP API token revoked\n", args[0])
				return nil
			}
			tok, err := httpapi.AgentToken(cfg.DataDir, args[0])
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.PrintJSON(map[string]string{"agent": args[0], "token": tok})
			}
			fmt.Fprintln(a.stdout, tok)
			return nil
		},
	}
	cmd.Flags().BoolVar(&revoke, "revoke", false, "delete the token: requests with it are refused from then on")
	return cmd
}
