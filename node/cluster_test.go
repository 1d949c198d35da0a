package node_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// TestClusterNodeLossDuringIngest runs the pipeline against a 3-node
// JetStream cluster with R3 streams, stops one node while 5,000 events go
// in and brings it back: every acknowledged event becomes exactly one
// memory, and every stream is whole on three nodes again.
func TestClusterNodeLossDuringIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and the pipeline")
	}
	const total = 5000
	c := natsembed.StartTestCluster(t, 3)
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL, cfg.NATS.Replicas = c.URLs(), 3
	off := false
	cfg.Watch.Enabled = &off
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- node.Run(ctx, cfg, node.Options{Roles: []string{node.RoleStore, node.RoleQuery, node.RoleCapture},
			Log: testLog(t, []string{"cluster"})})
	}()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("node: %v", err)
		}
	}()

	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	bulk := client.NewNATSBulk(nc)
	// Ingest starts once the node answers: its streams and buckets exist.
	waitFor(t, time.Minute, "the node", func() bool {
		_, err := bulk.Count(ctx, "")
		return err == nil
	})
	pub := producers.New(js)
	rng := rand.New(rand.NewPCG(16, 3))
	texts := make([]string, total)
	for i := range texts {
		texts[i] = "Remember that " + testkit.Sentence(rng, i)
	}
	var acked atomic.Int64
	send := func(i int) {
		ev, _ := json.Marshal(schemas.AgentEndEvent{Success: true, Messages: []schemas.Message{{Role: "user", Content: mustJSON(texts[i])}}})
		// The hook's own time: a retry derives the same Msg-Id.
		meta := producers.Meta{SessionKey: fmt.Sprintf("agent:main:s%d", i), Timestamp: int64(1_700_000_000_000 + i)}
		for attempt := 0; ; attempt++ {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := pub.Publish(pctx, schemas.KindAgentEnd, "main", ev, meta)
			pcancel()
			if err == nil {
				acked.Add(1)
				return
			}
			if attempt > 200 {
				t.Errorf("event %d never acknowledged: %v", i, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range work {
				send(i)
			}
		})
	}
	stopped, restarted := false, false
	var restartedAt time.Time
	start := time.Now()
	for i := range total {
		switch n := acked.Load(); {
		case !stopped && n >= total*3/10:
			c.Stop(1)
			stopped = true
			t.Logf("node 2 stopped after %d acks, %v", n, time.Since(start))
		case stopped && !restarted && n >= total*7/10:
			if err := c.Restart(1); err != nil {
				t.Fatal(err)
			}
			restarted, restartedAt = true, time.Now()
			t.Logf("node 2 restarted after %d acks, %v", n, time.Since(start))
		}
		work <- i
	}
	close(work)
	wg.Wait()
	t.Logf("%d events acknowledged after %v", acked.Load(), time.Since(start))
	if !restarted {
		t.Fatalf("the node was not stopped and restarted during ingest (%d acked)", acked.Load())
	}

	// Every event, once: count the memories by text over the query service.
	seen := map[string]int{}
	// An ack lost with the node is redelivered after the stage's AckWait
	// (30 s), perhaps twice on a loaded machine: the bound is generous.
	// When it is not met, the test says where the events wait.
	stored, said := -1, time.Now()
	waitForOr(t, 5*time.Minute, fmt.Sprintf("%d memories", total), func() bool {
		n, err := bulk.Count(ctx, "")
		if err == nil {
			stored = n
		}
		if time.Since(said) > 30*time.Second {
			said = time.Now()
			t.Logf("%d memories stored, %v after the node's restart", stored, time.Since(restartedAt).Round(time.Second))
		}
		return err == nil && n >= total
	}, func() string {
		return fmt.Sprintf("%d memories stored\n%s", stored, pipelineState(js))
	})
	t.Logf("stored after %v, %v after the node's restart", time.Since(start), time.Since(restartedAt))
	if err := bulk.Export(ctx, "", false, func(m schemas.Memory) error { seen[m.Text]++; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(seen) != total {
		t.Errorf("%d distinct memories, want %d", len(seen), total)
	}
	for i, text := range texts {
		if seen[text] != 1 {
			t.Errorf("event %d stored %d times", i, seen[text])
		}
	}
	// Every stream back to three current copies.
	for _, sc := range topology.Streams(topology.Config{Replicas: 3}) {
		waitFor(t, time.Minute, sc.Name+" on 3 nodes", func() bool {
			s, err := js.Stream(ctx, sc.Name)
			if err != nil {
				return false
			}
			info, err := s.Info(ctx)
			if err != nil || info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
				return false
			}
			for _, r := range info.Cluster.Replicas {
				if !r.Current || r.Offline {
					return false
				}
			}
			return true
		})
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	waitForOr(t, timeout, what, ok, nil)
}

// waitForOr is waitFor that, when it times out, says why (state).
func waitForOr(t *testing.T, timeout time.Duration, what string, ok func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			if state != nil {
				t.Fatalf("timed out waiting for %s:\n%s", what, state())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pipelineState says where the pipeline's messages are: each stream's
// state and leader, each stage's consumer (what it has not been given,
// what it holds unacknowledged, what was redelivered), the partitions'
// leases, and the stacks of the stages' goroutines.
func pipelineState(js jetstream.JetStream) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	consumers := map[string][]string{
		schemas.StreamEvents: {schemas.ConsumerCapture},
		schemas.StreamWork:   {schemas.ConsumerStore},
	}
	for p := range schemas.DefaultPartitions {
		consumers[schemas.StreamWork] = append(consumers[schemas.StreamWork], schemas.ConsumerStoreFor(p))
	}
	for _, name := range []string{schemas.StreamEvents, schemas.StreamWork, schemas.StreamMemories} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			fmt.Fprintf(&b, "stream %s: %v\n", name, err)
			continue
		}
		info, err := s.Info(ctx)
		if err != nil {
			fmt.Fprintf(&b, "stream %s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(&b, "stream %s: %d messages, seq %d..%d, leader %s\n", name, info.State.Msgs,
			info.State.FirstSeq, info.State.LastSeq, clusterLeader(info.Cluster))
		for _, cn := range consumers[name] {
			c, err := s.Consumer(ctx, cn)
			if err != nil {
				fmt.Fprintf(&b, "  consumer %s: %v\n", cn, err)
				continue
			}
			ci, err := c.Info(ctx)
			if err != nil {
				fmt.Fprintf(&b, "  consumer %s: %v\n", cn, err)
				continue
			}
			fmt.Fprintf(&b, "  consumer %s: pending %d, ack pending %d, redelivered %d, waiting pulls %d, delivered %d, acked %d, leader %s\n",
				cn, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting, ci.Delivered.Stream,
				ci.AckFloor.Stream, clusterLeader(ci.Cluster))
		}
	}
	if kv, err := js.KeyValue(ctx, schemas.BucketLeases); err != nil {
		fmt.Fprintf(&b, "leases: %v\n", err)
	} else if keys, err := kv.ListKeys(ctx); err != nil {
		fmt.Fprintf(&b, "leases: %v\n", err)
	} else {
		for k := range keys.Keys() {
			if e, err := kv.Get(ctx, k); err == nil {
				fmt.Fprintf(&b, "  lease %s rev %d: %s (%v ago)\n", k, e.Revision(), e.Value(), time.Since(e.Created()).Round(time.Millisecond))
			}
		}
	}
	// Where the stages are stuck, if they are: their goroutines' stacks.
	var stacks bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
	for g := range strings.SplitSeq(stacks.String(), "\n\n") {
		if strings.Contains(g, "clawmem/workers") {
			b.WriteString(g + "\n\n")
		}
	}
	return b.String()
}

func clusterLeader(c *jetstream.ClusterInfo) string {
	if c == nil {
		return "-"
	}
	return c.Leader
}

func mustJSON(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
