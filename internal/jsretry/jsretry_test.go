package jsretry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// TestDoWaitsOutARestartingServer creates a consumer while the JetStream
// server is down (every request times out) and brings it back: the call
// succeeds once the server does, as a worker starting during a node's
// restart must.
func TestDoWaitsOutARestartingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a server")
	}
	o := natsembed.Options{StoreDir: t.TempDir(), Port: -1}
	srv, err := natsembed.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	o.Port = srv.Addr().(*net.TCPAddr).Port // the same port again after the restart
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	pctx, pcancel := context.WithTimeout(ctx, time.Second)
	_, err = js.CreateOrUpdateConsumer(pctx, "T", jetstream.ConsumerConfig{Durable: "probe"})
	pcancel()
	if !jsretry.Transient(err) {
		t.Fatalf("with the server down: %v, want a transient error", err)
	}
	go func() {
		time.Sleep(2 * time.Second)
		again, err := natsembed.Start(o)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(again.Stop)
	}()
	// Attempts shorter than the outage: they time out and are made again.
	defer func(was time.Duration) { jsretry.Attempt = was }(jsretry.Attempt)
	jsretry.Attempt = 300 * time.Millisecond
	start := time.Now()
	calls := 0
	cons, err := jsretry.Do(ctx, nil, "consumer", func(ctx context.Context) (jetstream.Consumer, error) {
		calls++
		return js.CreateOrUpdateConsumer(ctx, "T", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy})
	})
	if err != nil {
		t.Fatalf("after the server came back: %v (%d calls)", err, calls)
	}
	if waited := time.Since(start); waited < 2*time.Second || calls < 2 {
		t.Errorf("succeeded after %v and %d calls, before the server was back", waited, calls)
	}
	if cons.CachedInfo().Name != "w" {
		t.Errorf("consumer %q", cons.CachedInfo().Name)
	}
}

// Do bounds each attempt; Open hands fn the caller's ctx itself, which a
// watch keeps for its life, and retries it the same way.
func TestOpenKeepsTheCallersContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "caller's")
	var doBounded bool
	if _, err := jsretry.Do(ctx, nil, "x", func(actx context.Context) (int, error) {
		_, doBounded = actx.Deadline()
		return 0, nil
	}); err != nil || !doBounded {
		t.Fatalf("Do: %v, attempt bounded %v", err, doBounded)
	}
	calls := 0
	got, err := jsretry.Open(ctx, nil, "x", func(actx context.Context) (int, error) {
		calls++
		if actx != ctx {
			t.Errorf("attempt %d got a ctx of its own", calls)
		}
		if calls < 3 {
			return 0, nats.ErrTimeout
		}
		return 7, nil
	})
	if err != nil || got != 7 || calls != 3 {
		t.Fatalf("Open: %d %v after %d calls, want 7 after 3", got, err, calls)
	}
}
