package producers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// setup starts an embedded server with clawmem's streams.
func setup(tb testing.TB) (*natsembed.Server, jetstream.JetStream, *producers.Publisher) {
	tb.Helper()
	srv, _, js := natsembed.StartTest(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		tb.Fatal(err)
	}
	return srv, js, producers.New(js)
}

func streamMsgs(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	return testkit.StreamMsgs(t, js, schemas.StreamEvents)
}

func getMsg(t *testing.T, js jetstream.JetStream, seq uint64) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func agentEnd(n int) json.RawMessage {
	var msgs []string
	for i := range n {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"message %d","timestamp":%d}`, i, 1767225600000+i))
	}
	return json.RawMessage(`{"messages":[` + strings.Join(msgs, ",") + `],"success":true,"durationMs":42}`)
}

func TestPublishEnvelopeAndSubject(t *testing.T) {
	_, js, pub := setup(t)
	meta := producers.Meta{SessionKey: "agent:main:main", SessionID: "s1", RunID: "r1", ChannelID: "telegram", Timestamp: 1767225600123}
	ack, err := pub.Publish(context.Background(), schemas.KindAgentEnd, "main", agentEnd(2), meta)
	if err != nil {
		t.Fatal(err)
	}
	if ack.Stream != schemas.StreamEvents || ack.Seq != 1 || ack.Duplicate {
		t.Fatalf("ack %+v", ack)
	}
	m := getMsg(t, js, ack.Seq)
	if m.Subject != "clawmem.events.agent_end.main" || m.Subject != schemas.EventSubject(schemas.KindAgentEnd, "main") {
		t.Fatalf("subject %q", m.Subject)
	}
	if m.Header.Get(jetstream.MsgIDHeader) == "" {
		t.Fatal("no Nats-Msg-Id header")
	}
	var env schemas.HookEvent
	if err := json.Unmarshal(m.Data, &env); err != nil {
		t.Fatal(err)
	}
	if env.V != schemas.Version || env.Kind != schemas.KindAgentEnd || env.AgentID != "main" || env.SessionKey != meta.SessionKey ||
		env.SessionID != "s1" || env.RunID != "r1" || env.ChannelID != "telegram" || env.Timestamp != meta.Timestamp {
		t.Fatalf("envelope %+v", env)
	}
	var ev schemas.AgentEndEvent
	if err := json.Unmarshal(env.Event, &ev); err != nil || len(ev.Messages) != 2 || !ev.Success || ev.Messages[1].Text() != "message 1" {
		t.Fatalf("event %s: %v", env.Event, err)
	}

	// Without a timestamp the envelope gets the publish time.
	before := time.Now().UnixMilli()
	ack, err = pub.Publish(context.Background(), schemas.KindCommandNew, "main", json.RawMessage(`{}`), producers.Meta{SessionKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	m = getMsg(t, js, ack.Seq)
	env = schemas.HookEvent{}
	if err := json.Unmarshal(m.Data, &env); err != nil || env.Timestamp < before || m.Subject != "clawmem.events.command_new.main" {
		t.Fatalf("%s %+v %v", m.Subject, env, err)
	}
}

func TestPublishIdempotent(t *testing.T) {
	_, js, pub := setup(t)
	ctx := context.Background()
	meta := producers.Meta{SessionKey: "agent:main:main", SessionID: "s1", RunID: "r1"}
	var first producers.Ack
	for i := range 5 {
		// The envelope timestamp differs per attempt; the Msg-Id must not.
		ack, err := pub.Publish(ctx, schemas.KindAgentEnd, "main", agentEnd(3), meta)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ack
		} else if !ack.Duplicate || ack.Seq != first.Seq {
			t.Fatalf("attempt %d: %+v, want duplicate of seq %d", i, ack, first.Seq)
		}
	}
	if n := streamMsgs(t, js); n != 1 {
		t.Fatalf("%d messages after 5 identical publishes", n)
	}
	// The history grew: a new turn, a new message.
	ack, err := pub.Publish(ctx, schemas.KindAgentEnd, "main", agentEnd(5), meta)
	if err != nil || ack.Duplicate || ack.Seq != 2 {
		t.Fatalf("grown history: %+v %v", ack, err)
	}
	// Another agent with the same session and run is another event.
	if ack, err := pub.Publish(ctx, schemas.KindAgentEnd, "other", agentEnd(5), meta); err != nil || ack.Duplicate {
		t.Fatalf("other agent: %+v %v", ack, err)
	}
	// An explicit MsgID wins over the derived one.
	m := producers.Meta{MsgID: "hook-42"}
	for range 2 {
		if _, err := pub.Publish(ctx, schemas.KindSessionEnd, "main", json.RawMessage(`{"sessionId":"a"}`), m); err != nil {
			t.Fatal(err)
		}
	}
	ack, err = pub.Publish(ctx, schemas.KindSessionEnd, "main", json.RawMessage(`{"sessionId":"b"}`), m)
	if err != nil || !ack.Duplicate {
		t.Fatalf("same MsgID, other body: %+v %v", ack, err)
	}
	if n := streamMsgs(t, js); n != 4 {
		t.Fatalf("%d messages, want 4", n)
	}
}

func TestDerivedMsgIDs(t *testing.T) {
	_, js, pub := setup(t)
	ctx := context.Background()
	dup := func(kind schemas.EventKind, ev string, m producers.Meta) bool {
		t.Helper()
		ack, err := pub.Publish(ctx, kind, "main", json.RawMessage(ev), m)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Duplicate
	}
	// No session or run: the canonical body decides, whatever the formatting.
	if dup(schemas.KindAgentEnd, `{"messages":[],"success":true}`, producers.Meta{}) ||
		!dup(schemas.KindAgentEnd, `{ "success" : true, "messages" : [ ] }`, producers.Meta{}) ||
		dup(schemas.KindAgentEnd, `{"messages":[],"success":false}`, producers.Meta{}) {
		t.Fatal("agent_end without context: dedup by canonical body failed")
	}
	// Other kinds: session, run and timestamp identify the event.
	m := producers.Meta{SessionID: "s1", Timestamp: 1000}
	if dup(schemas.KindSessionEnd, `{"reason":"new"}`, m) || !dup(schemas.KindSessionEnd, `{"reason":"new"}`, m) {
		t.Fatal("session_end retry not deduplicated")
	}
	m.Timestamp = 2000
	if dup(schemas.KindSessionEnd, `{"reason":"new"}`, m) {
		t.Fatal("a later session_end was taken for a retry")
	}
	// Without a timestamp two different bodies in one session stay apart.
	k := producers.Meta{SessionKey: "agent:main:main"}
	if dup(schemas.KindCommandNew, `{"timestamp":"2026-01-01T00:00:00Z"}`, k) ||
		dup(schemas.KindCommandNew, `{"timestamp":"2026-01-01T00:05:00Z"}`, k) ||
		!dup(schemas.KindCommandNew, `{"timestamp":"2026-01-01T00:05:00Z"}`, k) {
		t.Fatal("command_new without timestamp: dedup by body failed")
	}
	if n := streamMsgs(t, js); n != 6 {
		t.Fatalf("%d messages, want 6", n)
	}
}

func TestPublishRejects(t *testing.T) {
	_, js, pub := setup(t)
	big := `{"prompt":"` + strings.Repeat("x", schemas.MaxEventBytes) + `"}`
	nearLimit := `{"prompt":"` + strings.Repeat("x", schemas.MaxEventBytes-20) + `"}`
	cases := []struct {
		name  string
		kind  schemas.EventKind
		agent string
		event string
		msgID string
		want  error
		say   string
	}{
		{"malformed", schemas.KindAgentEnd, "main", `{"messages":[`, "", schemas.ErrInvalid, "event: malformed JSON"},
		{"not an object", schemas.KindAgentEnd, "main", `[1,2]`, "", schemas.ErrInvalid, "JSON object"},
		{"null", schemas.KindAgentEnd, "main", `null`, "", schemas.ErrInvalid, "JSON object"},
		{"messages string", schemas.KindAgentEnd, "main", `{"messages":"x","success":true}`, "", schemas.ErrInvalid, "event.messages: want array, got string"},
		{"success string", schemas.KindAgentEnd, "main", `{"messages":[],"success":"yes"}`, "", schemas.ErrInvalid, "event.success: want boolean, got string"},
		{"role number", schemas.KindAgentEnd, "main", `{"messages":[{"role":1}]}`, "", schemas.ErrInvalid, "role: want string, got number"},
		{"durationMs float", schemas.KindAgentEnd, "main", `{"messages":[],"durationMs":1.5}`, "", schemas.ErrInvalid, "event.durationMs: want integer"},
		{"prompt object", schemas.KindBeforePromptBuild, "main", `{"prompt":{}}`, "", schemas.ErrInvalid, "event.prompt: want string, got object"},
		{"messageCount string", schemas.KindSessionEnd, "main", `{"messageCount":"3"}`, "", schemas.ErrInvalid, "event.messageCount: want integer, got string"},
		{"invalid utf8", schemas.KindBeforePromptBuild, "main", "{\"prompt\":\"\xff\xfe\"}", "", schemas.ErrInvalid, "UTF-8"},
		{"oversized", schemas.KindBeforePromptBuild, "main", big, "", producers.ErrTooLarge, "max"},
		{"oversized with envelope", schemas.KindBeforePromptBuild, "main", nearLimit, "", producers.ErrTooLarge, "envelope"},
		{"unknown kind", "agent_start", "main", `{}`, "", schemas.ErrInvalid, "unknown event kind"},
		{"OpenClaw spelling", "command:new", "main", `{}`, "", schemas.ErrInvalid, "unknown event kind"},
		{"empty agent", schemas.KindAgentEnd, "", `{}`, "", schemas.ErrInvalid, "agent id is empty"},
		{"dotted agent", schemas.KindAgentEnd, "a.b", `{}`, "", schemas.ErrInvalid, "agent id"},
		{"wildcard agent", schemas.KindAgentEnd, "*", `{}`, "", schemas.ErrInvalid, "agent id"},
		{"full wildcard agent", schemas.KindAgentEnd, ">", `{}`, "", schemas.ErrInvalid, "agent id"},
		{"path agent", schemas.KindAgentEnd, "../x", `{}`, "", schemas.ErrInvalid, "agent id"},
		{"msgId with newline", schemas.KindAgentEnd, "main", `{}`, "a\nb", schemas.ErrInvalid, "msgId"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := pub.Publish(context.Background(), c.kind, c.agent, json.RawMessage(c.event), producers.Meta{MsgID: c.msgID})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.say) {
				t.Fatalf("got %v, want %v saying %q", err, c.want, c.say)
			}
		})
	}
	if n := streamMsgs(t, js); n != 0 {
		t.Fatalf("%d messages published by rejected inputs", n)
	}
}

func TestPublishUnavailable(t *testing.T) {
	srv, _, pub := setup(t)
	if !pub.Connected() {
		t.Fatal("not connected")
	}
	srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := pub.Publish(ctx, schemas.KindAgentEnd, "main", agentEnd(1), producers.Meta{RunID: "r"})
	if !errors.Is(err, producers.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if pub.Connected() {
		t.Fatal("still connected after the server stopped")
	}
}

func TestPublishNoStream(t *testing.T) {
	_, _, js := natsembed.StartTest(t) // no topology: no stream takes the subject
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := producers.New(js).Publish(ctx, schemas.KindAgentEnd, "main", agentEnd(1), producers.Meta{RunID: "r"})
	if !errors.Is(err, producers.ErrUnavailable) || !strings.Contains(err.Error(), "clawmem up") {
		t.Fatalf("got %v", err)
	}
}

func TestConnect(t *testing.T) {
	srv, js, _ := setup(t)
	pub, err := producers.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	if _, err := pub.Publish(context.Background(), schemas.KindSessionEnd, "main", json.RawMessage(`{"sessionId":"s","messageCount":3,"reason":"idle"}`),
		producers.Meta{SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, js); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if _, err := producers.Connect("nats://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "clawmem up") {
		t.Fatalf("connect to nothing: %v", err)
	}
}

func TestPublishFromReader(t *testing.T) {
	_, js, pub := setup(t)
	ctx := context.Background()
	body := `{"event":{"messages":[{"role":"user","content":"hi there"}],"success":true},` +
		`"ctx":{"agentId":"main","sessionKey":"agent:main:main","sessionId":"s1","runId":"r1","channelId":"cli"}}`
	ack, err := producers.PublishFromReader(ctx, pub, "agent_end", "", strings.NewReader(body))
	if err != nil || ack.Seq != 1 {
		t.Fatalf("%+v %v", ack, err)
	}
	// The same hook piped again (a retried HOOK.md handler) is a duplicate.
	ack, err = producers.PublishFromReader(ctx, pub, "agent-end", "main", strings.NewReader(body))
	if err != nil || !ack.Duplicate {
		t.Fatalf("retry: %+v %v", ack, err)
	}
	env := schemas.HookEvent{}
	if err := json.Unmarshal(getMsg(t, js, 1).Data, &env); err != nil || env.SessionID != "s1" || env.ChannelID != "cli" {
		t.Fatalf("%+v %v", env, err)
	}
	// Kind from the body, agent from the flag, OpenClaw's kind spelling.
	ack, err = producers.PublishFromReader(ctx, pub, "", "main", strings.NewReader(`{"kind":"command:new","event":{},"ctx":{"sessionKey":"k"},"ts":5}`))
	if err != nil || ack.Duplicate {
		t.Fatalf("kind from body: %+v %v", ack, err)
	}
	if m := getMsg(t, js, ack.Seq); m.Subject != "clawmem.events.command_new.main" {
		t.Fatalf("subject %s", m.Subject)
	}
	for name, c := range map[string]struct{ kind, agent, body string }{
		"agent mismatch": {"agent_end", "other", body},
		"kind mismatch":  {"session_end", "", `{"kind":"agent_end","event":{},"ctx":{"agentId":"main"}}`},
		"no kind":        {"", "main", `{"event":{}}`},
		"no agent":       {"agent_end", "", `{"event":{}}`},
		"bad kind flag":  {"nope", "main", `{"event":{}}`},
		"wrong type":     {"agent_end", "main", `{"event":{"success":"yes"}}`},
	} {
		if _, err := producers.PublishFromReader(ctx, pub, c.kind, c.agent, strings.NewReader(c.body)); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	huge := bytes.Repeat([]byte(" "), producers.MaxHookBodyBytes+10)
	if _, err := producers.PublishFromReader(ctx, pub, "agent_end", "main", bytes.NewReader(huge)); !errors.Is(err, producers.ErrTooLarge) {
		t.Errorf("huge: %v", err)
	}
	if n := streamMsgs(t, js); n != 2 {
		t.Fatalf("%d messages, want 2", n)
	}
}
