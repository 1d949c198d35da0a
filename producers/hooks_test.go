package producers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/redact"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// The hook service checks what an agent hands in: the subject's agent and
// kind are the event's, a Msg-Id is kept in the agent's own namespace, the
// reply tells nothing of the stream, and secrets are redacted before the
// event is stored.
func TestHookServiceChecksAndRedacts(t *testing.T) {
	srv, js, _ := setup(t)
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := producers.NewHookService(producers.New(js, producers.WithSecrets(redact.ModeRedact)), nil)
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx, nc) }()

	send := func(agent, envAgent, kind, msgID, body string) (producers.HookReply, string) {
		t.Helper()
		env := `{"v":1,"kind":"` + kind + `","agentId":"` + envAgent + `","sessionKey":"s1","ts":1767225600123,"event":` + body + `}`
		m := nats.NewMsg(schemas.HookSubject(agent, schemas.KindAgentEnd))
		m.Data = []byte(env)
		if msgID != "" {
			m.Header.Set(jetstream.MsgIDHeader, msgID)
		}
		var reply *nats.Msg
		for range 50 {
			if reply, err = nc.RequestMsg(m, 5*time.Second); err != nats.ErrNoResponders {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		var r producers.HookReply
		if err := json.Unmarshal(reply.Data, &r); err != nil {
			t.Fatal(err)
		}
		return r, string(reply.Data)
	}
	turn := `{"success":true,"messages":[{"role":"user","content":"my key is ` + fakeKey + `"}]}`

	r, raw := send("alice", "alice", "agent_end", "agent_end.alice.one", turn)
	if !r.OK || r.Duplicate || strings.Contains(raw, "seq") || strings.Contains(raw, "stream") {
		t.Fatalf("alice's event: %s", raw)
	}
	// bob claims alice's next Msg-Id: his event is his, hers still gets in.
	if r, raw := send("bob", "bob", "agent_end", "agent_end.alice.two", turn); !r.OK || r.Duplicate {
		t.Fatalf("bob's event: %s", raw)
	}
	if r, raw := send("alice", "alice", "agent_end", "agent_end.alice.two", turn); !r.OK || r.Duplicate {
		t.Fatalf("alice's event after bob took its Msg-Id: %s, want stored", raw)
	}
	if r, _ := send("alice", "alice", "agent_end", "agent_end.alice.one", turn); !r.Duplicate {
		t.Fatal("alice's retry is not a duplicate")
	}
	for _, c := range []struct{ agent, envAgent, kind, body, code string }{
		{"bob", "alice", "agent_end", turn, "invalid"},
		{"bob", "bob", "session_end", turn, "invalid"},
		{"bob", "bob", "agent_end", `"not an object"`, "invalid"},
	} {
		if r, raw := send(c.agent, c.envAgent, c.kind, "", c.body); r.OK || r.Code != c.code {
			t.Errorf("%+v: %s, want refused (%s)", c, raw, c.code)
		}
	}

	s, err := js.Stream(context.Background(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 3 {
		t.Fatalf("events stream holds %d events, want 3", info.State.Msgs)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m := getMsg(t, js, seq)
		id := m.Header.Get(jetstream.MsgIDHeader)
		agent := strings.TrimPrefix(m.Subject, schemas.EventsPrefix+".agent_end.")
		if !strings.HasPrefix(id, "agent_end."+agent+".") {
			t.Errorf("%s's event has Msg-Id %q, outside its namespace", agent, id)
		}
		if strings.Contains(string(m.Data), fakeKey) || !strings.Contains(string(m.Data), "[REDACTED:") {
			t.Errorf("stored event %d holds the secret: %s", seq, m.Data)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
