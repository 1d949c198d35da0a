package producers_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

func TestParseHookBody(t *testing.T) {
	hb, err := producers.ParseHookBodyFor([]byte(`{"event":{"messages":[],"success":true},`+
		`"ctx":{"agentId":"main","sessionKey":"agent:main:main","sessionId":"s","runId":"r","channelId":"c","workspaceDir":"/w"},`+
		`"msgId":"m-1","kind":"agent_end","ts":12}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := producers.Meta{SessionKey: "agent:main:main", SessionID: "s", RunID: "r", ChannelID: "c", MsgID: "m-1", Timestamp: 12}
	if hb.Agent != "main" || hb.Kind != schemas.KindAgentEnd || hb.Meta != want || string(hb.Event) != `{"messages":[],"success":true}` {
		t.Fatalf("%+v", hb)
	}
	// The agent may come from the request when ctx has none.
	hb, err = producers.ParseHookBodyFor([]byte(`{"event":{}}`), "cli-agent")
	if err != nil || hb.Agent != "cli-agent" || hb.Kind != "" {
		t.Fatalf("%+v %v", hb, err)
	}
	// Both set and equal is fine.
	if _, err := producers.ParseHookBodyFor([]byte(`{"event":{},"ctx":{"agentId":"a"}}`), "a"); err != nil {
		t.Fatal(err)
	}

	bad := []struct{ body, agent, say string }{
		{`{"event":{}`, "", "malformed JSON"},
		{`[]`, "", "JSON object"},
		{`"x"`, "", "JSON object"},
		{``, "", "body is empty"},
		{`{"event":{},"ctx":{"agentId":"main"}} x`, "", "malformed JSON"},
		{`{"ctx":{"agentId":"main"}}`, "", `needs "event"`},
		{`{"event":[1],"ctx":{"agentId":"main"}}`, "", `needs "event"`},
		{`{"event":null,"ctx":{"agentId":"main"}}`, "", `needs "event"`},
		{`{"event":{},"ctx":{"agentId":7}}`, "", "body.ctx.agentId: want string, got number"},
		{`{"event":{},"ctx":"main"}`, "", "body.ctx: want object, got string"},
		{`{"event":{},"ctx":{"agentId":"main"},"ts":"now"}`, "", "body.ts: want integer, got string"},
		{`{"event":{},"ctx":{"agentId":"main"},"kind":"nope"}`, "", "unknown event kind"},
		{`{"event":{},"ctx":{"agentId":"main"},"msgId":"a b"}`, "", "msgId"},
		{`{"event":{}}`, "", "no agent id"},
		{`{"event":{},"ctx":{"agentId":""}}`, "", "no agent id"},
		{`{"event":{},"ctx":{"agentId":"a.b"}}`, "", "agent id"},
		{`{"event":{},"ctx":{"agentId":"*"}}`, "", "agent id"},
		{`{"event":{},"ctx":{"agentId":">"}}`, "", "agent id"},
		{`{"event":{},"ctx":{"agentId":"../x"}}`, "", "agent id"},
		{`{"event":{}}`, "a.b", "agent id"},
		{`{"event":{},"ctx":{"agentId":"main"}}`, "other", "disagrees"},
		{"{\"event\":{\"prompt\":\"\xc3\x28\"},\"ctx\":{\"agentId\":\"main\"}}", "", "UTF-8"},
	}
	for _, c := range bad {
		_, err := producers.ParseHookBodyFor([]byte(c.body), c.agent)
		if !errors.Is(err, schemas.ErrInvalid) || !strings.Contains(err.Error(), c.say) {
			t.Errorf("%q (agent %q): got %v, want an error saying %q", c.body, c.agent, err, c.say)
		}
	}
	huge := `{"event":{"prompt":"` + strings.Repeat("x", schemas.MaxEventBytes) + `"},"ctx":{"agentId":"main"}}`
	if _, err := producers.ParseHookBodyFor([]byte(huge), ""); !errors.Is(err, producers.ErrTooLarge) {
		t.Errorf("huge event: %v", err)
	}
}

func FuzzParseHookBody(f *testing.F) {
	for _, s := range []string{
		`{"event":{"messages":[{"role":"user","content":"hi"}],"success":true},"ctx":{"agentId":"main","sessionKey":"k","runId":"r"}}`,
		`{"event":{},"ctx":{"agentId":"a.b"}}`,
		`{"event":{"prompt":"x"},"ctx":{"agentId":"main"},"kind":"before_prompt_build","ts":1}`,
		`{"event":[],"ctx":{}}`,
		`{"event":{},"ctx":{"agentId":"main"},"msgId":"x"}`,
		`{"kind":"command:new","event":{"a":{"b":[1,2,{"c":null}]}},"ctx":{"agentId":"x-1"}}`,
		`{"event":{}}`,
		`null`,
		"{\"event\":{\"p\":\"\xff\"},\"ctx\":{\"agentId\":\"m\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		hb, err := producers.ParseHookBodyFor(body, "")
		if err != nil {
			if !errors.Is(err, schemas.ErrInvalid) && !errors.Is(err, producers.ErrTooLarge) {
				t.Fatalf("error of no known class: %v", err)
			}
			return
		}
		if err := schemas.ValidateAgentID(hb.Agent); err != nil {
			t.Fatalf("accepted agent %q: %v", hb.Agent, err)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(hb.Event, &obj); err != nil || obj == nil {
			t.Fatalf("accepted event %q is not a JSON object: %v", hb.Event, err)
		}
		if hb.Kind != "" && !hb.Kind.Valid() {
			t.Fatalf("accepted kind %q", hb.Kind)
		}
		// Whatever the kind, validation must not panic either.
		for _, k := range schemas.EventKinds {
			_, _ = producers.ValidateEvent(k, hb.Event)
		}
	})
}
