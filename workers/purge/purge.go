// Package purge makes forgetting reach past the store: it finds which
// agent and session a memory came from (the ids the pipeline derives say
// so) and deletes, with JetStream's secure delete, every message of that
// agent in the events, transcripts and dead-letter streams whose text
// holds the memory's text. An agent_end event carries the whole history
// of its session, so every later event of the session repeats a fact
// said once: each of them goes.
package purge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// idNamespace derives memory ids from source ids (UUIDv5), which makes the
// store worker idempotent: a redelivered candidate maps to the id that is
// already stored. Purge needs the same derivation to trace a memory back.
var idNamespace = uuid.MustParse("6f1d6c2e-8a59-4b4e-9c53-6b8f3f0e2a11")

// MemoryID is the id a candidate with sourceID for agent is stored under.
func MemoryID(agent, sourceID string) string {
	return uuid.NewSHA1(idNamespace, []byte(agent+"\x00"+sourceID)).String()
}

// SourceID names a text derived within an agent's session: the same text
// derived again is the same source, so it is stored once.
func SourceID(agent, session, text string) string {
	h := sha256.Sum256([]byte(agent + "\x00" + session + "\x00" + text))
	return hex.EncodeToString(h[:16])
}

// The pipeline's kinds of source id: what it prefixes the text with.
const (
	KindCapture = ""            // a message's own text (capture)
	KindFact    = "fact:"       // a fact the LLM extracted from a turn
	KindSummary = "summary\x00" // a session summary (distill)
	KindLesson  = "lesson\x00"  // a lesson distilled from a transcript
)

var kinds = []string{KindCapture, KindFact, KindSummary, KindLesson}

// Source is the agent and session a memory was derived in.
type Source struct {
	Agent, Session string
	// Verbatim: the memory's text is a message's text (envelope
	// stripped), so the messages holding it are found by their text.
	Verbatim bool
}

// Trace finds where m came from among agents: the one whose source id
// under m's session (metadata sessionKey or sessionId) gives m's id. ok is
// false for a memory a tool stored, an import brought or a consolidation
// merged: nothing ties it to a conversation.
func Trace(m schemas.Memory, agents []string) (Source, bool) {
	var md struct {
		SessionKey string `json:"sessionKey"`
		SessionID  string `json:"sessionId"`
	}
	if len(m.Metadata) == 0 || json.Unmarshal(m.Metadata, &md) != nil {
		return Source{}, false
	}
	id := strings.ToLower(m.ID)
	for _, session := range []string{md.SessionKey, md.SessionID} {
		if session == "" {
			continue
		}
		for _, agent := range agents {
			for _, k := range kinds {
				if MemoryID(agent, SourceID(agent, session, k+m.Text)) == id {
					return Source{Agent: agent, Session: session, Verbatim: k == KindCapture}, true
				}
			}
		}
	}
	return Source{}, false
}

// Purger deletes messages from the streams.
type Purger struct{ js jetstream.JetStream }

// New purges through js.
func New(js jetstream.JetStream) *Purger { return &Purger{js: js} }

