package distill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// Line is what one line of an OpenClaw session transcript (JSONL) says that
// memory cares about: the session header, or a user or assistant message.
type Line struct {
	Kind      LineKind
	SessionID string // KindSession: the session's id
	EntryID   string // the entry's own id (8 hex in OpenClaw)
	Role      string // KindMessage: user or assistant
	Text      string // KindMessage: all text blocks joined by newlines
	Timestamp int64  // unix ms: the message's own, else the entry's
}

// LineKind tells the lines apart.
type LineKind int

// Line kinds. KindOther is any valid line that carries no memory: tool
// results, model changes, compactions, custom entries, messages whose text
// is empty.
const (
	KindOther LineKind = iota
	KindSession
	KindMessage
)

// MaxLineBytes bounds one transcript line; longer lines are refused rather
// than held in memory (OpenClaw lines with images can be large, but not this).
const MaxLineBytes = 8 << 20

// ErrBadLine marks a line that is not a transcript entry.
var ErrBadLine = errors.New("bad transcript line")

type rawLine struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Timestamp json.RawMessage `json:"timestamp"`
	Message   *struct {
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Timestamp json.RawMessage `json:"timestamp"`
	} `json:"message"`
}

// ParseLine parses one JSONL line (without its newline). Blank lines are
// KindOther; anything that is not a JSON object, or is not valid UTF-8, is
// an ErrBadLine error.
func ParseLine(line []byte) (Line, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return Line{}, nil
	}
	if len(line) > MaxLineBytes {
		return Line{}, fmt.Errorf("%w: %d bytes, more than %d", ErrBadLine, len(line), MaxLineBytes)
	}
	if !utf8.Valid(line) {
		return Line{}, fmt.Errorf("%w: not valid UTF-8", ErrBadLine)
	}
	var r rawLine
	if err := json.Unmarshal(line, &r); err != nil {
		return Line{}, fmt.Errorf("%w: %v", ErrBadLine, err)
	}
	out := Line{EntryID: r.ID, Timestamp: parseTime(r.Timestamp)}
	switch r.Type {
	case "session":
		out.Kind, out.SessionID = KindSession, r.ID
	case "message":
		if r.Message == nil || (r.Message.Role != "user" && r.Message.Role != "assistant") {
			return out, nil
		}
		text := schemas.Message{Role: r.Message.Role, Content: r.Message.Content}.Text()
		if text == "" {
			return out, nil
		}
		out.Kind, out.Role, out.Text = KindMessage, r.Message.Role, text
		if ts := parseTime(r.Message.Timestamp); ts != 0 {
			out.Timestamp = ts
		}
	}
	return out, nil
}

// parseTime reads a timestamp given as unix milliseconds or as ISO 8601;
// anything else is 0.
func parseTime(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	var ms float64
	if json.Unmarshal(raw, &ms) == nil {
		return int64(ms)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
