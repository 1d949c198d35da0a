package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/schemas"
)

// headerRoom is kept free of the payload limit for the Nats-Msg-Id and the
// other headers of an entry.
const headerRoom = 1024

// encodeEntry encodes e in at most limit bytes, cutting its text (on a
// rune boundary) when the whole would not fit; cut reports that it did.
func encodeEntry(e schemas.TranscriptEntry, limit int) (data []byte, cut bool, err error) {
	data, err = marshalJSON(e)
	if err == nil && len(data) > limit {
		budget := limit - (len(data) - jsonTextLen(e.Text))
		e.Text, cut = cutToJSONLen(e.Text, max(budget, 0)), true
		data, err = marshalJSON(e)
	}
	if err != nil {
		return nil, cut, fmt.Errorf("encode transcript entry: %w", err)
	}
	if len(data) > limit {
		return nil, cut, fmt.Errorf("transcript entry takes %d bytes without its text, more than the %d allowed", len(data), limit)
	}
	return data, cut, nil
}

// marshalJSON is json.Marshal without HTML escaping, which would only make
// texts longer.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// How many bytes marshalJSON writes for a character inside a string, taken
// from the encoder itself: ASCII bytes by table, then the two line
// separators it escapes and invalid bytes, which become \ufffd. Every
// other rune is written as its UTF-8 bytes.
var (
	asciiJSONLen = func() (t [utf8.RuneSelf]int) {
		for b := range t {
			t[b] = jsonTextLen(string(rune(b)))
		}
		return t
	}()
	lineSepJSONLen = jsonTextLen("\u2028")
	invalidJSONLen = jsonTextLen("\xff")
)

// jsonTextLen is the encoded length of s without its quotes.
func jsonTextLen(s string) int {
	data, err := marshalJSON(s)
	if err != nil {
		return 6 * len(s) // unreachable: strings always encode; \uXXXX is the longest escape
	}
	return len(data) - 2
}

// cutToJSONLen returns the longest prefix of s, in whole runes, whose
// encoding takes at most budget bytes.
func cutToJSONLen(s string, budget int) string {
	used := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var n int
		switch {
		case r < utf8.RuneSelf:
			n = asciiJSONLen[r]
		case r == '\u2028' || r == '\u2029':
			n = lineSepJSONLen
		case r == utf8.RuneError && size == 1:
			n = invalidJSONLen
		default:
			n = size
		}
		if used+n > budget {
			return s[:i]
		}
		used += n
		i += size
	}
	return s
}

// errEntryTooLarge marks an entry no publish can store; the line is
// skipped rather than retried forever.
var errEntryTooLarge = errors.New("transcript entry too large")

// publish sends one message line as a TranscriptEntry and waits for the
// ack. The publish finishes even when ctx ends, so an entry in flight at
// shutdown is acknowledged and its offset stored.
func (w *Watcher) publish(ctx context.Context, t *tracked, offset int64, l distill.Line) error {
	e := schemas.TranscriptEntry{
		V: schemas.Version, AgentID: t.agent, SessionID: t.session(), File: t.sf.Name, Offset: offset,
		EntryID: l.EntryID, Role: l.Role, Text: l.Text, Timestamp: l.Timestamp,
	}
	return w.publishEntry(ctx, e, msgID(t.agent, t.rec.FileID, offset), fmt.Sprintf("%s offset %d", t.rel, offset))
}

// publishEntry publishes e with its Nats-Msg-Id and waits for the ack;
// where names the entry's origin in errors and logs.
func (w *Watcher) publishEntry(ctx context.Context, e schemas.TranscriptEntry, id, where string) error {
	if w.cfg.Secrets != redact.ModeOff {
		e.Text, _ = redact.Redact(e.Text)
	}
	limit := int(w.js.Conn().MaxPayload()) - headerRoom
	data, cut, err := encodeEntry(e, limit)
	if err != nil {
		return fmt.Errorf("%w: %v", errEntryTooLarge, err)
	}
	if cut {
		w.log.Warn("message text cut to fit one NATS message", "entry", where, "bytes", len(e.Text), "limit", limit)
	}
	msg := nats.NewMsg(schemas.TranscriptSubject(e.AgentID, e.SessionID))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, id)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.Timeout)
	defer cancel()
	ack, err := w.js.PublishMsg(pctx, msg, jetstream.WithExpectStream(schemas.StreamTranscripts))
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) {
		return fmt.Errorf("%w: %v", errEntryTooLarge, err)
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", where, err)
	}
	if ack.Duplicate {
		w.met.entries.WithLabelValues("duplicate").Inc()
	} else {
		w.met.entries.WithLabelValues("published").Inc()
	}
	return nil
}
