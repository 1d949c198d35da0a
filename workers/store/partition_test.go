package store

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// A partition's store stage writes the items of the scopes its partition
// holds and moves the others (a global lesson) to their partition's work,
// once even when its message is delivered again; work published before
// partitions is moved to its partitions.
func TestStorePartitionMovesOtherScopesWork(t *testing.T) {
	const n = schemas.DefaultPartitions
	_, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	eng, _ := testkit.Engine(t, "", testkit.LocalEmbedder(t, 256))
	agent := "main"
	home, global := schemas.AgentPartition(agent, n), schemas.ScopePartition(schemas.GlobalScope, n)
	if home == global {
		t.Fatalf("the test needs %s's partition and global's to differ (both %d)", agent, home)
	}
	w := New(js, eng, stage.Config{}, stage.NewMetrics(nil), nil, slog.New(slog.DiscardHandler))
	w.Partitions = n
	done := make(chan error, 2)
	go func() { done <- w.RunPartition(ctx, home) }()
	go func() { done <- w.RunLegacy(ctx) }()
	item := func(id, text, scope string) schemas.CaptureItem {
		return schemas.CaptureItem{SourceID: id, Text: text, Scope: scope, Importance: 0.7, Dedup: 0.95}
	}
	b, _ := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: agent, Source: "test", Items: []schemas.CaptureItem{
		item("own", "The build server restarts every Sunday night", ""),
		item("shared", "The team standup moved to ten thirty", schemas.GlobalScope),
	}})
	if _, err := js.Publish(ctx, schemas.WorkItemSubject(schemas.WorkLessons, agent, n), b); err != nil {
		t.Fatal(err)
	}
	legacy, _ := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: agent, Source: "test", Items: []schemas.CaptureItem{
		item("old", "The on-call rota lives in the wiki", ""),
	}})
	if _, err := js.Publish(ctx, schemas.WorkCandidates+"."+agent, legacy); err != nil {
		t.Fatal(err)
	}
	// The agent's own item is written here; the global one waits in
	// global's partition, which no stage of this test runs; the legacy one
	// reaches the agent's partition and is written too.
	testkit.WaitFor(t, 10*time.Second, func() error {
		for _, id := range []string{"own", "old"} {
			if _, err := eng.Backend().Get(ctx, MemoryID(agent, id), engine.AllScopes()); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	})
	s, _ := js.Stream(ctx, schemas.StreamWork)
	testkit.WaitFor(t, 10*time.Second, func() error {
		m, err := s.GetLastMsgForSubject(ctx, schemas.WorkLessons+"."+strconv.Itoa(global)+"."+agent)
		if err != nil {
			return err
		}
		var moved schemas.WorkBatch
		if err := json.Unmarshal(m.Data, &moved); err != nil || len(moved.Items) != 1 || moved.Items[0].SourceID != "shared" {
			return fmt.Errorf("moved work: %s %v", m.Data, err)
		}
		return nil
	})
	if _, err := eng.Backend().Get(ctx, MemoryID(agent, "shared"), engine.AllScopes()); err == nil {
		t.Fatal("global's item was written by another partition's stage")
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(schemas.WorkSubject))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d messages in WORK, want only the moved one", info.State.Msgs)
	}
	// global's stage writes it.
	go func() { done <- w.RunPartition(ctx, global) }()
	testkit.WaitFor(t, 10*time.Second, func() error {
		m, err := eng.Backend().Get(ctx, MemoryID(agent, "shared"), engine.AllScopes())
		if err == nil && m.Scope != schemas.GlobalScope {
			return fmt.Errorf("scope %s", m.Scope)
		}
		return err
	})
	// An item whose scope the stage cannot tell (one its agent may not
	// use) is refused where it is, not moved on, whatever the agent's own
	// partition.
	other := ""
	for i := 0; other == ""; i++ {
		if a := fmt.Sprintf("agent%d", i); schemas.AgentPartition(a, n) > home {
			other = a
		}
	}
	refused, _ := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: other, Source: "test", Items: []schemas.CaptureItem{
		item("denied", "A fact for a scope this agent may not use", "agent:nobody"),
	}})
	if _, err := js.Publish(ctx, schemas.WorkCandidates+"."+strconv.Itoa(home)+"."+other, refused); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, func() error {
		info, err := s.Info(ctx)
		if err != nil || info.State.Msgs != 0 {
			return fmt.Errorf("%d messages in WORK (%v)", info.State.Msgs, err)
		}
		return nil
	})
	if _, err := eng.Backend().Get(ctx, MemoryID(other, "denied"), engine.AllScopes()); err == nil {
		t.Fatal("an item for a scope its agent may not use was stored")
	}
	cancel()
	for range 3 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
