package capture

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// Events of one session that arrive in one batch — the plugin's outbox
// delivering a backlog after an outage — are diffed one against the
// other: every turn's new message is captured, not only the first three
// of the history (the per-turn cap) read against a stale cursor.
func TestCaptureBatchOfOneSessionsTurns(t *testing.T) {
	ctx := context.Background()
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"I prefer window seats on long flights", "My dog is called Rex", "Remember that my favourite colour is teal",
		"I prefer green tea over coffee in the afternoon", "Remember that the release branch is cut every Thursday"}
	var history []schemas.Message
	for _, text := range texts {
		history = append(history, testkit.UserMsg(text), testkit.AssistantMsg("Noted."))
		ev, _ := json.Marshal(schemas.AgentEndEvent{Messages: history, Success: true})
		body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: "s1", Timestamp: time.Now().UnixMilli(), Event: ev})
		if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), body); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, schemas.StreamEvents, jetstream.ConsumerConfig{Durable: "batch-test",
		FilterSubject: schemas.EventSubject(schemas.KindAgentEnd, "*"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []jetstream.Msg
	for m := range batch.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) != len(texts) {
		t.Fatalf("fetched %d events, want %d in one batch", len(msgs), len(texts))
	}
	slices.Reverse(msgs) // handled in stream order whatever order the batch holds
	c := New(js, testkit.LocalEmbedder(t, 256), Config{}, stage.NewMetrics(nil), slog.New(slog.DiscardHandler))
	for i, err := range c.handle(ctx, msgs) {
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	s, err := js.Stream(ctx, schemas.StreamWork)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	info, _ := s.Info(ctx)
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		var wb schemas.WorkBatch
		if err := json.Unmarshal(m.Data, &wb); err != nil {
			t.Fatal(err)
		}
		for _, it := range wb.Items {
			got = append(got, it.Text)
		}
	}
	slices.Sort(got)
	want := slices.Clone(texts)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("captured %d: %q\nwant %q", len(got), got, want)
	}
	if cur, err := loadSessionCursor(ctx, mustKV(t, js), "main.s1"); err != nil || cur.Count != 2*len(texts) {
		t.Fatalf("cursor %+v %v", cur, err)
	}
}

func mustKV(t *testing.T, js jetstream.JetStream) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(context.Background(), schemas.BucketCursors)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
