package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
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

// sessionEntries keeps the entries of session: subject tokens are
// sanitised, so two session ids can share one subject.
func sessionEntries(entries []schemas.TranscriptEntry, session string) []schemas.TranscriptEntry {
	return slices.DeleteFunc(entries, func(e schemas.TranscriptEntry) bool { return e.SessionID != "" && e.SessionID != session })
}
