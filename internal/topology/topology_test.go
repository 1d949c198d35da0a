package topology

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/schemas"
)

func TestEnsureIsIdempotent(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := Ensure(ctx, js, Config{}); err != nil {
			t.Fatalf("ensure #%d: %v", i+1, err)
		}
	}
	s, err := js.Stream(ctx, schemas.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
		t.Fatal("WORK must be a work queue")
	}
	ev, _ := js.Stream(ctx, schemas.StreamEvents)
	if ev.CachedInfo().Config.Duplicates.Minutes() < 2 {
		t.Fatal("duplicate window under 2 minutes")
	}
	if _, err := js.KeyValue(ctx, schemas.BucketCursors); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), []byte(`{}`), jetstream.WithMsgID("x"))
	if err != nil || ack.Stream != schemas.StreamEvents {
		t.Fatalf("publish: %v %+v", err, ack)
	}
	ack, err = js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), []byte(`{}`), jetstream.WithMsgID("x"))
	if err != nil || !ack.Duplicate {
		t.Fatalf("same Msg-Id was stored twice: %v %+v", err, ack)
	}
}
