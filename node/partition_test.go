package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
)

// Two writers share the partitions out; every write sent to a replica
// reaches the writer of the scope it changes: agents' own memories, a
// shared scope's, an import spread over scopes, and a bulk delete and a
// consolidation over every scope, which each writer does for its own.
func TestPartitionedWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two writers and a replica")
	}
	srv, nc, _ := natsembed.StartTest(t)
	runNode(t, srv.ClientURL(), node.RoleStore)
	runNode(t, srv.ClientURL(), node.RoleStore)
	runNode(t, srv.ClientURL(), node.RoleReplica)
	ctx := context.Background()
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return nats.Connect(srv.ClientURL()) })
	defer p.Close()
	var st client.Status
	waitFor(t, 30*time.Second, "two writers with half the partitions each", func() bool {
		var err error
		st, err = p.Status(ctx)
		return err == nil && len(st.Writers) == 2 && len(st.Writers[0].Partitions) == schemas.DefaultPartitions/2 &&
			len(st.Writers[1].Partitions) == schemas.DefaultPartitions/2 && len(st.Instances) == 1
	})
	// One agent whose own scope each writer writes.
	var agents []string
	for _, w := range st.Writers {
		for i := 0; ; i++ {
			a := fmt.Sprintf("agent%d", i)
			if slices.Contains(w.Partitions, schemas.AgentPartition(a, schemas.DefaultPartitions)) {
				agents = append(agents, a)
				break
			}
		}
	}
	c := client.NewNATS(nc)
	call := func(agent, op string, req any) schemas.ToolResult {
		t.Helper()
		for attempt := 0; ; attempt++ {
			res, err := c.Call(ctx, op, agent, req)
			if err == nil && !isUnavailable(res) {
				return res
			}
			if attempt == 100 {
				t.Fatalf("%s %s: %v %+v", agent, op, err, res)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	type stored struct {
		schemas.StoreDetails
		LogSeq uint64 `json:"logSeq"`
	}
	recallFinds := func(agent, q, id string, seq uint64) bool {
		rec := details[schemas.RecallDetails](t, call(agent, schemas.OpRecall, schemas.RecallRequest{Query: q, AfterSeq: seq}))
		for _, m := range rec.Memories {
			if m.ID == id {
				return true
			}
		}
		return false
	}
	for _, a := range agents {
		for i := range 5 {
			text := fmt.Sprintf("%s keeps its project %d notes in folder f%d", a, i, i*3)
			s := details[stored](t, call(a, schemas.OpStore, schemas.StoreRequest{Text: text}))
			if s.Action != "created" || s.LogSeq == 0 || s.Scope != "agent:"+a {
				t.Fatalf("store by %s: %+v", a, s)
			}
			if !recallFinds(a, text, s.ID, s.LogSeq) {
				t.Fatalf("%s does not recall its memory %s after seq %d", a, s.ID, s.LogSeq)
			}
		}
	}
	// A shared scope's memory, written by one agent, forgotten by the
	// other by query: each time by global's writer.
	shared := details[stored](t, call(agents[0], schemas.OpStore, schemas.StoreRequest{Text: "The staging database moved to host db7 in October", Scope: schemas.GlobalScope}))
	if shared.Scope != schemas.GlobalScope || shared.LogSeq == 0 {
		t.Fatalf("store in global: %+v", shared)
	}
	if !recallFinds(agents[1], "staging database host", shared.ID, shared.LogSeq) {
		t.Fatal("the other agent does not recall the global memory")
	}
	gone := details[schemas.ForgetDetails](t, call(agents[1], schemas.OpForget, schemas.ForgetRequest{Query: "The staging database moved to host db7 in October"}))
	if gone.Action != "deleted" || gone.ID != shared.ID {
		t.Fatalf("forget by query: %+v", gone)
	}
	// An import over three scopes: each memory to its scope's writer,
	// the results numbered as sent.
	var mems []schemas.Memory
	scopes := []string{"agent:" + agents[0], "agent:" + agents[1], schemas.GlobalScope}
	for i := range 30 {
		mems = append(mems, schemas.Memory{ID: uuid.NewString(), Text: fmt.Sprintf("Imported fact %d: the build cache lives in bucket b%d", i, i*11),
			Scope: scopes[i%3], Category: schemas.CategoryFact, Importance: 0.6, Timestamp: time.Now().UnixMilli()})
	}
	mems = append(mems, schemas.Memory{ID: uuid.NewString(), Text: "A memory in a scope that is not one", Scope: "no such scope!", Importance: 0.5})
	imp := details[schemas.ImportDetails](t, call("", schemas.OpImport, schemas.ImportRequest{Memories: mems}))
	if imp.Imported != 30 || imp.Failed != 1 || len(imp.Results) != 1 || imp.Results[0].Line != 31 {
		t.Fatalf("import: %+v", imp)
	}
	bulk := client.NewNATSBulk(nc)
	total := 2*5 + 30
	waitFor(t, 10*time.Second, fmt.Sprintf("%d memories on the replica", total), func() bool {
		n, err := bulk.Count(ctx, "")
		return err == nil && n == total
	})
	cons := details[memory.ConsolidateReport](t, call("", schemas.OpConsolidate, schemas.ConsolidateRequest{DryRun: true}))
	if cons.Scanned != total {
		t.Fatalf("consolidation over every scope scanned %d memories, want %d: %+v", cons.Scanned, total, cons)
	}
	future := time.Now().Add(time.Hour).UnixMilli()
	dry := details[schemas.DeleteBulkDetails](t, call("", schemas.OpDeleteBulk, schemas.DeleteBulkRequest{Before: future, DryRun: true}))
	if dry.Count != total {
		t.Fatalf("delete-bulk dry run over every scope: %+v, want %d", dry, total)
	}
	del := details[schemas.DeleteBulkDetails](t, call("", schemas.OpDeleteBulk, schemas.DeleteBulkRequest{Before: future}))
	if del.Count != total {
		t.Fatalf("delete-bulk over every scope: %+v, want %d", del, total)
	}
	waitFor(t, 10*time.Second, "no memory left on the replica", func() bool {
		n, err := bulk.Count(ctx, "")
		return err == nil && n == 0
	})
}
