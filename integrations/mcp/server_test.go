package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

const testDims = 256

// testEngine opens a real SQLite store in a temp dir with the local
// embedder and default scopes (an agent reads global and agent:<id>, and
// stores in agent:<id>).
func testEngine(t testing.TB) *memory.Engine {
	t.Helper()
	e, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, testDims))
	return e
}

// answerCall answers in-process exactly as the query service would over
// NATS, as `clawmem mcp` does when no clawmem runs.
func answerCall(eng *memory.Engine) client.Client {
	return client.NewLocal(query.New(nil, eng, query.DefaultConfig(), nil, slog.New(slog.DiscardHandler)), nil)
}

// connect serves srv over an in-memory transport and returns a client
// session to it.
func connect(t testing.TB, srv *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "clawmem-test", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func newSession(t testing.TB, call client.Client, opts Options) *sdk.ClientSession {
	t.Helper()
	srv, err := NewServer(call, opts)
	if err != nil {
		t.Fatal(err)
	}
	return connect(t, srv)
}

func callTool(t testing.TB, cs *sdk.ClientSession, name string, args any) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", name, args, err)
	}
	return res
}

// mustCall calls a tool that must succeed and returns its text.
func mustCall(t testing.TB, cs *sdk.ClientSession, name string, args any) (string, map[string]any) {
	t.Helper()
	res := callTool(t, cs, name, args)
	text := resultText(res)
	if res.IsError {
		t.Fatalf("%s(%v) = error %q", name, args, text)
	}
	return text, structured(t, res)
}

func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func structured(t testing.TB, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if res.StructuredContent == nil {
		return nil
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s is not an object: %v", b, err)
	}
	return m
}

func TestNewServerNeedsAgent(t *testing.T) {
	call := answerCall(testEngine(t))
	for _, agent := range []string{"", "two words", "a.b", "*", strings.Repeat("x", 200)} {
		if _, err := NewServer(call, Options{Agent: agent}); err == nil {
			t.Errorf("NewServer(agent %q) succeeded, want an error", agent)
		}
	}
	if _, err := NewServer(nil, Options{Agent: "main"}); err == nil {
		t.Error("NewServer without a client succeeded")
	}
	if _, err := NewServer(call, Options{Agent: "main"}); err != nil {
		t.Errorf("NewServer(main): %v", err)
	}
}

func TestListTools(t *testing.T) {
	core := []string{ToolForget, ToolRecall, ToolStore, ToolUpdate}
	tests := []struct {
		name       string
		management bool
		want       []string
	}{
		{"core", false, core},
		{"management", true, append(slices.Clone(core), ToolList, ToolStats)},
	}
	eng := testEngine(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := newSession(t, answerCall(eng), Options{Agent: "main", Management: tc.management})
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]any{}
			var names []string
			for _, tool := range res.Tools {
				if tool.Description == "" {
					t.Errorf("%s has no description", tool.Name)
				}
				got[tool.Name] = tool.InputSchema.(map[string]any)
				names = append(names, tool.Name)
			}
			slices.Sort(names)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v", names, want)
			}
			for name, schema := range got {
				if schema["type"] != "object" {
					t.Errorf("%s: schema type %v, want object", name, schema["type"])
				}
				if _, ok := schema["properties"].(map[string]any)["agentId"]; ok {
					t.Errorf("%s takes agentId: the agent must come from the server, never the arguments", name)
				}
				if schema["additionalProperties"] == nil {
					t.Errorf("%s: schema allows unknown arguments", name)
				}
			}
			checkSchema(t, got)
		})
	}
}

