package capture

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/stage"
)

// TestCaptureSecrets: an event that reaches the stream with a secret (a
// producer that does not redact) is captured redacted, dropped in refuse
// mode — as is a message the hook edge redacted already — or kept when
// secrets.mode is off. A clean message of the same turn is captured in
// every mode.
func TestCaptureSecrets(t *testing.T) {
	const key = "ghp_FAKE1234567890abcdefGHIJKLmnopqrstuv"
	texts := []string{"Remember that the deploy token is " + key, "Remember that my db password is [REDACTED:password]",
		"I prefer window seats on long flights"}
	cases := map[redact.Mode][]string{
		redact.ModeRedact: {"I prefer window seats on long flights", "Remember that my db password is [REDACTED:password]",
			"Remember that the deploy token is [REDACTED:github-token]"},
		redact.ModeRefuse: {"I prefer window seats on long flights"},
		redact.ModeOff: {"I prefer window seats on long flights", "Remember that my db password is [REDACTED:password]",
			"Remember that the deploy token is " + key},
	}
	for mode, want := range cases {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			_, _, js := natsembed.StartTest(t)
			if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
				t.Fatal(err)
			}
			var history []schemas.Message
			for _, text := range texts {
				history = append(history, testkit.UserMsg(text))
			}
			ev, _ := json.Marshal(schemas.AgentEndEvent{Messages: history, Success: true})
			body, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: "s1", Timestamp: time.Now().UnixMilli(), Event: ev})
			if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), body); err != nil {
				t.Fatal(err)
			}
			cons, err := js.CreateOrUpdateConsumer(ctx, schemas.StreamEvents, jetstream.ConsumerConfig{Durable: "secrets-test", AckPolicy: jetstream.AckExplicitPolicy})
			if err != nil {
				t.Fatal(err)
			}
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var msgs []jetstream.Msg
			for m := range batch.Messages() {
				msgs = append(msgs, m)
			}
			c := New(js, testkit.LocalEmbedder(t, 256), Config{Secrets: mode}, stage.NewMetrics(nil), slog.New(slog.DiscardHandler))
			for _, err := range c.handle(ctx, msgs) {
				if err != nil {
					t.Fatal(err)
				}
			}
			s, err := js.Stream(ctx, schemas.StreamWork)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			info, _ := s.Info(ctx)
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
				m, err := s.GetMsg(ctx, seq)
				if err != nil {
					continue
				}
				if mode != redact.ModeOff && strings.Contains(string(m.Data), key) {
					t.Errorf("the work stream holds the key: %s", m.Data)
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
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("captured %q\nwant %q", got, want)
			}
		})
	}
}