// Agents lists the agents with messages in the events, transcripts or
// dead-letter streams: the ones a memory can be traced to.
func (p *Purger) Agents(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	for _, st := range []struct {
		stream, filter string
		agent          func(string) string
	}{
		{schemas.StreamEvents, schemas.EventsSubject, eventAgent},
		{schemas.StreamTranscripts, schemas.TranscriptsSubject, transcriptAgent},
		{schemas.StreamDLQ, schemas.DLQSubject, func(subj string) string {
			// clawmem.dlq.<stage>.<original subject>
			parts := strings.SplitN(subj, ".", 4)
			if len(parts) < 4 {
				return ""
			}
			if a := eventAgent(parts[3]); a != "" {
				return a
			}
			return transcriptAgent(parts[3])
		}},
	} {
		subjects, err := p.subjects(ctx, st.stream, st.filter)
		if err != nil {
			return nil, err
		}
		for subj := range subjects {
			if a := st.agent(subj); a != "" {
				seen[a] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out, nil
}

func eventAgent(subj string) string {
	_, a, err := schemas.ParseEventSubject(subj)
	if err != nil {
		return ""
	}
	return a
}

func transcriptAgent(subj string) string {
	a, _, err := schemas.ParseTranscriptSubject(subj)
	if err != nil {
		return ""
	}
	return a
}

// subjects are the stream's subjects under filter with their counts; a
// stream that does not exist has none.
func (p *Purger) subjects(ctx context.Context, stream, filter string) (map[string]uint64, error) {
	s, err := p.js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", stream, err)
	}
	return info.State.Subjects, nil
}

// Purge securely deletes every message of agent in the events and
// transcripts streams, and every dead letter of those, whose text holds
// one of texts; it returns how many it deleted. It reads each stream up
// to its last message when the purge began: what arrives later is not
// looked at.
func (p *Purger) Purge(ctx context.Context, agent string, texts []string) (int, error) {
	texts = slices.DeleteFunc(slices.Clone(texts), func(t string) bool { return strings.TrimSpace(t) == "" })
	if len(texts) == 0 {
		return 0, nil
	}
	n := 0
	for _, st := range []struct {
		stream  string
		filters []string
	}{
		{schemas.StreamEvents, []string{schemas.EventsPrefix + ".*." + agent}},
		{schemas.StreamTranscripts, []string{schemas.TranscriptPrefix + "." + agent + ".>"}},
		{schemas.StreamDLQ, []string{schemas.DLQPrefix + ".*." + schemas.EventsPrefix + ".*." + agent,
			schemas.DLQPrefix + ".*." + schemas.TranscriptPrefix + "." + agent + ".>"}},
	} {
		s, err := p.js.Stream(ctx, st.stream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("stream %s: %w", st.stream, err)
		}
		state := s.CachedInfo().State
		if state.Msgs == 0 {
			continue
		}
		for _, filter := range st.filters {
			got, err := purgeSubject(ctx, s, filter, state.FirstSeq, state.LastSeq, texts)
			n += got
			if err != nil {
				return n, fmt.Errorf("stream %s: %w", st.stream, err)
			}
		}
	}
	return n, nil
}

// purgeSubject walks the messages under filter from first to last, one
// lookup each (the server finds the next message of the subject), and
// deletes those that mention a text.
func purgeSubject(ctx context.Context, s jetstream.Stream, filter string, first, last uint64, texts []string) (int, error) {
	n := 0
	for seq := max(first, 1); seq <= last; {
		msg, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if msg.Sequence > last {
			return n, nil
		}
		if Mentions(msg.Data, texts) {
			if err := s.SecureDeleteMsg(ctx, msg.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				return n, fmt.Errorf("delete message %d: %w", msg.Sequence, err)
			}
			n++
		}
		seq = msg.Sequence + 1
	}
	return n, nil
}

// Mentions reports whether a message's payload holds one of texts: in
// any string of the JSON (decoded, so escapes do not hide it), in a
// message's text blocks joined as capture joins them, or in either after
// capture's envelope stripping. A payload that is not JSON is searched
// as it is.
func Mentions(payload []byte, texts []string) bool {
	var v any
	if json.Unmarshal(payload, &v) != nil {
		return holds(string(payload), texts)
	}
	return walk(v, texts)
}

func walk(v any, texts []string) bool {
	switch v := v.(type) {
	case string:
		return holds(v, texts)
	case []any:
		for _, e := range v {
			if walk(e, texts) {
				return true
			}
		}
	case map[string]any:
		if blocks, ok := v["content"].([]any); ok {
			var parts []string
			for _, b := range blocks {
				if m, ok := b.(map[string]any); ok {
					typ, _ := m["type"].(string)
					if t, _ := m["text"].(string); t != "" && (typ == "text" || typ == "") {
						parts = append(parts, t)
					}
				}
			}
			if len(parts) > 1 && holds(strings.Join(parts, "\n"), texts) {
				return true
			}
		}
		for _, e := range v {
			if walk(e, texts) {
				return true
			}
		}
	}
	return false
}

func holds(s string, texts []string) bool {
	var stripped *string
	for _, t := range texts {
		if len(s) < len(t) {
			continue
		}
		if strings.Contains(s, t) {
			return true
		}
		if stripped == nil {
			x := rules.StripEnvelope(s)
			stripped = &x
		}
		if strings.Contains(*stripped, t) {
			return true
		}
	}
	return false
}
