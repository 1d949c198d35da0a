// Package mcp serves clawmem's memory tools to Model Context Protocol
// clients (Claude Code, Cursor, Claude Desktop, ...): memory_recall,
// memory_store, memory_forget, memory_update and, when enabled, the
// management tools memory_stats and memory_list, with the OpenClaw
// plugin's parameters.
//
// A server speaks for one agent, fixed when it is built: tool arguments
// never choose whose memories are read or written. Every tool call goes
// through a client.Client (the query service over NATS, or the store
// in-process), whose reply becomes the tool result: its text as text
// content, its details as structured content.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

// Options configures a server.
type Options struct {
	// Agent is whose memories the tools use; required.
	Agent string
	// Management adds memory_stats and memory_list, as the plugin's
	// enableManagementTools does.
	Management bool
	// Version is reported to clients as the server's version.
	Version string
	// Logger receives the SDK's log and any tool handler panic; nil logs
	// nothing.
	Logger *slog.Logger
}

// NewServer builds the MCP server for opts.Agent. Connect it to a
// transport with Run (stdio) or serve it with NewHTTPHandler.
func NewServer(c client.Client, opts Options) (*sdk.Server, error) {
	if c == nil {
		return nil, errors.New("mcp: no client")
	}
	if opts.Agent == "" {
		return nil, errors.New("mcp: an agent id is required: the tools read and write that agent's memories")
	}
	if err := schemas.ValidateAgentID(opts.Agent); err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "clawmem", Title: "clawmem long-term memory", Version: opts.Version},
		&sdk.ServerOptions{
			Logger: opts.Logger,
			Instructions: fmt.Sprintf("Long-term memory of agent %q. Use memory_recall before answering questions about "+
				"the user's preferences, past decisions or earlier work, and memory_store to keep durable facts, "+
				"preferences and decisions.", opts.Agent),
		})
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, spec := range toolSpecs() {
		if spec.management && !opts.Management {
			continue
		}
		tool := &sdk.Tool{Name: spec.name, Description: spec.desc, InputSchema: spec.inputSchema(), Annotations: spec.annotations}
		srv.AddTool(tool, handler(spec, c, opts.Agent, log))
	}
	return srv, nil
}

// handler answers calls of spec's tool for agent. Every failure is a tool
// result with IsError, which the model reads and can act on; protocol
// errors are left to the SDK (unknown tool, malformed request).
func handler(spec toolSpec, c client.Client, agent string, log *slog.Logger) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, _ error) {
		// The SDK does not recover handler panics, and one would end the
		// whole server (for stdio, the client's only connection to it).
		defer func() {
			if r := recover(); r != nil {
				log.Error("mcp tool panic", "tool", spec.name, "agent", agent, "panic", r)
				res = errorResult(fmt.Errorf("%s failed: internal error", spec.name))
			}
		}()
		in, err := spec.request(req.Params.Arguments, agent)
		if err != nil {
			return errorResult(err), nil
		}
		reply, err := c.Call(ctx, spec.op, agent, in)
		if err != nil {
			return errorResult(fmt.Errorf("%s failed: %w", spec.name, err)), nil
		}
		return toolResult(reply), nil
	}
}

// toolResult is the MCP form of a service reply: its text for the model,
// its details (error code included) as structured content for code.
func toolResult(r schemas.ToolResult) *sdk.CallToolResult {
	res := &sdk.CallToolResult{IsError: r.IsError, Content: make([]sdk.Content, 0, len(r.Content)), StructuredContent: r.Details}
	for _, c := range r.Content {
		res.Content = append(res.Content, &sdk.TextContent{Text: c.Text})
	}
	return res
}

func errorResult(err error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
}
