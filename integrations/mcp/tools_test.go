package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/schemas"
)

// TestSchemaAgreesWithCheck pins that the schema clients are shown and
// the check calls go through accept and refuse the same arguments, so a
// model that follows the schema is never refused by the check.
func TestSchemaAgreesWithCheck(t *testing.T) {
	specs := map[string]toolSpec{}
	for _, s := range toolSpecs() {
		specs[s.name] = s
	}
	tests := []struct {
		tool  string
		args  string
		valid bool
		// lenient: the check accepts what the schema refuses, namely null
		// for an absent argument, which some clients send.
		lenient bool
	}{
		{ToolRecall, `{"query":"coffee"}`, true, false},
		{ToolRecall, `{"query":"coffee","limit":20,"scope":"global","category":"reflection"}`, true, false},
		{ToolRecall, `{"query":"coffee","limit":1}`, true, false},
		{ToolRecall, `{"query":"coffee","limit":5.0}`, true, false},
		{ToolRecall, `{"query":"coffee","limit":null}`, true, true},
		{ToolRecall, `{}`, false, false},
		{ToolRecall, `[]`, false, false},
		{ToolRecall, `"coffee"`, false, false},
		{ToolRecall, `{"query":""}`, false, false},
		{ToolRecall, `{"query":42}`, false, false},
		{ToolRecall, `{"query":["coffee"]}`, false, false},
		{ToolRecall, `{"query":"coffee","limit":0}`, false, false},
		{ToolRecall, `{"query":"coffee","limit":21}`, false, false},
		{ToolRecall, `{"query":"coffee","limit":2.5}`, false, false},
		{ToolRecall, `{"query":"coffee","limit":"5"}`, false, false},
		{ToolRecall, `{"query":"coffee","category":"gossip"}`, false, false},
		{ToolRecall, `{"query":"coffee","category":"Fact"}`, false, false},
		{ToolRecall, `{"query":"coffee","scope":1}`, false, false},
		{ToolRecall, `{"query":"coffee","agentId":"other"}`, false, false},
		{ToolRecall, `{"query":"coffee","Query":"tea"}`, false, false},
		{ToolStore, `{"text":"x","importance":0,"category":"fact","scope":"global","metadata":{"k":[1]}}`, true, false},
		{ToolStore, `{"text":"x","importance":1}`, true, false},
		{ToolStore, `{"text":"x","importance":1.0000001}`, false, false},
		{ToolStore, `{"text":"x","importance":-0.1}`, false, false},
		{ToolStore, `{"text":"x","importance":true}`, false, false},
		{ToolStore, `{"text":"x","metadata":[]}`, false, false},
		{ToolStore, `{"text":"x","metadata":"k=v"}`, false, false},
		{ToolStore, `{"importance":0.5}`, false, false},
		{ToolForget, `{}`, true, false},
		{ToolForget, `{"memoryId":"3f2a9c1e"}`, true, false},
		{ToolForget, `{"memoryId":""}`, false, false},
		{ToolForget, `{"query":""}`, false, false},
		{ToolUpdate, `{"memoryId":"3f2a9c1e","text":"y","importance":0.5,"category":"decision","scope":"global"}`, true, false},
		{ToolUpdate, `{"text":"y"}`, false, false},
		{ToolUpdate, `{"memoryId":"3f2a9c1e","text":""}`, false, false},
		{ToolStats, `{}`, true, false},
		{ToolStats, `null`, true, true},
		{ToolStats, `{"scope":7}`, false, false},
		{ToolList, `{"limit":50,"offset":0,"scope":"global","category":"other"}`, true, false},
		{ToolList, `{"limit":51}`, false, false},
		{ToolList, `{"offset":-1}`, false, false},
		{ToolList, `{"offset":1e300}`, false, false},
		{ToolList, `{"offset":1e3}`, true, false},
	}
	for _, tc := range tests {
		spec := specs[tc.tool]
		_, err := spec.request(json.RawMessage(tc.args), "main")
		if (err == nil) != tc.valid {
			t.Errorf("%s %s: check error %v, want valid=%v", tc.tool, tc.args, err, tc.valid)
		}
		resolved, err := spec.inputSchema().Resolve(nil)
		if err != nil {
			t.Fatalf("%s: schema does not resolve: %v", tc.tool, err)
		}
		var v any
		if err := json.Unmarshal([]byte(tc.args), &v); err != nil {
			t.Fatal(err)
		}
		schemaErr := resolved.Validate(v)
		if (schemaErr == nil) != (tc.valid && !tc.lenient) {
			t.Errorf("%s %s: schema error %v, want valid=%v", tc.tool, tc.args, schemaErr, tc.valid && !tc.lenient)
		}
	}
}

// TestRequestDecodes pins that checked arguments arrive in the service
// request with their values, nulls left out.
func TestRequestDecodes(t *testing.T) {
	specs := map[string]toolSpec{}
	for _, s := range toolSpecs() {
		specs[s.name] = s
	}
	imp, text, cat := 0.25, "new", "fact"
	tests := []struct {
		tool string
		args string
		want any
	}{
		{ToolRecall, `{"query":"q","limit":3,"scope":"global","category":"entity"}`,
			&schemas.RecallRequest{Query: "q", Limit: 3, Scope: "global", Category: "entity"}},
		{ToolRecall, `{"query":"q","limit":5.0}`, &schemas.RecallRequest{Query: "q", Limit: 5}},
		{ToolStore, `{"text":"t","importance":0.25,"metadata":{"n":12345678901234567890,"f":0.1},"scope":null}`,
			&schemas.StoreRequest{Text: "t", Importance: &imp, Metadata: json.RawMessage(`{"f":0.1,"n":12345678901234567890}`)}},
		{ToolForget, `{"memoryId":"3f2a9c1e"}`, &schemas.ForgetRequest{MemoryID: "3f2a9c1e"}},
		{ToolUpdate, `{"memoryId":"3f2a9c1e","text":"new","category":"fact"}`,
			&schemas.UpdateRequest{MemoryID: "3f2a9c1e", Text: &text, Category: &cat}},
		{ToolList, `{"limit":5,"offset":10}`, &schemas.ListRequest{Limit: 5, Offset: 10}},
		{ToolStats, ``, &schemas.StatsRequest{}},
	}
	for _, tc := range tests {
		got, err := specs[tc.tool].request(json.RawMessage(tc.args), "main")
		if err != nil {
			t.Errorf("%s %s: %v", tc.tool, tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s = %+v, want %+v", tc.tool, tc.args, got, tc.want)
		}
	}
}

// TestRequestRefusesInvalidUTF8: decoded, the bad bytes would become
// U+FFFD and be stored as text (the hostile corpus's MCP entry did so).
func TestRequestRefusesInvalidUTF8(t *testing.T) {
	for _, s := range toolSpecs() {
		raw := json.RawMessage("{\"" + s.params[0].name + "\":\"Remember \xff\xfe the bytes\"}")
		if req, err := s.request(raw, "main"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
			t.Errorf("%s: %+v %v, want an error about UTF-8", s.name, req, err)
		}
	}
}