// checkSchema pins what a client's model sees: required fields, category
// enums and the numeric ranges.
func checkSchema(t *testing.T, got map[string]map[string]any) {
	t.Helper()
	categories := make([]any, len(schemas.Categories))
	for i, c := range schemas.Categories {
		categories[i] = string(c)
	}
	required := map[string][]string{ToolRecall: {"query"}, ToolStore: {"text"}, ToolUpdate: {"memoryId"},
		ToolForget: nil, ToolStats: nil, ToolList: nil}
	props := map[string][]string{
		ToolRecall: {"category", "includeSuperseded", "limit", "query", "scope"},
		ToolStore:  {"category", "importance", "metadata", "scope", "supersedes", "text"},
		ToolForget: {"memoryId", "query", "scope"},
		ToolUpdate: {"category", "importance", "memoryId", "scope", "text"},
		ToolStats:  {"scope"},
		ToolList:   {"category", "includeSuperseded", "limit", "offset", "scope"},
	}
	ranges := map[string]map[string][2]float64{
		ToolRecall: {"limit": {1, 20}},
		ToolStore:  {"importance": {0, 1}},
		ToolUpdate: {"importance": {0, 1}},
		ToolList:   {"limit": {1, 50}},
	}
	for name, schema := range got {
		var req []string
		if r, ok := schema["required"].([]any); ok {
			for _, f := range r {
				req = append(req, f.(string))
			}
		}
		if !slices.Equal(req, required[name]) {
			t.Errorf("%s: required %v, want %v", name, req, required[name])
		}
		properties := schema["properties"].(map[string]any)
		var keys []string
		for k := range properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, props[name]) {
			t.Errorf("%s: properties %v, want %v", name, keys, props[name])
		}
		for k, p := range properties {
			p := p.(map[string]any)
			if p["description"] == nil || p["description"] == "" {
				t.Errorf("%s.%s has no description", name, k)
			}
			if k == "category" {
				if p["type"] != "string" || !slices.Equal(p["enum"].([]any), categories) {
					t.Errorf("%s.category = %v, want a string enum of %v", name, p, categories)
				}
			}
			if r, ok := ranges[name][k]; ok {
				if p["minimum"] != r[0] || p["maximum"] != r[1] {
					t.Errorf("%s.%s range = [%v, %v], want %v", name, k, p["minimum"], p["maximum"], r)
				}
			}
		}
	}
}

func TestToolsRoundTrip(t *testing.T) {
	cs := newSession(t, answerCall(testEngine(t)), Options{Agent: "main", Management: true})

	text, d := mustCall(t, cs, ToolStore, map[string]any{"text": "The user prefers dark roast coffee from Ethiopia",
		"category": "preference", "importance": 0.9})
	if d["action"] != "created" || d["scope"] != "agent:main" || d["category"] != "preference" {
		t.Fatalf("store details = %v (text %q), want created in agent:main as preference", d, text)
	}
	id := d["id"].(string)
	if !strings.Contains(text, id[:8]) {
		t.Errorf("store text %q does not name the short id %s", text, id[:8])
	}

	text, d = mustCall(t, cs, ToolRecall, map[string]any{"query": "dark roast coffee", "limit": 3})
	if d["count"] != 1.0 || !strings.Contains(text, "dark roast coffee") {
		t.Fatalf("recall = %q, details %v; want the stored memory", text, d)
	}
	if m := d["memories"].([]any)[0].(map[string]any); m["id"] != id {
		t.Errorf("recalled id %v, want %s", m["id"], id)
	}

	// A short id prefix is what the tools print and accept back.
	text, d = mustCall(t, cs, ToolUpdate, map[string]any{"memoryId": id[:8], "text": "The user prefers light roast coffee from Kenya",
		"category": "fact", "importance": 0.4})
	if d["action"] != "updated" || d["id"] != id {
		t.Fatalf("update = %q, details %v", text, d)
	}
	m := d["memory"].(map[string]any)
	if m["text"] != "The user prefers light roast coffee from Kenya" || m["category"] != "fact" || m["importance"] != 0.4 {
		t.Errorf("updated memory = %v", m)
	}

	text, d = mustCall(t, cs, ToolList, map[string]any{"category": "fact", "limit": 10})
	if d["count"] != 1.0 || !strings.Contains(text, "light roast") {
		t.Errorf("list = %q, details %v; want the updated memory", text, d)
	}
	text, d = mustCall(t, cs, ToolStats, map[string]any{})
	if d["total"] != 1.0 || !strings.Contains(text, "Total: 1") {
		t.Errorf("stats = %q, details %v; want 1 memory", text, d)
	}

	text, d = mustCall(t, cs, ToolForget, map[string]any{"memoryId": id})
	if d["action"] != "deleted" || d["id"] != id {
		t.Fatalf("forget = %q, details %v", text, d)
	}
	text, d = mustCall(t, cs, ToolRecall, map[string]any{"query": "light roast coffee"})
	if d["count"] != 0.0 {
		t.Errorf("recall after forget = %q, details %v; want nothing", text, d)
	}
	if _, d = mustCall(t, cs, ToolStats, nil); d["total"] != 0.0 {
		t.Errorf("stats after forget: details %v, want total 0", d)
	}
}

