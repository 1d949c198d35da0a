package work

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

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
	route := NewRoute(n, sm)
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
		if err := route.Publish(ctx, js, schemas.WorkCandidates, "main", "capture", "capture-7", items); err != nil {
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
