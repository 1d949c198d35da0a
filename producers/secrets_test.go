package producers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// fakeKey is shaped like an OpenAI key, and fake.
const fakeKey = "sk-proj-FAKEa1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

// TestPublishRedactsSecrets: the events stream holds the event with its
// secrets redacted (unless secrets.mode is off), under the Msg-Id the
// event as given derives, so a retry — redacted or not — is a duplicate.
func TestPublishRedactsSecrets(t *testing.T) {
	event := json.RawMessage(`{"messages":[{"role":"user","content":"my key is ` + fakeKey + `","timestamp":1767225600000}],"success":true}`)
	meta := producers.Meta{SessionKey: "s1", Timestamp: 1767225600123}
	for _, c := range []struct {
		mode redact.Mode
		want string
	}{
		{redact.ModeRedact, "my key is [REDACTED:openai-key]"},
		{redact.ModeRefuse, "my key is [REDACTED:openai-key]"},
		{redact.ModeOff, "my key is " + fakeKey},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			_, js, _ := setup(t)
			pub := producers.New(js, producers.WithSecrets(c.mode))
			ack, err := pub.Publish(context.Background(), schemas.KindAgentEnd, "main", event, meta)
			if err != nil {
				t.Fatal(err)
			}
			m := getMsg(t, js, ack.Seq)
			var env schemas.HookEvent
			if err := json.Unmarshal(m.Data, &env); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(env.Event), c.want) || (c.mode != redact.ModeOff && strings.Contains(string(m.Data), fakeKey)) {
				t.Errorf("stored event %s, want it to hold %q", env.Event, c.want)
			}
			// The same hook again, through a publisher that does not redact:
			// the Msg-Id is the original event's, so it is a duplicate.
			again, err := producers.New(js, producers.WithSecrets(redact.ModeOff)).Publish(context.Background(), schemas.KindAgentEnd, "main", event, meta)
			if err != nil || !again.Duplicate || again.Seq != ack.Seq {
				t.Errorf("retry: %+v, %v; want a duplicate of seq %d", again, err, ack.Seq)
			}
			if id := m.Header.Get(jetstream.MsgIDHeader); id == "" {
				t.Error("no Msg-Id")
			}
		})
	}
}