func TestInvalidArguments(t *testing.T) {
	cs := newSession(t, answerCall(testEngine(t)), Options{Agent: "main", Management: true})
	_, d := mustCall(t, cs, ToolStore, map[string]any{"text": "The deploy script lives in tools/deploy.sh"})
	id := d["id"].(string)

	tests := []struct {
		tool string
		args map[string]any
		want string // in the error text
	}{
		{ToolRecall, map[string]any{}, "query"},
		{ToolRecall, map[string]any{"query": ""}, "query"},
		{ToolRecall, map[string]any{"query": "   "}, "query is empty"},
		{ToolRecall, map[string]any{"query": 42}, "query"},
		{ToolRecall, map[string]any{"query": "deploy", "limit": 0}, "limit"},
		{ToolRecall, map[string]any{"query": "deploy", "limit": 21}, "limit"},
		{ToolRecall, map[string]any{"query": "deploy", "limit": 2.5}, "limit"},
		{ToolRecall, map[string]any{"query": "deploy", "limit": "5"}, "limit"},
		{ToolRecall, map[string]any{"query": "deploy", "category": "gossip"}, "category"},
		{ToolRecall, map[string]any{"query": "deploy", "scope": "nowhere:x"}, "scope"},
		{ToolStore, map[string]any{"text": ""}, "text"},
		{ToolStore, map[string]any{"importance": 0.5}, "text"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "importance": 1.5}, "importance"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "importance": -0.1}, "importance"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "importance": "high"}, "importance"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "category": "Gossip"}, "category"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "agentId": "other"}, "agentId"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "scope": "agent:other"}, "may not use scope"},
		{ToolStore, map[string]any{"text": "A durable fact about builds", "metadata": "x"}, "metadata"},
		{ToolForget, map[string]any{}, "give a memory id or a query"},
		{ToolForget, map[string]any{"memoryId": "zz"}, "zz"},
		{ToolForget, map[string]any{"memoryId": "00000000-0000-4000-8000-000000000000"}, "not found"},
		{ToolUpdate, map[string]any{"text": "new text"}, "memoryId"},
		{ToolUpdate, map[string]any{"memoryId": id}, "nothing to update"},
		{ToolUpdate, map[string]any{"memoryId": id, "importance": 2}, "importance"},
		{ToolUpdate, map[string]any{"memoryId": id, "category": "nope"}, "category"},
		{ToolList, map[string]any{"limit": 51}, "limit"},
		{ToolList, map[string]any{"offset": -1}, "offset"},
		{ToolStats, map[string]any{"scope": 7}, "scope"},
	}
	for _, tc := range tests {
		res := callTool(t, cs, tc.tool, tc.args)
		text := resultText(res)
		if !res.IsError {
			t.Errorf("%s(%v) succeeded with %q, want an error", tc.tool, tc.args, text)
			continue
		}
		if !strings.Contains(text, tc.want) {
			t.Errorf("%s(%v) error = %q, want it to mention %q", tc.tool, tc.args, text, tc.want)
		}
	}
	// None of that hurt the server or the memory.
	if _, d := mustCall(t, cs, ToolRecall, map[string]any{"query": "deploy script"}); d["count"] != 1.0 {
		t.Errorf("recall after the invalid calls: %v, want the one memory", d)
	}
}

func TestServiceErrorDetails(t *testing.T) {
	cs := newSession(t, answerCall(testEngine(t)), Options{Agent: "main"})
	res := callTool(t, cs, ToolForget, map[string]any{"memoryId": "00000000-0000-4000-8000-000000000000"})
	if !res.IsError {
		t.Fatalf("forget of a missing id succeeded: %q", resultText(res))
	}
	if d := structured(t, res); d["code"] != schemas.CodeNotFound {
		t.Errorf("error details = %v, want code %q", d, schemas.CodeNotFound)
	}
}

