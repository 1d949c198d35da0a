package distill

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/clawmem/clawmem/schemas"
)

func TestFromHook(t *testing.T) {
	raw := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	in := []schemas.Message{
		{Role: "user", Content: raw("Conversation info (untrusted metadata):\n```json\n{\"message_id\": \"1\"}\n```\n\n[Telegram Ann +1m] I prefer dark mode"), ID: "a1", Timestamp: 5},
		{Role: "toolResult", Content: raw("ignored")},
		{Role: "assistant", Content: raw([]map[string]string{{"type": "thinking", "text": ""}, {"type": "text", "text": "Noted."}}), ID: "b2"},
		{Role: "user", Content: raw("   ")},
		{Role: "system", Content: raw("you are an agent")},
		{Role: "user", Content: raw("line one\r\nline two")},
	}
	want := []Message{
		{N: 1, Role: RoleUser, Text: "I prefer dark mode", EntryID: "a1", Timestamp: 5},
		{N: 2, Role: RoleAssistant, Text: "Noted.", EntryID: "b2"},
		{N: 3, Role: RoleUser, Text: "line one\nline two"},
	}
	if got := FromHook(in); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestFromEntries(t *testing.T) {
	in := []schemas.TranscriptEntry{
		{EntryID: "e1", Role: "user", Text: "[Discord Bob 2026-01-02 10:00] we decided on Postgres", Timestamp: 1},
		{EntryID: "e2", Role: "assistant", Text: "Good choice.", Timestamp: 2},
		{EntryID: "e1", Role: "user", Text: "[Discord Bob 2026-01-02 10:00] we decided on Postgres", Timestamp: 1}, // redelivered
		{Role: "user", Text: "no id is fine", Timestamp: 3},
	}
	want := []Message{
		{N: 1, Role: RoleUser, Text: "we decided on Postgres", EntryID: "e1", Timestamp: 1},
		{N: 2, Role: RoleAssistant, Text: "Good choice.", EntryID: "e2", Timestamp: 2},
		{N: 3, Role: RoleUser, Text: "no id is fine", Timestamp: 3},
	}
	if got := FromEntries(in); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestReadFileFixtures(t *testing.T) {
	cases := []struct {
		file, session string
		messages      int
	}{
		{"english_debug_session.jsonl", "7f3c9a12-4b8e-4d21-9c55-0a1b2c3d4e5f", 300},
		{"mixed_zh_en_session.jsonl", "c41d7e88-2f5a-4e7b-8a90-6b3c2d1e0f99", 40},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			tr, err := ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			if tr.SessionID != c.session || len(tr.Messages) != c.messages || tr.BadLines != 0 {
				t.Fatalf("session %q, %d messages, %d bad lines", tr.SessionID, len(tr.Messages), tr.BadLines)
			}
			for i, m := range tr.Messages {
				if m.N != i+1 || m.EntryID == "" || m.Timestamp == 0 || m.Text == "" {
					t.Errorf("message %d: %+v", i, m)
				}
				if strings.Contains(m.Text, "untrusted metadata") || strings.Contains(m.Text, "[Telegram") {
					t.Errorf("envelope left in message %d: %q", m.N, m.Text)
				}
			}
			if tr.Messages[0].Role != RoleUser || tr.Messages[1].Role != RoleAssistant {
				t.Errorf("roles %s %s", tr.Messages[0].Role, tr.Messages[1].Role)
			}
		})
	}
}

func TestReadSkipsAndCountsBadLines(t *testing.T) {
	long := `{"type":"message","id":"x","message":{"role":"user","content":"` + strings.Repeat("a", MaxLineBytes) + `"}}`
	in := strings.Join([]string{
		`{"type":"session","version":3,"id":"s-1","timestamp":"2026-05-01T10:00:00.000Z"}`,
		`{"type":"message","id":"a","message":{"role":"user","content":"first"}}`,
		`{"type":"message","id":"b","message":{"role":"assi`, // torn write
		``,
		long,
		`not json at all`,
		`{"type":"message","id":"c","message":{"role":"toolResult","content":"x"}}`,
		`{"type":"message","id":"d","message":{"role":"assistant","content":[{"type":"text","text":"second"}]}}`,
		`{"type":"message","id":"e","message":{"role":"user","content":"partial last line, no newline"}}`,
	}, "\n")
	tr, err := Read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SessionID != "s-1" || tr.Lines != 8 || tr.BadLines != 3 || len(tr.Messages) != 3 {
		t.Fatalf("%+v lines=%d bad=%d", tr.Messages, tr.Lines, tr.BadLines)
	}
	if tr.Messages[2].Text != "partial last line, no newline" || tr.Messages[2].N != 3 {
		t.Errorf("last message %+v", tr.Messages[2])
	}
}

func TestReadErrors(t *testing.T) {
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	boom := errors.New("disk gone")
	if _, err := Read(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Errorf("reader error: %v", err)
	}
}

func TestNumbered(t *testing.T) {
	cases := []struct {
		in   []int
		want []int
	}{
		{[]int{1, 2, 3}, []int{1, 2, 3}},
		{[]int{50, 51, 60}, []int{50, 51, 60}}, // a range keeps its numbers
		{[]int{0, 0, 0}, []int{1, 2, 3}},
		{[]int{3, 2, 1}, []int{1, 2, 3}},
		{[]int{1, 1}, []int{1, 2}},
	}
	for _, c := range cases {
		msgs := make([]Message, len(c.in))
		for i, n := range c.in {
			msgs[i] = Message{N: n}
		}
		var got []int
		for _, m := range numbered(msgs) {
			got = append(got, m.N)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("numbered(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"hi there\"}}\n"))
	f.Add([]byte("\n\n{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}"))
	f.Add([]byte("garbage\n{\"type\":"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Read(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("reading from memory failed: %v", err)
		}
		if tr.BadLines > tr.Lines || len(tr.Messages) > tr.Lines {
			t.Fatalf("lines %d, bad %d, messages %d", tr.Lines, tr.BadLines, len(tr.Messages))
		}
		for i, m := range tr.Messages {
			if m.N != i+1 || m.Text == "" || (m.Role != RoleUser && m.Role != RoleAssistant) {
				t.Fatalf("message %d: %+v", i, m)
			}
		}
	})
}
