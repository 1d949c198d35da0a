package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/internal/testkit"
)

func TestMCPRefusesBadSetups(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"mcp"}, "--agent"},
		{[]string{"mcp", "--agent", "two words"}, "--agent"},
		{[]string{"mcp", "--agent", "main", "--http", "0.0.0.0:0"}, "without a token"},
		{[]string{"mcp", "--agent", "main", "--http", "7434"}, "host:port"},
	}
	for _, tc := range tests {
		code, _, errOut := runCLI(t, append(tc.args, "--data-dir", dir)...)
		if code != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("clawmem %v: exit %d, %q; want a failure mentioning %q", tc.args, code, errOut, tc.want)
		}
	}
	// The agent may come from the config instead; it is checked the same way.
	for cfg, want := range map[string]string{
		`{"mcp":{"agent":"a.b"}}`:  "mcp.agent",
		`{"mcp":{"agent":"main"}}`: "host:port", // the agent passed; the next check fails
	} {
		file := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := runCLI(t, "mcp", "--http", "7434", "--config", file, "--data-dir", dir)
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("config %s: exit %d, %q; want a failure mentioning %q", cfg, code, errOut, want)
		}
	}
}

// TestMCPStdioAcrossUp drives `clawmem mcp` as an MCP client launches it,
// over stdin and stdout: first on the store directly, then, once `clawmem
// up` has started on the same data dir, through it over NATS, with no
// restart in between.
func TestMCPStdioAcrossUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clawmem processes")
	}
	dir := t.TempDir()
	ctx := context.Background()
	logs := &testkit.Buffer{}
	cmd := exec.Command(clawmemBinary(t), "mcp", "--agent", "main", "--management", "--data-dir", dir)
	cmd.Stderr = logs
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "clawmem-test", Version: "0"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any) (string, map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, logs.String())
		}
		var text string
		if len(res.Content) > 0 {
			text = res.Content[0].(*sdk.TextContent).Text
		}
		if res.IsError {
			t.Fatalf("%s(%v): %s\n%s", name, args, text, logs.String())
		}
		b, _ := json.Marshal(res.StructuredContent)
		var d map[string]any
		json.Unmarshal(b, &d)
		return text, d
	}

	if _, d := call("memory_store", map[string]any{"text": "The release train leaves every second Tuesday"}); d["action"] != "created" {
		t.Fatalf("direct store: %v", d)
	}
	if text, d := call("memory_recall", map[string]any{"query": "release train Tuesday"}); d["count"] != 1.0 {
		t.Fatalf("direct recall: %q", text)
	}

	startUp(t, dir)
	if _, d := call("memory_store", map[string]any{"text": "Hotfixes ship from the release branch, never from main"}); d["action"] != "created" {
		t.Fatalf("store through up: %v", d)
	}
	if text, d := call("memory_stats", nil); d["total"] != 2.0 {
		t.Fatalf("stats through up: %q", text)
	}
	text, d := call("memory_recall", map[string]any{"query": "release train Tuesday"})
	if ms, _ := d["memories"].([]any); len(ms) == 0 || ms[0].(map[string]any)["text"] != "The release train leaves every second Tuesday" {
		t.Fatalf("recall through up: %q", text)
	}
}
