package workers

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

// Each item goes straight to the work of the partition that writes the
// scope it changes: the agent's own scope, global, a scope of the
// agent's configured access, an invalidation's target's scope; an item
// whose scope cannot be resolved goes to the agent's default scope's
// writer (which refuses it). A repeated publish stores nothing twice.
func TestWorkRouteSendsEachItemToItsScopesWriter(t *testing.T) {
	const n = schemas.DefaultPartitions
	ctx := context.Background()
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	sm, err := scopes.New(scopes.Config{AgentAccess: map[string][]string{"main": {"agent:main", "global", "custom:team"}}})
	if err != nil {
		t.Fatal(err)
	}
	route := newWorkRoute(n, sm)
	items := []schemas.CaptureItem{
		{SourceID: "own", Text: "The build server restarts on Sundays"},
		{SourceID: "shared", Text: "Standup moved to ten thirty", Scope: schemas.GlobalScope},
		{SourceID: "team", Text: "The team uses trunk-based development", Scope: "custom:team"},
		{SourceID: "gone", Text: "no longer true", Invalidates: "6f1d6c2e-8a59-4b4e-9c53-6b8f3f0e2a11", Scope: schemas.GlobalScope},
		{SourceID: "unknown-target", Text: "no longer true", Invalidates: "7a1d6c2e-8a59-4b4e-9c53-6b8f3f0e2a11"},
		{SourceID: "denied", Text: "Someone else's note", Scope: "agent:other"},
	}
	want := map[int][]string{}
	for id, scope := range map[string]string{"own": "agent:main", "shared": "global", "team": "custom:team", "gone": "global",
		"unknown-target": "agent:main", "denied": "agent:main"} {
		p := schemas.ScopePartition(scope, n)
		want[p] = append(want[p], id)
	}
	if len(want) < 3 {
		t.Fatalf("the test needs the scopes in at least three partitions: %v", want)
	}
	for range 2 { // the second publish is a retry
		if err := route.publish(ctx, js, schemas.WorkCandidates, "main", "capture", "capture-7", items); err != nil {
			t.Fatal(err)
		}
	}
	s, err := js.Stream(ctx, schemas.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != uint64(len(want)) {
		t.Fatalf("%d work messages, want one per partition (%d)", info.State.Msgs, len(want))
	}
	for p, ids := range want {
		m, err := s.GetLastMsgForSubject(ctx, schemas.WorkPartitionSubject(schemas.WorkCandidates, "main", p))
		if err != nil {
			t.Fatalf("partition %d (%v): %v", p, ids, err)
		}
		var b schemas.WorkBatch
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range b.Items {
			got = append(got, it.SourceID)
		}
		slices.Sort(got)
		slices.Sort(ids)
		if !slices.Equal(got, ids) || b.AgentID != "main" || b.Source != "capture" {
			t.Errorf("partition %d holds %v from %q/%q, want %v", p, got, b.AgentID, b.Source, ids)
		}
	}
}

// Smart extraction's DELETE names its target's scope (from the memories
// it showed the model), so the target's writer gets the invalidation.
func TestExtractedInvalidationCarriesItsTargetsScope(t *testing.T) {
	llm, err := distill.NewLLM(distill.LLMConfig{Provider: distill.ProviderOpenAI, APIKey: "test-key", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	x := newExtractor(ExtractConfig{LLM: llm}, nil, redact.ModeOff, slog.New(slog.DiscardHandler))
	known := []distill.Known{{Alias: "m1", ID: "id-own", Scope: "agent:main"}, {Alias: "m2", ID: "id-shared", Scope: schemas.GlobalScope}}
	items := x.items(&turn{agent: "main", session: "s1"}, []distill.Decision{
		{Action: distill.ActionDelete, Target: "id-shared", Text: "The office moved"},
		{Action: distill.ActionUpdate, Target: "id-own", Text: "I drive a bike now", Category: "fact", Importance: 0.8},
	}, known)
	if len(items) != 2 || items[0].Invalidates != "id-shared" || items[0].Scope != schemas.GlobalScope {
		t.Fatalf("invalidation: %+v", items)
	}
	if items[1].Supersedes != "id-own" || items[1].Scope != "" {
		t.Fatalf("an update keeps the scope the agent's write resolves to: %+v", items[1])
	}
}
