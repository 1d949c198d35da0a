package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	clawmcp "github.com/clawmem/clawmem/integrations/mcp"
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
serves streamable HTTP instead: on loopback without further ado, anywhere else only with a bearer
token (--token, else the config's ingest.token). A token, once set, is required on every request.`,
		Example: `  claude mcp add clawmem -- clawmem mcp --agent main
  clawmem mcp --agent main --management
  clawmem mcp --agent main --http ` + clawmcp.DefaultHTTPAddr + `
  clawmem mcp --agent main --http 0.0.0.0:7434 --token "$CLAWMEM_MCP_TOKEN"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.config()
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
			}
			// The SDK logs every session at info; only problems are worth
			// a line in an MCP client's server log.
			log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			calls := &mcpCaller{a: a}
			srv, err := clawmcp.NewServer(calls.call, clawmcp.Options{Agent: agent, Version: Version,
				Management: management || cfg.EnableManagementTools, Logger: log})
			if err != nil {
				return err
			}
			if httpAddr == "" {
				// Returns when the client closes stdin.
				return srv.Run(cmd.Context(), &sdk.StdioTransport{})
			}
			return serveMCPHTTP(cmd.Context(), httpAddr, clawmcp.NewHTTPHandler(srv, token, log), agent, token != "", a.logger())
		},
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "the agent whose memories the tools read and write (default: the config's mcp.agent; one of them is required)")
	f.BoolVar(&management, "management", false, "also serve memory_stats and memory_list (default: the config's enableManagementTools)")
	f.StringVar(&httpAddr, "http", "", "serve streamable HTTP on this address instead of stdio, e.g. "+clawmcp.DefaultHTTPAddr)
	f.StringVar(&token, "token", "", "bearer token HTTP clients must send (default: the config's ingest.token); required off loopback")
	return cmd
}

// mcpCaller connects for each call, one call at a time: to the running
// clawmem over NATS, or to the store directly when none runs. MCP clients
// keep a server for a whole session; holding the store open that long
// would lock `clawmem up` out of it, and two direct calls at once would
// lock each other out.
type mcpCaller struct {
	a  *app
	mu sync.Mutex
}

func (m *mcpCaller) call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, err := m.a.connect(ctx)
	if err != nil {
		return schemas.ToolResult{}, err
	}
	defer c.Close()
	return c.Call(ctx, op, agent, req)
}

// mcpShutdownTimeout bounds the wait for open MCP requests and streams at
// shutdown; clients reconnect after.
const mcpShutdownTimeout = 5 * time.Second

func serveMCPHTTP(ctx context.Context, addr string, h http.Handler, agent string, auth bool, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("mcp listening", "url", "http://"+ln.Addr().String(), "agent", agent, "auth", auth)
	select {
	case err := <-served:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), mcpShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// Streams still open after the grace period are cut.
		hs.Close()
	}
	return nil
}
