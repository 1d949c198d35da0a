package watcher

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

func TestEncodeEntryFitsLimit(t *testing.T) {
	base := schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "s", File: "s.jsonl", Role: "user"}
	tests := []struct {
		name  string
		text  string
		limit int
		cut   bool
	}{
		{"fits", "hello <b> & co", 1000, false},
		{"ascii cut", strings.Repeat("a", 500), 300, true},
		{"escapes cut", strings.Repeat("\"\n", 200), 300, true},
		{"runes cut", strings.Repeat("é\u2028日", 100), 300, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			e.Text = tt.text
			data, cut, err := encodeEntry(e, tt.limit)
			if err != nil || cut != tt.cut || len(data) > tt.limit {
				t.Fatalf("%d bytes, cut %v, err %v", len(data), cut, err)
			}
			var back schemas.TranscriptEntry
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tt.text, back.Text) || !utf8.ValidString(back.Text) {
				t.Fatalf("text %q is not a prefix of the original", back.Text)
			}
			if tt.cut && len(data) < tt.limit-6 {
				t.Fatalf("cut too much: %d bytes of %d", len(data), tt.limit)
			}
			if !tt.cut && back.Text != tt.text {
				t.Fatalf("text changed: %q", back.Text)
			}
		})
	}
	if _, _, err := encodeEntry(base, 20); err == nil {
		t.Fatal("an entry that cannot fit was encoded")
	}
}

func FuzzEncodeEntry(f *testing.F) {
	f.Add("hello", 200)
	f.Add("\u2028\"\x01é\xff日", 130)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		e := schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "s", Role: "user", Text: text}
		data, cut, err := encodeEntry(e, limit)
		empty, _ := marshalJSON(schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "s", Role: "user"})
		if err != nil {
			if limit >= len(empty) {
				t.Fatalf("limit %d, empty entry %d bytes: %v", limit, len(empty), err)
			}
			return
		}
		if len(data) > limit {
			t.Fatalf("%d bytes over the limit %d", len(data), limit)
		}
		var back schemas.TranscriptEntry
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !cut || !utf8.ValidString(text) {
			return // texts from distill.ParseLine are valid UTF-8
		}
		// A cut text is a prefix of the original, and one more rune would
		// not have fitted.
		n := len(back.Text)
		if !strings.HasPrefix(text, back.Text) || n >= len(text) {
			t.Fatalf("cut text %q is not a shorter prefix of %q", back.Text, text)
		}
		_, size := utf8.DecodeRuneInString(text[n:])
		e.Text = text[:n+size]
		if more, _ := marshalJSON(e); len(more) <= limit {
			t.Fatalf("cut at %d although %d bytes fit", n, len(more))
		}
	})
}
