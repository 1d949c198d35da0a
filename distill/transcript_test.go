package distill

import (
	"errors"
	"testing"
)

func TestParseLine(t *testing.T) {
	cases := []struct {
		name string
		line string
		want Line
		bad  bool
	}{
		{"blank", "   ", Line{}, false},
		{"header", `{"type":"session","version":3,"id":"s-1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/x"}`,
			Line{Kind: KindSession, SessionID: "s-1", EntryID: "s-1", Timestamp: 1777629600000}, false},
		{"user string", `{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-05-01T10:00:01Z","message":{"role":"user","content":"I prefer tabs","timestamp":1777629601500}}`,
			Line{Kind: KindMessage, EntryID: "a1b2c3d4", Role: "user", Text: "I prefer tabs", Timestamp: 1777629601500}, false},
		{"assistant blocks", `{"type":"message","id":"b","timestamp":"2026-05-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"one"},{"type":"toolCall","id":"c","name":"x","arguments":{}},{"type":"text","text":"two"}]}}`,
			Line{Kind: KindMessage, EntryID: "b", Role: "assistant", Text: "one\ntwo", Timestamp: 1777629602000}, false},
		{"tool result", `{"type":"message","id":"c","message":{"role":"toolResult","toolCallId":"c","content":[{"type":"text","text":"ok"}]}}`,
			Line{EntryID: "c"}, false},
		{"image only", `{"type":"message","id":"d","message":{"role":"user","content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}}`,
			Line{EntryID: "d"}, false},
		{"compaction", `{"type":"compaction","id":"e","summary":"s","firstKeptEntryId":"a","tokensBefore":10}`, Line{EntryID: "e"}, false},
		{"not json", `{"type":"message"`, Line{}, true},
		{"array", `[1,2]`, Line{}, true},
		{"invalid utf8", "{\"type\":\"message\",\"id\":\"\xff\"}", Line{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseLine([]byte(c.line))
			if c.bad {
				if !errors.Is(err, ErrBadLine) {
					t.Fatalf("err = %v, want ErrBadLine", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(`{"type":"message","id":"a","message":{"role":"user","content":"hello"}}`))
	f.Add([]byte(`{"type":"session","id":"s"}`))
	f.Add([]byte(`{"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"x"}],"timestamp":"bad"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		if err != nil {
			if !errors.Is(err, ErrBadLine) {
				t.Fatalf("error not ErrBadLine: %v", err)
			}
			return
		}
		if l.Kind == KindMessage && (l.Text == "" || (l.Role != "user" && l.Role != "assistant")) {
			t.Fatalf("message line without text or role: %+v", l)
		}
	})
}
