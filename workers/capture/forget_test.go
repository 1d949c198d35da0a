package capture_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/pipelinetest"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
	"github.com/clawmem/clawmem/workers/stage"
)

// streamMsg is one message of a stream, as read back.
type streamMsg struct {
	stream, subject string
	data            string
}

// readStreams reads every message of the events, transcripts and DLQ
// streams.
func readStreams(t *testing.T, js jetstream.JetStream) []streamMsg {
	t.Helper()
	ctx := context.Background()
	var out []streamMsg
	for _, name := range []string{schemas.StreamEvents, schemas.StreamTranscripts, schemas.StreamDLQ} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		st := s.CachedInfo().State
		for seq := st.FirstSeq; seq <= st.LastSeq && st.Msgs > 0; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			// Decoded, so that an escaped text is found too.
			var v any
			text := string(m.Data)
			if json.Unmarshal(m.Data, &v) == nil {
				b, _ := json.Marshal(v)
				text = string(b)
				var ev schemas.HookEvent
				if json.Unmarshal(m.Data, &ev) == nil && len(ev.Event) > 0 {
					text += string(ev.Event)
				}
			}
			out = append(out, streamMsg{stream: name, subject: m.Subject, data: text})
		}
	}
	return out
}

// TestForgetPurgesTheStreams: a fact captured from hook events is
// forgotten by id, and every message of its agent that repeats it — both
// agent_end events of the session (the second carries the first's
// history), the session's transcript entry and a dead letter of an event —
// is deleted from the streams, while the same text said by another agent,
// and another memory's events, stay. The reply counts the deletions; a
// memory a tool stored says why nothing was deleted for it.
func TestForgetPurgesTheStreams(t *testing.T) {
	p := pipelinetest.Start(t, nil, stage.Config{})
	ctx := context.Background()
	fact := `My locker code is "4471" at the Oakwood gym`
	other := "We decided to use PostgreSQL for the billing service"
	first := []schemas.Message{testkit.UserMsg(pipelinetest.Envelope + fact)}
	p.PublishAgentEnd(t, "main", "s1", first, "")
	p.PublishAgentEnd(t, "main", "s1", append(first, testkit.AssistantMsg("Noted."), testkit.UserMsg("I always use tabs, never spaces")), "")
	p.PublishAgentEnd(t, "main", "s2", []schemas.Message{testkit.UserMsg(other)}, "")
	p.PublishAgentEnd(t, "helper", "h1", []schemas.Message{testkit.UserMsg(fact)}, "")
	entry, _ := json.Marshal(schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: "s1", Role: "user", Text: fact, Timestamp: 1})
	if _, err := p.JS.Publish(ctx, schemas.TranscriptSubject("main", "s1"), entry); err != nil {
		t.Fatal(err)
	}
	otherEntry, _ := json.Marshal(schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: "s2", Role: "user", Text: other, Timestamp: 2})
	if _, err := p.JS.Publish(ctx, schemas.TranscriptSubject("main", "s2"), otherEntry); err != nil {
		t.Fatal(err)
	}
	dead, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: "s1",
		Event: json.RawMessage(`{"messages":[{"role":"user","content":[{"type":"text","text":"[Telegram Alice +1m] My locker code is \u00224471\u0022 at the Oakwood gym"}]}],"success":true}`)})
	if _, err := p.JS.Publish(ctx, schemas.DLQSubjectFor("capture", schemas.EventSubject(schemas.KindAgentEnd, "main")), dead); err != nil {
		t.Fatal(err)
	}

	var target string
	testkit.WaitFor(t, 10*time.Second, func() error {
		ms, err := p.Eng.List(ctx, memory.Admin(), memory.ListOptions{Limit: 100})
		if err != nil {
			return err
		}
		n := 0
		for _, m := range ms {
			if m.Text == fact && m.Scope == "agent:main" {
				target = m.ID
			}
			if m.Text == fact || m.Text == other {
				n++
			}
		}
		if n != 3 || target == "" {
			return fmt.Errorf("%d of 3 memories", n)
		}
		return nil
	})
	before := readStreams(t, p.JS)

	svc := query.New(p.NC, p.Eng, query.DefaultConfig(), nil, slog.New(slog.DiscardHandler))
	body, _ := json.Marshal(schemas.ForgetRequest{MemoryID: target})
	start := time.Now()
	res := svc.Answer(ctx, memory.Admin(), schemas.OpForget, body)
	took := time.Since(start)
	if res.IsError {
		t.Fatalf("forget: %+v", res)
	}
	var d schemas.ForgetDetails
	raw, _ := json.Marshal(res.Details)
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	t.Logf("forget took %v: %s", took, res.Content[0].Text)
	if d.Action != "deleted" || d.Purged != 4 || d.PurgeNote != "" || !strings.Contains(res.Content[0].Text, "4 stream messages holding") {
		t.Fatalf("forget reply %+v %q, want 4 purged", d, res.Content[0].Text)
	}

	after := readStreams(t, p.JS)
	if len(after) != len(before)-4 {
		t.Fatalf("%d messages after, %d before: want 4 fewer", len(after), len(before))
	}
	// Found by its words: "4471" alone turns up in a message's timestamp
	// (1796447190821) as often as one run in a few hundred.
	holds := func(data string) bool { return strings.Contains(data, "locker code") }
	var helperKept, otherKept, otherTranscriptKept bool
	for _, m := range after {
		switch {
		case m.subject == schemas.EventSubject(schemas.KindAgentEnd, "helper"):
			helperKept = holds(m.data)
		case holds(m.data):
			t.Errorf("%s %s still holds the forgotten fact: %s", m.stream, m.subject, m.data)
		case m.subject == schemas.TranscriptSubject("main", "s2"):
			otherTranscriptKept = strings.Contains(m.data, other)
		case strings.Contains(m.data, other):
			otherKept = true
		}
	}
	if !helperKept || !otherKept || !otherTranscriptKept {
		t.Fatalf("kept: helper's event %v, main's other event %v, its transcript %v", helperKept, otherKept, otherTranscriptKept)
	}

	// A memory a tool stored comes from no conversation: the reply says so.
	stored := svc.Answer(ctx, memory.Agent("main"), schemas.OpStore, []byte(`{"text":"The staging server runs on port 8443"}`))
	var sd schemas.StoreDetails
	raw, _ = json.Marshal(stored.Details)
	json.Unmarshal(raw, &sd)
	body, _ = json.Marshal(schemas.ForgetRequest{MemoryID: sd.ID})
	res = svc.Answer(ctx, memory.Agent("main"), schemas.OpForget, body)
	raw, _ = json.Marshal(res.Details)
	d = schemas.ForgetDetails{}
	json.Unmarshal(raw, &d)
	if res.IsError || d.Purged != 0 || !strings.Contains(d.PurgeNote, "1 memory comes from no conversation in the streams") {
		t.Fatalf("forget of a stored memory: %+v %+v", res, d)
	}

	// A bulk delete of main's scope erases the rest of main's messages.
	res = svc.Answer(ctx, memory.Admin(), schemas.OpDeleteBulk, []byte(`{"scope":"agent:main"}`))
	var bd schemas.DeleteBulkDetails
	raw, _ = json.Marshal(res.Details)
	json.Unmarshal(raw, &bd)
	if res.IsError || bd.Count != 2 || bd.Purged != 2 || bd.PurgeNote != "" {
		t.Fatalf("delete-bulk: %+v %+v", res, bd)
	}
	left := readStreams(t, p.JS)
	if len(left) != 1 || left[0].subject != schemas.EventSubject(schemas.KindAgentEnd, "helper") {
		t.Fatalf("after the bulk delete the streams hold %+v, want only helper's event", left)
	}

	// Without NATS (a store opened with --db) nothing is searched, and the
	// reply says the messages stay.
	local := query.New(nil, p.Eng, query.DefaultConfig(), nil, slog.New(slog.DiscardHandler))
	stored = local.Answer(ctx, memory.Agent("main"), schemas.OpStore, []byte(`{"text":"The build server is in rack 12","metadata":{"sessionKey":"s9"}}`))
	raw, _ = json.Marshal(stored.Details)
	sd = schemas.StoreDetails{}
	json.Unmarshal(raw, &sd)
	body, _ = json.Marshal(schemas.ForgetRequest{MemoryID: sd.ID})
	res = local.Answer(ctx, memory.Agent("main"), schemas.OpForget, body)
	raw, _ = json.Marshal(res.Details)
	d = schemas.ForgetDetails{}
	json.Unmarshal(raw, &d)
	if res.IsError || d.Action != "deleted" || !strings.Contains(d.PurgeNote, "were not searched and stay until they age out") {
		t.Fatalf("forget without NATS: %+v %+v", res, d)
	}
}
