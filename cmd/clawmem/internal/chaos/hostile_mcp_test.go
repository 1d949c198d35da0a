package chaos

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

// answering is a client that accepts every call and remembers it.
type answering struct {
	mu    sync.Mutex
	calls []string
}

func (a *answering) Call(_ context.Context, op, agent string, _ any) (schemas.ToolResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, op+" as "+agent)
	return schemas.ToolResult{Content: []schemas.TextContent{{Type: "text", Text: "done"}}}, nil
}

func (a *answering) Close() error { return nil }

// The MCP driver tells a refused session from an accepted one: a call
// the server takes is not refused, whatever the corpus expected.
func TestMCPSession(t *testing.T) {
	call := func(id, tool, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	}
	for _, tc := range []struct {
		name, agent, body string
		refused           bool
		answer            string // a part of it
	}{
		{"a good store", "main", call("1", "memory_store", `{"text":"Remember that the build flag is --fast"}`), false, "accepted: done"},
		{"a good call among bad ones", "main", call("1", "memory_store", `{"text":7}`) + "\n" + call("2", "memory_recall", `{"query":"x"}`), false, "accepted"},
		{"wrong argument type", "main", call("1", "memory_store", `{"text":7}`), true, `isError: invalid arguments for memory_store: "text" must be a string`},
		{"unknown tool", "main", call(`"a"`, "memory_nuke", `{}`), true, "error"},
		{"unknown method", "main", `{"jsonrpc":"2.0","id":3,"method":"memory/nuke"}`, true, "error -32601"},
		{"malformed", "main", `{"jsonrpc":"2.0","id":4,"method":}`, true, "session ended: invalid character"},
		// The ping after it continues the message: the server waits for
		// more until its stdin is closed.
		{"cut short", "main", `{"jsonrpc":"2.0","id":4,"method":`, true, "session ended: unexpected EOF"},
		{"a notification only", "main", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, false, "ignored"},
		{"wildcard agent", "*", call("1", "memory_recall", `{"query":"x"}`), true, "agent id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &answering{}
			refused, answer := mcpSession(context.Background(), c, tc.agent, []byte(tc.body))
			if refused != tc.refused || !strings.Contains(answer, tc.answer) {
				t.Fatalf("refused %v, answer %q; want %v and %q (calls: %v)", refused, answer, tc.refused, tc.answer, c.calls)
			}
		})
	}
}
