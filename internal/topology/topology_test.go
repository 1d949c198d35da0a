package topology

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// Hooks retry for minutes; clawmem's own stages within seconds, and
	// every remembered id costs the server memory for the whole window.
	for stream, want := range map[string]time.Duration{schemas.StreamEvents: 10 * time.Minute, schemas.StreamTranscripts: 10 * time.Minute,
		schemas.StreamWork: 2 * time.Minute, schemas.StreamMemories: 2 * time.Minute} {
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.CachedInfo().Config.Duplicates; got != want {
			t.Errorf("%s: duplicate window %v, want %v", stream, got, want)
		}
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

// TestLeaseTTL: a new leases bucket gets the default TTL; a writer's
// nats.leaseTTL sets it; a node that runs no writer (LeaseTTL zero)
// leaves it as the writers set it.
func TestLeaseTTL(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	for _, step := range []struct {
		ask, want time.Duration
	}{
		{0, schemas.DefaultLeaseTTL},
		{5 * time.Second, 5 * time.Second},
		{0, 5 * time.Second},
		{20 * time.Second, 20 * time.Second},
	} {
		if err := Ensure(ctx, js, Config{LeaseTTL: step.ask}); err != nil {
			t.Fatal(err)
		}
		kv, err := js.KeyValue(ctx, schemas.BucketLeases)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.TTL() != step.want {
			t.Errorf("after Ensure with LeaseTTL %v: bucket TTL %v, want %v", step.ask, st.TTL(), step.want)
		}
	}
}

// TestEventsBlocksAre4MB: the events stream is written in 4 MB blocks,
// so the block the server keeps in memory while capture reads it is at
// most 4 MB (8 MB for a limits stream without a per-subject limit). It
// reads the real server's files: a server upgrade that sizes blocks
// otherwise fails here, not in a soak.
func TestEventsBlocksAre4MB(t *testing.T) {
	dir := t.TempDir()
	_, _, js := natsembed.StartTestIn(t, dir)
	ctx := context.Background()
	if err := Ensure(ctx, js, Config{}); err != nil {
		t.Fatal(err)
	}
	// 10 MB of events: three blocks at 4 MB, two at 8.
	body := []byte(`{"text":"` + strings.Repeat("x", 16<<10) + `"}`)
	for i := 0; i < 640; i++ {
		if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindMessageReceived, "main"), body); err != nil {
			t.Fatal(err)
		}
	}
	blocks, err := filepath.Glob(filepath.Join(dir, "jetstream", "*", "streams", schemas.StreamEvents, "msgs", "*.blk"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 3 {
		t.Fatalf("10 MB of events in %d blocks, want at least 3 (4 MB each)", len(blocks))
	}
	for _, b := range blocks {
		fi, err := os.Stat(b)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 4<<20+32<<10 {
			t.Errorf("%s is %d bytes, want at most 4 MB and one message", filepath.Base(b), fi.Size())
		}
	}
}
