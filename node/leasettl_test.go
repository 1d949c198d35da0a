package node

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// A writer that starts while JetStream cannot answer the leases bucket's
// status (a node of the cluster down) waits for it instead of stopping
// the node: the cluster chaos scenario saw 'role failed role=store
// err="writers' leases: context deadline exceeded"'.
func TestLeaseTTLWaitsOutJetStream(t *testing.T) {
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ttl = 7 * time.Second
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: schemas.BucketLeases, TTL: ttl}); err != nil {
		t.Fatal(err)
	}
	_, njs := natsembed.ConnectTest(t, srv, natsembed.Redial...)
	kv, err := njs.KeyValue(ctx, schemas.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	var logs testkit.Buffer
	type answer struct {
		ttl time.Duration
		err error
	}
	done := make(chan answer, 1)
	go func() {
		got, err := leaseTTL(ctx, kv, &config.Config{NATS: config.NATS{LeaseTTL: "7s"}}, slog.New(slog.NewTextHandler(&logs, nil)))
		done <- answer{got, err}
	}()
	testkit.WaitFor(t, 30*time.Second, func() error {
		select {
		case a := <-done:
			t.Fatalf("leaseTTL returned while JetStream was down: %v %v", a.ttl, a.err)
		default:
		}
		if !strings.Contains(logs.String(), "JetStream unavailable; retrying") {
			return errors.New("no failed status request yet")
		}
		return nil
	})
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if a.err != nil || a.ttl != ttl {
			t.Fatalf("leaseTTL after the restart: %v %v, want %v", a.ttl, a.err, ttl)
		}
	case <-ctx.Done():
		t.Fatalf("leaseTTL did not answer after JetStream came back; log:\n%s", logs.String())
	}
}
