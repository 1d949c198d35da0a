// Package eval measures retrieval quality: it imports conversations into a
// store, one memory per turn, asks every question of the set and reports
// evidence recall@k, MRR, per-category figures, auto-recall precision and
// query latency (`clawmem eval`).
package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Question categories.
const (
	SingleHop  = "single-hop"
	MultiHop   = "multi-hop"
	Temporal   = "temporal"
	OpenDomain = "open-domain"
	// None: a question about something never said; auto-recall should
	// inject nothing for it.
	None = "none"
)

// Categories lists the known categories in report order.
var Categories = []string{SingleHop, MultiHop, Temporal, OpenDomain, None}

// Conversation is one evaluation file: dated sessions of turns, and the
// questions asked of them.
type Conversation struct {
	ID          string     `json:"id"`
	Description string     `json:"description,omitempty"`
	Speakers    []string   `json:"speakers,omitempty"`
	Sessions    []Session  `json:"sessions"`
	Questions   []Question `json:"questions"`

	// File is where the conversation was read from.
	File string `json:"-"`
}

// Session is one dated conversation session.
type Session struct {
	ID    string `json:"id"`
	Date  string `json:"date"`
	Turns []Turn `json:"turns"`

	// When is Date parsed.
	When time.Time `json:"-"`
}

