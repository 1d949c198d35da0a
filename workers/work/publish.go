package work

import (
	"context"
	"encoding/json"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// Publish is the one way work reaches the store worker: items of agent as
// one WorkBatch on subject. msgID makes a repeated publish (a retry, a
// crash before a cursor moved, a redelivered message) a no-op within the
// stream's duplicate window, and the items' source ids beyond it.
func Publish(ctx context.Context, js jetstream.JetStream, subject, msgID, agent, source string, items []schemas.CaptureItem) error {
	body, err := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: agent, Source: source, Items: items})
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	_, err = js.PublishMsg(ctx, msg)
	return err
}
