package natsembed

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/jsretry"
)

// A node stopped and restarted rejoins, and an R3 stream written while it
// was away is whole on it again.
func TestClusterNodeRejoins(t *testing.T) {
	c := StartTestCluster(t, 3)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A cluster just started may not yet know all its peers ("no suitable
	// peers for placement"): the stream is created as clawmem creates its
	// own, retrying what is transient (a fresh-clone CI run failed here).
	s, err := jsretry.Do(ctx, nil, "stream T", func(ctx context.Context) (jetstream.Stream, error) {
		return js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each publish is retried, as a producer does while the cluster
	// elects new leaders; the Msg-Id keeps a retried one single.
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			for attempt := 0; ; attempt++ {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := js.Publish(pctx, fmt.Sprintf("t.%d", i), []byte("x"), jetstream.WithMsgID(fmt.Sprint(i)))
				pcancel()
				if err == nil {
					break
				}
				if attempt == 20 {
					t.Fatalf("publish %d: %v", i, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	publish(0, 100)
	c.Stop(2)
	publish(100, 200)
	if err := c.Restart(2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := s.Info(ctx)
		if err == nil && info.State.Msgs == 200 && info.Cluster != nil && len(info.Cluster.Replicas) == 2 &&
			info.Cluster.Replicas[0].Current && info.Cluster.Replicas[1].Current {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream not whole on 3 nodes: %+v %v", info, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
