package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

// readTranscript reads a session's entries from the TRANSCRIPTS stream with
// an ordered consumer, those after stream sequence after (0: all), and
// returns them with the sequence of the last one read (after, if none).
func readTranscript(ctx context.Context, js jetstream.JetStream, subject string, after uint64) ([]schemas.TranscriptEntry, uint64, error) {
	entries, _, last, err := readTranscriptSeqs(ctx, js, subject, after)
	return entries, last, err
}

// readTranscriptSeqs is readTranscript that also returns each entry's
// stream sequence.
func readTranscriptSeqs(ctx context.Context, js jetstream.JetStream, subject string, after uint64) ([]schemas.TranscriptEntry, []uint64, uint64, error) {
	st, err := js.Stream(ctx, schemas.StreamTranscripts)
	if err != nil {
		return nil, nil, after, fmt.Errorf("transcript stream: %w", err)
	}
	last, err := st.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil, after, nil
	}
	if err != nil {
		return nil, nil, after, fmt.Errorf("transcript %s: %w", subject, err)
	}
	if last.Sequence <= after {
		return nil, nil, after, nil
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	}
	cons, err := js.OrderedConsumer(ctx, schemas.StreamTranscripts, cfg)
	if err != nil {
		return nil, nil, after, fmt.Errorf("transcript consumer: %w", err)
	}
	var out []schemas.TranscriptEntry
	var seqs []uint64
	seq := after
	for seq < last.Sequence {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return nil, nil, after, fmt.Errorf("read transcript: %w", err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			md, err := m.Metadata()
			if err != nil {
				return nil, nil, after, err
			}
			seq = md.Sequence.Stream
			var e schemas.TranscriptEntry
			if json.Unmarshal(m.Data(), &e) == nil && (e.Role == "user" || e.Role == "assistant") && e.Text != "" {
				out = append(out, e)
				seqs = append(seqs, seq)
			}
			if seq >= last.Sequence {
				break
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return nil, nil, after, fmt.Errorf("read transcript: %w", err)
		}
		if got == 0 {
			// The tail was removed (limits) while reading: what was read
			// is all there is.
			break
		}
	}
	return out, seqs, seq, nil
}

// lessonItems turns a distillation into store-worker items for agent: dedup
// at dedup, metadata naming the session, the cited messages, tags,
// keywords, distiller and model. Source ids are derived from the agent,
// session and lesson text, so a repeated distillation stores nothing new.
func lessonItems(agent, session string, res distill.Result, msgs []distill.Message, dedup float64) []schemas.CaptureItem {
	entryIDs := map[int]string{}
	for _, m := range msgs {
		if m.EntryID != "" {
			entryIDs[m.N] = m.EntryID
		}
	}
	items := make([]schemas.CaptureItem, 0, len(res.Lessons))
	for _, l := range res.Lessons {
		var ids []int
		var entries []string
		for _, ev := range l.Evidence {
			for _, n := range ev.MessageIDs {
				ids = append(ids, n)
				if e, ok := entryIDs[n]; ok {
					entries = append(entries, e)
				}
			}
		}
		meta, _ := json.Marshal(map[string]any{
			"source": "distill", "sessionId": session, "messageIds": ids, "entryIds": entries,
			"evidence": l.Evidence, "tags": l.Tags, "keywords": l.Keywords, "keywordsZh": l.KeywordsZh,
			"distiller": res.Distiller, "model": res.Model,
		})
		items = append(items, schemas.CaptureItem{
			SourceID:   SourceID(agent, session, purge.KindLesson+l.Text),
			Text:       l.Text,
			Category:   l.Category,
			Importance: l.Importance,
			Dedup:      dedup,
			Metadata:   meta,
		})
	}
	return items
}

// publishWork hands lessons to their writers on the lessons subjects.
func publishWork(ctx context.Context, js jetstream.JetStream, route workRoute, agent, source, msgID string, items []schemas.CaptureItem) error {
	if len(items) == 0 {
		return nil
	}
	if err := route.publish(ctx, js, schemas.WorkLessons, agent, source, msgID, items); err != nil {
		return fmt.Errorf("publish lessons: %w", err)
	}
	return nil
}

// publishBatch is the one way work reaches the store worker: items of
// agent as one WorkBatch on subject. msgID makes a repeated publish (a
// retry, a crash before a cursor moved, a redelivered message) a no-op
// within the stream's duplicate window, and the items' source ids beyond
// it.
func publishBatch(ctx context.Context, js jetstream.JetStream, subject, msgID, agent, source string, items []schemas.CaptureItem) error {
	body, err := json.Marshal(schemas.WorkBatch{V: schemas.Version, AgentID: agent, Source: source, Items: items})
	if err != nil {
		return err
	}
	msg := &nats.Msg{Subject: subject, Data: body, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, msgID)
	_, err = js.PublishMsg(ctx, msg)
	return err
}
