package main

import (
	"errors"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/clawmem/clawmem/client"
	clawmcp "github.com/clawmem/clawmem/integrations/mcp"
	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/schemas"
)

func (a *app) mcpCmd() *cobra.Command {
	var agent, httpAddr, token string
	var management bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the memory tools to MCP clients (Claude Code, Cursor, ...)",
		Long: `Serves memory_recall, memory_store, memory_forget and memory_update over the Model Context
Protocol, plus memory_stats and memory_list with --management (or enableManagementTools in the
config). The server acts for the one agent named by --agent: every call reads and writes that
agent's memories, whatever the tool arguments say.

Each call goes to the running clawmem over NATS, or straight to the store when none runs. Nothing
is held open between calls, so ` + "`clawmem up`" + ` may start or stop while a client is connected.

By default it speaks MCP on stdin and stdout, the way MCP clients launch servers. With --http it
serves streamable HTTP instead, and every request needs "Authorization: Bearer <token>": --token,
else the config's ingest.token, else (on loopback only) the data dir's <data-dir>/auth/mcp.token.`,
		Example: `  claude mcp add clawmem -- clawmem mcp --agent main
  clawmem mcp --agent main --management
  clawmem mcp --agent main --http ` + clawmcp.DefaultHTTPAddr + `
  clawmem mcp --agent main --http 0.0.0.0:7434 --token "$CLAWMEM_MCP_TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			if agent == "" {
				agent = cfg.MCP.Agent
			}
			if agent == "" {
				return errors.New("give the agent whose memories the tools use: --agent NAME (e.g. --agent main) or mcp.agent in the config")
			}
			if err := schemas.ValidateAgentID(agent); err != nil {
				return fmt.Errorf("--agent (or mcp.agent): %w", err)
			}
			if token == "" {
				token = cfg.Ingest.Token
			}
			if httpAddr != "" {
				if err := clawmcp.CheckHTTPAddr(httpAddr, token); err != nil {
					return err
				}
				// Loopback is no credential: every local process and, through
				// a browser, every web page reaches it. Without a token of
				// its own the server takes the data dir's.
				if token == "" {
					if token, err = authdir.Token(cfg.DataDir, authdir.MCPToken); err != nil {
						return err
					}
				}
			}
			// The SDK logs every session at info; only problems are worth
			// a line in an MCP client's server log.
			log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			// One connection a call: see client.PerCall.
			srv, err := clawmcp.NewServer(client.NewPerCall(a.connect), clawmcp.Options{Agent: agent, Version: Version,
				Management: management || cfg.EnableManagementTools, Logger: log})
			if err != nil {
				return err
			}
			if httpAddr == "" {
				// Returns when the client closes stdin.
				return srv.Run(cmd.Context(), &sdk.StdioTransport{})
			}
			return clawmcp.ServeHTTP(cmd.Context(), httpAddr, clawmcp.NewHTTPHandler(srv, httpAddr, token, log), agent, token != "", a.logger())
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent whose memories the tools read and write (default: the config's mcp.agent; one of them is required)")
	f.BoolVar(&management, "management", false, "also serve memory_stats and memory_list (default: the config's enableManagementTools)")
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address instead of stdio, e.g. "+clawmcp.DefaultHTTPAddr)
	f.StringVar(&token, "token", "", "bearer token HTTP clients must send (default: the config's ingest.token, else on loopback <data-dir>/auth/mcp.token); required off loopback")
	return cmd
}
