package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// transcriptCursor is how far the transcript distiller has distilled a
// session's transcript: the last stream sequence, kept in the distill
// bucket under transcriptCursorKey. (Capture's cursors, in their own
// bucket, are another thing: how much of a session's history it read.)
type transcriptCursor struct {
	Seq     uint64    `json:"seq"`
	Updated time.Time `json:"updated"`
}

func transcriptCursorKey(agent, token string) string { return "cursor." + agent + "." + token }

// readTranscriptCursor returns the last distilled stream sequence of a session and
// the entry's revision (0: no cursor yet).
func readTranscriptCursor(ctx context.Context, kv jetstream.KeyValue, agent, token string) (uint64, uint64, error) {
	e, err := kv.Get(ctx, transcriptCursorKey(agent, token))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read cursor: %w", err)
	}
	var v transcriptCursor
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return 0, e.Revision(), nil
	}
	return v.Seq, e.Revision(), nil
}

// writeTranscriptCursor moves a cursor with compare-and-set against revision (0:
// create), so two distillers never both commit the same range.
func writeTranscriptCursor(ctx context.Context, kv jetstream.KeyValue, agent, token string, seq, revision uint64) error {
	b, _ := json.Marshal(transcriptCursor{Seq: seq, Updated: time.Now().UTC()})
	var err error
	if revision == 0 {
		_, err = kv.Create(ctx, transcriptCursorKey(agent, token), b)
	} else {
		_, err = kv.Update(ctx, transcriptCursorKey(agent, token), b, revision)
	}
	return err
}

// advanceTranscriptCursor moves a session's cursor forward to seq (never back).
func advanceTranscriptCursor(ctx context.Context, js jetstream.JetStream, agent, session string, seq uint64) error {
	kv, err := js.KeyValue(ctx, schemas.BucketDistill)
	if err != nil {
		return err
	}
	token := schemas.SubjectToken(session)
	for range 3 {
		cur, rev, err := readTranscriptCursor(ctx, kv, agent, token)
		if err != nil || cur >= seq {
			return err
		}
		if err = writeTranscriptCursor(ctx, kv, agent, token, seq, rev); err == nil {
			return nil
		}
	}
	return errors.New("cursor kept changing")
}