// Turn is one message of a session.
type Turn struct {
	ID      string `json:"id"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// Question is one question with the turns that answer it.
type Question struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Category string   `json:"category"`
	Evidence []string `json:"evidence"`
	Answer   string   `json:"answer,omitempty"`
	// Relative marks a temporal question whose evidence states a date
	// relative to its session ("last Tuesday").
	Relative bool `json:"relative,omitempty"`
}

// TurnRef locates a turn in its conversation.
type TurnRef struct {
	Session int // index in Sessions
	Turn    int // index in the session's Turns
}

// Index maps every turn id of c to where it is.
func (c *Conversation) Index() map[string]TurnRef {
	idx := make(map[string]TurnRef)
	for si, s := range c.Sessions {
		for ti, t := range s.Turns {
			idx[t.ID] = TurnRef{si, ti}
		}
	}
	return idx
}

// ErrInvalid marks an evaluation file that cannot be used.
var ErrInvalid = errors.New("invalid evaluation file")

// maxFileBytes bounds one evaluation file.
const maxFileBytes = 64 << 20

// dateLayouts are the session date formats accepted; times without a zone
// are UTC.
var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

// LoadFiles loads every file, refusing two conversations with one id.
func LoadFiles(paths []string) ([]*Conversation, error) {
	var convs []*Conversation
	seen := map[string]string{}
	for _, f := range paths {
		c, err := LoadFile(f)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[c.ID]; dup {
			return nil, fmt.Errorf("%w: %s: conversation id %q is also the id of %s", ErrInvalid, f, c.ID, prev)
		}
		seen[c.ID] = f
		convs = append(convs, c)
	}
	return convs, nil
}

// LoadFile reads and checks one evaluation file. Every problem is reported
// with the file and line it is on.
func LoadFile(path string) (*Conversation, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("%w: %s: %d bytes, more than the %d allowed", ErrInvalid, path, len(data), maxFileBytes)
	}
	return Parse(path, data)
}

// Parse decodes and checks one evaluation file's content; name labels its
// errors.
func Parse(name string, data []byte) (*Conversation, error) {
	fail := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, name, lineAt(data, off), fmt.Sprintf(format, args...))
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return nil, fail(int64(i), "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Conversation
	if err := dec.Decode(&c); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fail(se.Offset, "malformed JSON: %v", se)
		case errors.As(err, &te):
			return nil, fail(te.Offset, "%s is a JSON %s, want %s", te.Field, te.Value, te.Type)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, fail(int64(len(data)), "empty or truncated file")
		default:
			return nil, fail(dec.InputOffset(), "%v", err)
		}
	}
	if dec.More() {
		return nil, fail(dec.InputOffset(), "more than one JSON document")
	}
	c.File = name
	// occurrences finds the offsets of "key": "value" in the file.
	occurrences := func(key, value string) []int64 {
		quoted, _ := json.Marshal(value)
		var out []int64
		for off := 0; ; {
			i := bytes.Index(data[off:], quoted)
			if i < 0 {
				return out
			}
			pos := off + i
			before := bytes.TrimRight(data[:pos], " \t\r\n")
			if bytes.HasSuffix(before, []byte(":")) && bytes.HasSuffix(bytes.TrimRight(before[:len(before)-1], " \t\r\n"), []byte(`"`+key+`"`)) {
				out = append(out, int64(pos))
			}
			off = pos + len(quoted)
		}
	}
	// at is where a value first stands; again where it stands last (a
	// duplicate's second place).
	at := func(key, value string) int64 {
		if o := occurrences(key, value); len(o) > 0 {
			return o[0]
		}
		return 0
	}
	again := func(key, value string) int64 {
		if o := occurrences(key, value); len(o) > 0 {
			return o[len(o)-1]
		}
		return 0
	}
	if strings.TrimSpace(c.ID) == "" {
		return nil, fail(0, "the conversation has no id")
	}
	if len(c.Sessions) == 0 {
		return nil, fail(0, "conversation %q has no sessions", c.ID)
	}
	turnIDs := map[string]bool{}
	sessionIDs := map[string]bool{}
	for si := range c.Sessions {
		s := &c.Sessions[si]
		switch {
		case strings.TrimSpace(s.ID) == "":
			return nil, fail(0, "session %d has no id", si+1)
		case sessionIDs[s.ID]:
			return nil, fail(again("id", s.ID), "duplicate session id %q", s.ID)
		}
		sessionIDs[s.ID] = true
		when, err := parseDate(s.Date)
		if err != nil {
			return nil, fail(at("id", s.ID), "session %q: %v", s.ID, err)
		}
		s.When = when
		if len(s.Turns) == 0 {
			return nil, fail(at("id", s.ID), "session %q has no turns", s.ID)
		}
		for _, t := range s.Turns {
			switch {
			case strings.TrimSpace(t.ID) == "":
				return nil, fail(at("id", s.ID), "a turn of session %q has no id", s.ID)
			case turnIDs[t.ID]:
				return nil, fail(again("id", t.ID), "duplicate turn id %q", t.ID)
			case strings.TrimSpace(t.Text) == "":
				return nil, fail(at("id", t.ID), "turn %q has no text", t.ID)
			}
			turnIDs[t.ID] = true
		}
	}
	qIDs := map[string]bool{}
	for i, q := range c.Questions {
		switch {
		case strings.TrimSpace(q.ID) == "":
			return nil, fail(0, "question %d has no id", i+1)
		case qIDs[q.ID]:
			return nil, fail(again("id", q.ID), "duplicate question id %q", q.ID)
		case strings.TrimSpace(q.Text) == "":
			return nil, fail(at("id", q.ID), "question %q is empty", q.ID)
		case !slices.Contains(Categories, q.Category):
			return nil, fail(at("id", q.ID), "question %q: category %q, want one of %s", q.ID, q.Category, strings.Join(Categories, ", "))
		case q.Category == None && len(q.Evidence) > 0:
			return nil, fail(at("id", q.ID), "question %q is in category none but has evidence", q.ID)
		case q.Category != None && len(q.Evidence) == 0:
			return nil, fail(at("id", q.ID), "question %q has no evidence (only category none may have none)", q.ID)
		}
		qIDs[q.ID] = true
		for _, ev := range q.Evidence {
			if !turnIDs[ev] {
				return nil, fail(at("id", q.ID), "question %q cites unknown turn %q", q.ID, ev)
			}
		}
	}
	if len(c.Questions) == 0 {
		return nil, fail(0, "conversation %q has no questions", c.ID)
	}
	return &c, nil
}

func parseDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("no date")
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("date %q in an unknown format: use RFC 3339 (2026-01-05T19:30:00Z) or YYYY-MM-DD", s)
}

// lineAt is the 1-based line of byte offset off in data.
func lineAt(data []byte, off int64) int {
	if off <= 0 {
		return 1
	}
	off = min(off, int64(len(data)))
	return bytes.Count(data[:off], []byte("\n")) + 1
}
