package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
)

// runNode runs roles on a data dir of their own against url until the test
// ends.
func runNode(t *testing.T, url string, roles ...string) {
	t.Helper()
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL = url
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, cfg, node.Options{Roles: roles, Log: testLog(t, roles)})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("node %v: %v", roles, err)
		}
	})
}

func details[T any](t *testing.T, res schemas.ToolResult) T {
	t.Helper()
	if res.IsError {
		t.Fatalf("error reply: %+v", res)
	}
	var d T
	raw, _ := json.Marshal(res.Details)
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("details %s: %v", raw, err)
	}
	return d
}

// A writer that answers no public queries and two query replicas: writes
// sent to the public subjects reach the writer through a replica, carry
// their log sequence, and a read with afterSeq on any replica sees them
// (read-your-writes); a forget is gone from every replica.
func TestReplicasReadYourWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a writer and two replicas")
	}
	srv, nc, _ := natsembed.StartTest(t)
	runNode(t, srv.ClientURL(), node.RoleStore) // the writer: no public endpoints
	runNode(t, srv.ClientURL(), node.RoleReplica)
	runNode(t, srv.ClientURL(), node.RoleReplica)
	c := client.NewNATS(nc)
	ctx := context.Background()
	call := func(op string, req any) schemas.ToolResult {
		t.Helper()
		for attempt := 0; ; attempt++ {
			res, err := c.Call(ctx, op, "main", req)
			if err == nil && !isUnavailable(res) {
				return res
			}
			if attempt == 100 {
				t.Fatalf("%s: %v", op, err)
			}
			time.Sleep(100 * time.Millisecond) // the replicas are still catching up
		}
	}
	type stored struct {
		schemas.StoreDetails
		LogSeq uint64 `json:"logSeq"`
	}
	for i := range 20 {
		text := fmt.Sprintf("Project %d ships on the %d of the month from warehouse w%d", i, i+1, i*7)
		st := details[stored](t, call(schemas.OpStore, schemas.StoreRequest{Text: text}))
		if st.Action != "created" || st.LogSeq == 0 {
			t.Fatalf("store %d: %+v", i, st)
		}
		rec := details[schemas.RecallDetails](t, call(schemas.OpRecall, schemas.RecallRequest{
			Query: fmt.Sprintf("when does project %d ship", i), AfterSeq: st.LogSeq}))
		found := false
		for _, m := range rec.Memories {
			found = found || m.ID == st.ID
		}
		if !found {
			t.Fatalf("read %d after its write (seq %d) misses it: %+v", i, st.LogSeq, rec)
		}
		list := details[schemas.ListDetails](t, call(schemas.OpList, schemas.ListRequest{Limit: 50, AfterSeq: st.LogSeq}))
		if list.Count != i+1 {
			t.Fatalf("list after write %d: %d memories", i, list.Count)
		}
	}
	first := details[schemas.ListDetails](t, call(schemas.OpList, schemas.ListRequest{Limit: 1}))
	gone := details[stored](t, call(schemas.OpForget, schemas.ForgetRequest{MemoryID: first.Memories[0].ID}))
	if gone.LogSeq == 0 {
		t.Fatalf("forget: %+v", gone)
	}
	// Both replicas, whichever answers: ask enough times to meet both.
	for range 10 {
		list := details[schemas.ListDetails](t, call(schemas.OpList, schemas.ListRequest{Limit: 50, AfterSeq: gone.LogSeq}))
		if list.Count != 19 {
			t.Fatalf("after the forget a replica lists %d memories", list.Count)
		}
	}
	// Status: the writer and both replicas, which catch up to the log.
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return nats.Connect(srv.ClientURL()) })
	defer p.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := p.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]int{}
		lagging := 0
		for _, in := range st.Instances {
			roles[in.Role]++
			if in.Lag > 0 {
				lagging++
			}
		}
		if len(st.Writers) == 1 && len(st.Writers[0].Partitions) == schemas.DefaultPartitions && st.LogSeq >= gone.LogSeq && roles["replica"] == 2 && lagging == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A sequence no write made yet: an explicit stale error, not a wait
	// without end or an answer from an older state.
	res := call(schemas.OpRecall, schemas.RecallRequest{Query: "project", AfterSeq: gone.LogSeq + 1000})
	if d := details[schemas.ErrorDetails](t, schemas.ToolResult{Details: res.Details}); !res.IsError || d.Code != schemas.CodeStale {
		t.Fatalf("recall after an unwritten sequence: %+v", res)
	}
}

// testLog is a node's log: on stderr with -v, else kept and printed only
// if the test fails, so a failure that happens once in many runs (a
// loaded CI machine) leaves the nodes' account of it.
func testLog(t *testing.T, roles []string) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", fmt.Sprint(roles))
	}
	buf := &testkit.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %v's log:\n%s", roles, buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", fmt.Sprint(roles))
}

// isUnavailable is a replica's answer while no writer answers yet.
func isUnavailable(res schemas.ToolResult) bool {
	d, _ := res.Details.(map[string]any)
	return res.IsError && d["code"] == schemas.CodeUnavailable
}
