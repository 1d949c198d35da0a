package capture

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
	"github.com/clawmem/clawmem/workers/stage"
)

// turn is what one event contributes.
type turn struct {
	agent, session string
	items          []schemas.CaptureItem
	cursorKey      string
	cursor         sessionCursor
	noCursor       bool // one message (message_received/message_sent): no history to diff
	seq            uint64
	history        []schemas.Message // agent_end: the whole history, diffed in pick
	at             int64             // the event's time (Unix ms): when a message has none
	said           []saidMsg         // the turn's new messages, for smart extraction
}

// read decodes one event: an agent_end's history (pick selects its new
// messages), or a single message's capturable text.
func (c *Capture) read(m jetstream.Msg) (*turn, error) {
	kind, agent, err := schemas.ParseEventSubject(m.Subject())
	if err != nil {
		return nil, stage.Permanent(err)
	}
	var ev schemas.HookEvent
	if err := json.Unmarshal(m.Data(), &ev); err != nil {
		return nil, stage.Permanent(fmt.Errorf("event is not JSON: %w", err))
	}
	if ev.V != schemas.Version {
		return nil, stage.Permanent(fmt.Errorf("event version %d, this worker reads %d", ev.V, schemas.Version))
	}
	if kind == schemas.KindMessageReceived || kind == schemas.KindMessageSent {
		return c.readMessage(kind, agent, ev, m)
	}
	var end schemas.AgentEndEvent
	if err := json.Unmarshal(ev.Event, &end); err != nil {
		return nil, stage.Permanent(fmt.Errorf("agent_end payload: %w", err))
	}
	if !end.Success || len(end.Messages) == 0 {
		return nil, nil
	}
	session := ev.SessionKey
	if session == "" {
		session = ev.SessionID
	}
	t := &turn{agent: agent, session: session, cursorKey: agent + "." + schemas.SubjectToken(session), history: end.Messages, at: ev.Timestamp}
	if md, err := m.Metadata(); err == nil {
		t.seq = md.Sequence.Stream
	}
	return t, nil
}

// readMessage takes one message_received (user) or message_sent
// (assistant) event, as HOOK.md handlers send them where no plugin sees
// agent_end. Each carries one message, so there is no history to diff: the
// stream's Msg-Id and the item's source id keep repeats out.
func (c *Capture) readMessage(kind schemas.EventKind, agent string, ev schemas.HookEvent, m jetstream.Msg) (*turn, error) {
	var me schemas.MessageEvent
	if err := json.Unmarshal(ev.Event, &me); err != nil {
		return nil, stage.Permanent(fmt.Errorf("%s payload: %w", kind, err))
	}
	session := ev.SessionKey
	if session == "" {
		session = ev.SessionID
	}
	t := &turn{agent: agent, session: session, noCursor: true}
	md, err := m.Metadata()
	if err == nil {
		t.seq = md.Sequence.Stream
	}
	// Grouped alone: message events need no ordering against each other.
	t.cursorKey = "message." + strconv.FormatUint(t.seq, 10)
	role := "user"
	if kind == schemas.KindMessageSent {
		role = "assistant"
	}
	c.consider(t, role, me.Content, ev.Timestamp)
	return t, nil
}

// consider adds text, said by role at said (Unix ms; 0 unknown), to the
// turn's items if the capture rules keep it. The time goes into the
// metadata (saidAt) so that "yesterday" resolves against when it was said,
// not when a backlog reached the store.
func (c *Capture) consider(t *turn, role, text string, said int64) {
	if role != "user" && !(c.cfg.CaptureAssistant && role == "assistant") {
		return
	}
	text, ok := c.clean(t, rules.StripEnvelope(text))
	if !ok {
		return
	}
	if c.ext != nil && strings.TrimSpace(text) != "" && len(t.said) < maxSaid {
		t.said = append(t.said, saidMsg{text: retrieve.Truncate(text, 2000), at: said})
	}
	if len(t.items) == c.cfg.MaxPerTurn || !rules.ShouldCapture(text, rules.CaptureOptions{MaxChars: c.cfg.MaxChars}) {
		return
	}
	md := map[string]any{"source": "auto-capture", "sessionKey": t.session, "role": role}
	if said > 0 {
		md[temporal.SaidAtKey] = said
	}
	meta, _ := json.Marshal(md)
	t.items = append(t.items, schemas.CaptureItem{
		SourceID:   SourceID(t.agent, t.session, text),
		Text:       text,
		Category:   rules.DetectCategory(text),
		Importance: c.cfg.Importance,
		Dedup:      c.cfg.Dedup,
		Metadata:   meta,
	})
}

// clean applies secrets.mode to a captured text before anything else sees
// it: the text to use, or false when refuse mode drops it.
func (c *Capture) clean(t *turn, text string) (string, bool) {
	out, fs, err := redact.Apply(c.cfg.Secrets, text)
	if err == nil && c.cfg.Secrets == redact.ModeRefuse && strings.Contains(text, redact.MarkerPrefix) {
		// The hook edge redacted it already: refuse drops it all the same.
		err = redact.ErrSecret
	}
	if err != nil {
		c.log.Info("captured message dropped: it holds a secret and secrets.mode is refuse", "agent", t.agent, "session", t.session,
			"kinds", redact.Kinds(fs))
		return "", false
	}
	return out, true
}

// withoutSecrets applies secrets.mode to items' texts.
func (c *Capture) withoutSecrets(t *turn, items []schemas.CaptureItem) []schemas.CaptureItem {
	out := items[:0]
	for _, it := range items {
		text, ok := c.clean(t, it.Text)
		if !ok {
			continue
		}
		if text != it.Text {
			it.Text = text
			if it.Invalidates == "" {
				it.SourceID = SourceID(t.agent, t.session, "fact:"+text)
			}
		}
		out = append(out, it)
	}
	return out
}

// SourceID names a captured text within its agent and session: the same
// text captured again is the same source, so it is stored once.
func SourceID(agent, session, text string) string { return purge.SourceID(agent, session, text) }
