package node_test

import (
	"context"
	"strings"
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

// A single node (what `clawmem up` runs) logs its partitions once, not
// once per partition: one line for the partitions taken, one query
// service started and stopped (the writer's per-partition endpoints and
// store consumers are at Debug), one line for the partitions given up.
func TestSingleNodeLogsItsPartitionsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a node")
	}
	srv, _, _ := natsembed.StartTest(t)
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg.NATS.URL = srv.ClientURL()
	var log testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- node.Run(ctx, cfg, node.Options{Roles: []string{node.RoleStore, node.RoleQuery},
			Log: log.Logger()})
	}()
	p := client.NewNATSPipeline(func() (*nats.Conn, error) { return nats.Connect(srv.ClientURL()) })
	defer p.Close()
	waitFor(t, 30*time.Second, "the writer holding every partition", func() bool {
		st, err := p.Status(ctx)
		return err == nil && len(st.Writers) == 1 && len(st.Writers[0].Partitions) == schemas.DefaultPartitions
	})
	waitFor(t, 10*time.Second, "the node running", func() bool { return strings.Contains(log.String(), `msg="clawmem running"`) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := log.String()
	for msg, want := range map[string]int{
		"writer: took partitions": 1, "writer: partition taken": 0,
		"query service started": 1, "query service stopped": 1,
		"writer: gave up partitions": 1, "writer: partition given up": 0,
	} {
		if got := log.Logged(msg); got != want {
			t.Errorf("%q logged %d times, want %d", msg, got, want)
		}
	}
	if strings.Contains(out, "stage=store-") {
		t.Errorf("a partition's store consumer logged at Info")
	}
	if !strings.Contains(out, `partitions=0-15`) {
		t.Errorf("the partitions are not named as a range")
	}
	if t.Failed() {
		t.Log(out)
	}
}
