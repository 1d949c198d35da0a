package purge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

func TestMentions(t *testing.T) {
	text := `My locker code is "4471"`
	cases := []struct {
		name    string
		payload string
		want    bool
	}{
		{"plain string field", `{"text":"My locker code is \"4471\""}`, true},
		{"escaped as unicode", `{"text":"My locker code is \u00224471\u0022, ok"}`, true},
		{"inside a history", `{"event":{"messages":[{"role":"user","content":"hi"},{"role":"user","content":"x My locker code is \"4471\" y"}]}}`, true},
		{"split over text blocks as capture joins them", `{"content":[{"type":"text","text":"My locker"},{"type":"text","text":"code is \"4471\""}]}`, false},
		{"joined blocks", `{"content":[{"type":"text","text":"so:"},{"type":"text","text":"My locker code is \"4471\""}]}`, true},
		{"not json", `raw My locker code is "4471" raw`, true},
		{"another text", `{"text":"My locker code is 4471"}`, false},
		{"only a key", `{"My locker code is \"4471\"":1}`, false},
		{"empty", ``, false},
	}
	for _, c := range cases {
		if got := Mentions([]byte(c.payload), []string{text}); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// A text capture kept after joining blocks with a newline.
	joined := `{"content":[{"type":"text","text":"first line"},{"type":"text","text":"second line"}]}`
	if !Mentions([]byte(joined), []string{"first line\nsecond line"}) {
		t.Error("joined blocks not found")
	}
}

// FuzzMentions: any payload is searched without panicking, and a text
// placed whole in a JSON string of the payload is always found.
func FuzzMentions(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"a"}]}`), "a")
	f.Add([]byte(`[1,{"x":"\u0000"}]`), "\x00")
	f.Add([]byte("not json \xff"), "json")
	f.Fuzz(func(t *testing.T, payload []byte, text string) {
		Mentions(payload, []string{text})
		if strings.TrimSpace(text) == "" {
			return
		}
		wrapped, _ := json.Marshal(map[string]any{"event": []any{"before " + text + " after"}})
		if !Mentions(wrapped, []string{text}) && json.Valid(wrapped) && strings.ToValidUTF8(text, "") == text {
			t.Fatalf("%q not found in %s", text, wrapped)
		}
	})
}

func TestTrace(t *testing.T) {
	meta := func(key, session string) json.RawMessage {
		b, _ := json.Marshal(map[string]string{key: session})
		return b
	}
	text := "I always use tabs"
	cases := []struct {
		name string
		m    schemas.Memory
		want Source
		ok   bool
	}{
		{"captured", schemas.Memory{ID: MemoryID("main", SourceID("main", "s1", text)), Text: text, Metadata: meta("sessionKey", "s1")},
			Source{Agent: "main", Session: "s1", Verbatim: true}, true},
		{"extracted", schemas.Memory{ID: MemoryID("b", SourceID("b", "s1", KindFact+text)), Text: text, Metadata: meta("sessionKey", "s1")},
			Source{Agent: "b", Session: "s1"}, true},
		{"a lesson", schemas.Memory{ID: MemoryID("b", SourceID("b", "s9", KindLesson+text)), Text: text, Metadata: meta("sessionId", "s9")},
			Source{Agent: "b", Session: "s9"}, true},
		{"an agent not in the streams", schemas.Memory{ID: MemoryID("gone", SourceID("gone", "s1", text)), Text: text, Metadata: meta("sessionKey", "s1")}, Source{}, false},
		{"stored by a tool", schemas.Memory{ID: "0b8e2f0c-3c9e-4f5e-9a8e-2f0c3c9e4f5e", Text: text, Metadata: meta("sessionKey", "s1")}, Source{}, false},
		{"no metadata", schemas.Memory{ID: MemoryID("main", SourceID("main", "s1", text)), Text: text}, Source{}, false},
	}
	for _, c := range cases {
		got, ok := Trace(c.m, []string{"b", "main"})
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestPurgeOnEmptyStreams: with nothing in the streams a purge reads
// stream information and nothing else, and returns at once.
func TestPurgeOnEmptyStreams(t *testing.T) {
	ctx := context.Background()
	_, _, js := natsembed.StartTest(t)
	p := New(js)
	if n, err := p.Purge(ctx, "main", []string{"x"}); err != nil || n != 0 {
		t.Fatalf("before the streams exist: %d %v", n, err)
	}
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	agents, err := p.Agents(ctx)
	if err != nil || len(agents) != 0 {
		t.Fatalf("agents %v %v", agents, err)
	}
	n, err := p.Purge(ctx, "main", []string{"some forgotten text"})
	took := time.Since(start)
	t.Logf("agents and purge on empty streams: %v", took)
	if err != nil || n != 0 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if took > time.Second {
		t.Fatalf("took %v on empty streams", took)
	}
}