func TestAgentIsolation(t *testing.T) {
	eng := testEngine(t)
	alice := newSession(t, answerCall(eng), Options{Agent: "alice", Management: true})
	bob := newSession(t, answerCall(eng), Options{Agent: "bob", Management: true})

	_, d := mustCall(t, alice, ToolStore, map[string]any{"text": "Alice keeps the vault combination in the blue notebook"})
	id := d["id"].(string)
	if d["scope"] != "agent:alice" {
		t.Fatalf("alice stored in %v, want agent:alice", d["scope"])
	}

	if _, d := mustCall(t, bob, ToolRecall, map[string]any{"query": "vault combination blue notebook"}); d["count"] != 0.0 {
		t.Errorf("bob recalled alice's memory: %v", d)
	}
	if _, d := mustCall(t, bob, ToolList, nil); d["count"] != 0.0 {
		t.Errorf("bob lists alice's memory: %v", d)
	}
	if _, d := mustCall(t, bob, ToolStats, nil); d["total"] != 0.0 {
		t.Errorf("bob's stats count alice's memory: %v", d)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{ToolForget, map[string]any{"memoryId": id}},
		{ToolForget, map[string]any{"memoryId": id[:8]}},
		{ToolUpdate, map[string]any{"memoryId": id, "text": "Bob was here"}},
		{ToolRecall, map[string]any{"query": "vault", "scope": "agent:alice"}},
		{ToolList, map[string]any{"scope": "agent:alice"}},
		{ToolStore, map[string]any{"text": "Bob writes into Alice's scope", "scope": "agent:alice"}},
	} {
		if res := callTool(t, bob, c.tool, c.args); !res.IsError {
			t.Errorf("bob %s(%v) succeeded: %q", c.tool, c.args, resultText(res))
		}
	}
	// Forgetting by query is scoped too: bob has nothing to match.
	if text, d := mustCall(t, bob, ToolForget, map[string]any{"query": "vault combination blue notebook"}); d["action"] != "candidates" {
		t.Errorf("bob forget by query = %q, %v; want no deletion", text, d)
	}

	text, d := mustCall(t, alice, ToolRecall, map[string]any{"query": "vault combination blue notebook"})
	if d["count"] != 1.0 || !strings.Contains(text, "blue notebook") {
		t.Errorf("alice's memory after bob's attempts: %q, %v", text, d)
	}
}

// funcClient is a client.Client made of one function, for faults no real
// client produces on demand.
type funcClient func(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error)

func (f funcClient) Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error) {
	return f(ctx, op, agent, req)
}
func (f funcClient) Close() error { return nil }

func TestCallFailures(t *testing.T) {
	var panicked bool
	call := funcClient(func(_ context.Context, op, agent string, req any) (schemas.ToolResult, error) {
		switch op {
		case schemas.OpStore:
			return schemas.ToolResult{}, errors.New("no clawmem query service answers on NATS")
		case schemas.OpForget:
			panicked = true
			panic("boom")
		}
		r := req.(*schemas.RecallRequest)
		return schemas.ToolResult{Content: []schemas.TextContent{{Type: "text", Text: agent + ":" + r.Query}}}, nil
	})
	cs := newSession(t, call, Options{Agent: "main"})

	res := callTool(t, cs, ToolStore, map[string]any{"text": "x"})
	if !res.IsError || !strings.Contains(resultText(res), "no clawmem query service") {
		t.Errorf("store with the service down = %v %q, want a tool error naming the cause", res.IsError, resultText(res))
	}
	res = callTool(t, cs, ToolForget, map[string]any{"query": "x"})
	if !panicked || !res.IsError || !strings.Contains(resultText(res), "internal error") {
		t.Errorf("forget whose call panics = %v %q, want an internal error result", res.IsError, resultText(res))
	}
	// The server is still there, and the agent is its own, whatever the
	// arguments say.
	if text, _ := mustCall(t, cs, ToolRecall, map[string]any{"query": "hello"}); text != "main:hello" {
		t.Errorf("recall = %q, want main:hello", text)
	}
}
