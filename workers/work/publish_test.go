package work

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

// Publish is how capture, the lesson writers and the store worker's
// moves hand work on: a repeated Msg-Id is stored once, and what is stored
// is a WorkBatch of the current version the store worker decodes.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	subject := schemas.WorkItemSubject(schemas.WorkCandidates, "main", 1)
	items := []schemas.CaptureItem{{Text: "I prefer window seats", SourceID: "s-1"}}
	tests := []struct {
		msgID     string
		wantMsgs  uint64 // in the stream afterwards
		wantLast  string // the last stored message's Msg-Id
		wantItems int
	}{
		{"capture-1", 1, "capture-1", 1},
		{"capture-1", 1, "capture-1", 1}, // a retry: dropped as a duplicate
		{"capture-2", 2, "capture-2", 1},
	}
	for i, tt := range tests {
		if err := Publish(ctx, js, subject, tt.msgID, "main", "capture", items); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		st, err := js.Stream(ctx, schemas.StreamWork)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs != tt.wantMsgs {
			t.Fatalf("publish %d (%s): %d messages stored, want %d", i, tt.msgID, info.State.Msgs, tt.wantMsgs)
		}
		m, err := st.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != tt.wantLast {
			t.Fatalf("publish %d: Msg-Id %q, want %q", i, got, tt.wantLast)
		}
		var b schemas.WorkBatch
		if err := json.Unmarshal(m.Data, &b); err != nil {
			t.Fatal(err)
		}
		if b.V != schemas.Version || b.AgentID != "main" || b.Source != "capture" || len(b.Items) != tt.wantItems || b.Items[0].Text != items[0].Text {
			t.Fatalf("publish %d: stored %+v", i, b)
		}
	}
}
