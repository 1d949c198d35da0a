package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/work"
)

// sessionCursor remembers how much of a session's history was already
// captured (in the bucket schemas.BucketCursors): the message count and a
// fingerprint of the last message, so a history that was compacted or
// rewritten is noticed and read from the start (idempotent source ids make
// that safe).
type sessionCursor struct {
	Count int    `json:"count"`
	Last  string `json:"last"`
}

// loadSessionCursor reads a session's stored cursor (zero when none).
func loadSessionCursor(ctx context.Context, kv jetstream.KeyValue, key string) (sessionCursor, error) {
	var cur sessionCursor
	entry, err := kv.Get(ctx, key)
	switch {
	case err == nil:
		_ = json.Unmarshal(entry.Value(), &cur)
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return cur, fmt.Errorf("read cursor: %w", err)
	}
	return cur, nil
}

// pick selects the capturable messages of t's history after cursor prev
// (all of it when prev does not describe a prefix of it: a compacted or
// rewritten history) and returns t's own cursor.
func (c *Capture) pick(t *turn, prev sessionCursor) sessionCursor {
	start := 0
	if prev.Count > 0 && prev.Count <= len(t.history) && fingerprint(t.history[prev.Count-1]) == prev.Last {
		start = prev.Count
	}
	t.cursor = sessionCursor{Count: len(t.history), Last: fingerprint(t.history[len(t.history)-1])}
	for _, msg := range t.history[start:] {
		if len(t.items) == c.cfg.MaxPerTurn && c.ext == nil {
			break
		}
		said := msg.Timestamp
		if said <= 0 {
			said = t.at
		}
		c.consider(t, msg.Role, msg.Text(), said)
	}
	return t.cursor
}

// fingerprint identifies a message by role and text.
func fingerprint(m schemas.Message) string { return work.Fingerprint(m.Role, m.Text()) }
