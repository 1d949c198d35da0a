package jsretry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/jsretry"
	"github.com/clawmem/clawmem/internal/natsembed"
)

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, true},
		{fmt.Errorf("consumer: %w", nats.ErrTimeout), true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10005, Description: "no suitable peers for placement, peer offline"}, true},
		{jetstream.ErrJetStreamNotEnabled, false},
		{jetstream.ErrJetStreamNotEnabledForAccount, false},
		{jetstream.ErrStreamNotFound, false},
		{jetstream.ErrOverlappingFilterSubjects, false},
		{context.Canceled, false},
		{errors.New("bad config"), false},
	} {
		if got := jsretry.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestDoStopsOnPermanentErrorAndContext(t *testing.T) {
	calls := 0
	_, err := jsretry.Do(context.Background(), nil, "x", func(context.Context) (int, error) {
		calls++
		return 0, jetstream.ErrStreamNotFound
	})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || calls != 1 {
		t.Fatalf("permanent error: %v after %d calls, want not found after 1", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	calls = 0
	_, err = jsretry.Do(ctx, nil, "x", func(context.Context) (int, error) {
		calls++
		return 0, nats.ErrTimeout
	})
	if !errors.Is(err, nats.ErrTimeout) || calls < 2 || ctx.Err() == nil {
		t.Fatalf("transient until the end: %v after %d calls (ctx %v)", err, calls, ctx.Err())
	}
}

// TestDoWaitsOutLostQuorum creates a consumer on an R3 stream while two of
// the three nodes are down (every request times out) and brings one back:
// the call succeeds once the cluster has its quorum again, as a worker
// starting during a node loss must.
func TestDoWaitsOutLostQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster")
	}
	c := natsembed.StartTestCluster(t, 3)
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc, jetstream.WithDefaultTimeout(3*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	c.Stop(2)
	if _, err := js.CreateOrUpdateConsumer(ctx, "T", jetstream.ConsumerConfig{Durable: "probe"}); !jsretry.Transient(err) {
		t.Fatalf("without quorum: %v, want a transient error", err)
	}
	go func() {
		time.Sleep(2 * time.Second)
		if err := c.Restart(1); err != nil {
			t.Error(err)
		}
	}()
	start := time.Now()
	cons, err := jsretry.Do(ctx, nil, "consumer", func(ctx context.Context) (jetstream.Consumer, error) {
		return js.CreateOrUpdateConsumer(ctx, "T", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy})
	})
	if err != nil {
		t.Fatalf("after the nodes came back: %v", err)
	}
	if waited := time.Since(start); waited < 2*time.Second {
		t.Errorf("succeeded after %v, before the nodes were back", waited)
	}
	if cons.CachedInfo().Name != "w" {
		t.Errorf("consumer %q", cons.CachedInfo().Name)
	}
}
