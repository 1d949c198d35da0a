package distill

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// Message roles kept for distillation. Tool results, system turns and the
// like carry no memory of their own.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one user or assistant message of a session, numbered 1..n in
// session order. N is what prompts and evidence cite ([U12], [A13]).
type Message struct {
	N         int    `json:"n"`
	Role      string `json:"role"`
	Text      string `json:"text"`
	EntryID   string `json:"entryId,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

// Transcript is a session read from a JSONL file: its id (from the header
// line), its messages, and how many lines could not be parsed.
type Transcript struct {
	SessionID string
	Messages  []Message
	Lines     int // non-blank lines read
	BadLines  int // lines that were not transcript entries, skipped
}

// FromHook builds the messages of an inline hook payload (agent_end,
// before_reset, ...): user and assistant messages with text, the OpenClaw
// envelope stripped from user text.
func FromHook(msgs []schemas.Message) []Message {
	var b builder
	for _, m := range msgs {
		b.add(m.Role, m.Text(), m.ID, m.Timestamp)
	}
	return b.out
}

// FromEntries builds the messages of a session read from the transcript
// stream, in the order given. An entry id seen twice (a redelivery) is kept
// once.
func FromEntries(entries []schemas.TranscriptEntry) []Message {
	var b builder
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if e.EntryID != "" {
			if seen[e.EntryID] {
				continue
			}
			seen[e.EntryID] = true
		}
		b.add(e.Role, e.Text, e.EntryID, e.Timestamp)
	}
	return b.out
}

// ReadFile reads an OpenClaw session transcript (JSONL). Lines that are not
// transcript entries are skipped and counted, not fatal: a session file with
// one corrupt line still holds a session worth distilling.
func ReadFile(path string) (Transcript, error) {
	f, err := os.Open(path)
	if err != nil {
		return Transcript{}, fmt.Errorf("distill: open session file: %w", err)
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return t, fmt.Errorf("distill: read session file %s: %w", path, err)
	}
	return t, nil
}

// Read is ReadFile over any reader.
func Read(r io.Reader) (Transcript, error) {
	var t Transcript
	var b builder
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			t.Lines++
			t.take(&b, line, tooLong)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Messages = b.out
			return t, err
		}
	}
	t.Messages = b.out
	return t, nil
}

// take adds one non-blank line to the transcript.
func (t *Transcript) take(b *builder, line []byte, tooLong bool) {
	if tooLong {
		t.BadLines++
		return
	}
	l, err := ParseLine(line)
	if err != nil {
		t.BadLines++
		return
	}
	switch l.Kind {
	case KindSession:
		if t.SessionID == "" {
			t.SessionID = l.SessionID
		}
	case KindMessage:
		b.add(l.Role, l.Text, l.EntryID, l.Timestamp)
	}
}

// readLine returns the next line without its newline. A line longer than
// MaxLineBytes is consumed but not returned (tooLong), so one huge line
// costs no more memory than the limit.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > MaxLineBytes+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(buf, []byte{'\n'}), tooLong, err
	}
}

// builder numbers kept messages 1..n.
type builder struct {
	out []Message
}

func (b *builder) add(role, text, entryID string, ts int64) {
	if role != RoleUser && role != RoleAssistant {
		return
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	if role == RoleUser {
		text = rules.StripEnvelope(text)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	b.out = append(b.out, Message{N: len(b.out) + 1, Role: role, Text: text, EntryID: entryID, Timestamp: ts})
}

// numbered returns msgs renumbered 1..n unless their numbers are already
// positive and strictly increasing (a range of a longer session keeps its
// own), so every citation names exactly one message.
func numbered(msgs []Message) []Message {
	ok := true
	for i, m := range msgs {
		if m.N <= 0 || (i > 0 && m.N <= msgs[i-1].N) {
			ok = false
			break
		}
	}
	if ok {
		return msgs
	}
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		m.N = i + 1
		out[i] = m
	}
	return out
}
