package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsauth"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// hookRequest hands in one agent_end event as an agent does: a request to
// clawmem.hooks.v1.<agent>.agent_end with the envelope and a Msg-Id.
func hookRequest(nc *nats.Conn, agent, envAgent, session, msgID, text string) (producers.HookReply, error) {
	env := map[string]any{"v": schemas.Version, "kind": "agent_end", "agentId": envAgent, "sessionKey": session, "runId": "r1",
		"ts": time.Now().UnixMilli(), "event": map[string]any{"success": true,
			"messages": []map[string]any{{"role": "user", "content": text}}}}
	body, _ := json.Marshal(env)
	m := nats.NewMsg(schemas.HookSubject(agent, schemas.KindAgentEnd))
	m.Data = body
	if msgID != "" {
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	// After `agent add` restarted the server, clawmem's own connection
	// comes back a moment after the agent's: ask again meanwhile.
	var reply *nats.Msg
	var err error
	for range 50 {
		if reply, err = nc.RequestMsg(m, 10*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		return producers.HookReply{}, err
	}
	var r producers.HookReply
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return r, fmt.Errorf("hook reply %q: %w", reply.Data, err)
	}
	if strings.Contains(string(reply.Data), "seq") || strings.Contains(string(reply.Data), "stream") {
		return r, fmt.Errorf("hook reply %s reveals the stream", reply.Data)
	}
	return r, nil
}

// TestAgentsOnTheEmbeddedServer probes a real `clawmem up` as a local
// process and as two agents with their own credentials (alice and
// mallory): nobody without credentials gets in, mallory reaches none of
// alice's subjects or clawmem's internals, and mallory cannot suppress
// alice's event by handing in one with alice's Msg-Id first.
func TestAgentsOnTheEmbeddedServer(t *testing.T) {
	dir := t.TempDir()
	in := startUp(t, dir)
	url := in.info.NATSURL

	// Any local process without the data dir's seeds is refused.
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("an anonymous client connected to the embedded server")
	}

	for _, agent := range []string{"alice", "mallory"} {
		if code, out, errOut := runCLI(t, "agent", "add", agent, "--data-dir", dir, "--json"); code != 0 {
			t.Fatalf("agent add %s: %s %s", agent, out, errOut)
		}
	}
	connect := func(agent string) (*nats.Conn, chan error) {
		errs := make(chan error, 64)
		opt, err := natsauth.ClientOption(natsauth.AgentSeed(dir, agent))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, opt, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
		if err != nil {
			t.Fatalf("connect as %s: %v", agent, err)
		}
		t.Cleanup(nc.Close)
		return nc, errs
	}
	alice, _ := connect("alice")
	mallory, malErrs := connect("mallory")

	// Mallory guesses alice's next Msg-Id and hands in her own event with it.
	aliceID := "agent_end.alice.0123456789abcdef0123456789abcdef"
	r, err := hookRequest(mallory, "mallory", "mallory", "m-session", aliceID, "I prefer to download all tools from evil.example")
	if err != nil || !r.OK {
		t.Fatalf("mallory's own event: %+v %v", r, err)
	}
	// Claiming to be alice in the envelope is refused.
	r, err = hookRequest(mallory, "mallory", "alice", "a-session", "", "I prefer tea from evil.example")
	if err != nil || r.OK || r.Code != "invalid" {
		t.Fatalf("mallory's envelope naming alice: %+v %v, want refused as invalid", r, err)
	}
	// Alice's real event with that id is stored, not taken for a duplicate.
	r, err = hookRequest(alice, "alice", "alice", "a-session", aliceID, "Remember that my dog is called Rex")
	if err != nil || !r.OK || r.Duplicate {
		t.Fatalf("alice's event after mallory's: %+v %v, want stored", r, err)
	}
	// A retry of alice's own event is a duplicate, as before.
	r, err = hookRequest(alice, "alice", "alice", "a-session", aliceID, "Remember that my dog is called Rex")
	if err != nil || !r.Duplicate {
		t.Fatalf("alice's retry: %+v %v, want a duplicate", r, err)
	}

	// Alice recalls her memory; mallory's requests for alice's subjects,
	// the admin operations, the streams and raw subscriptions are refused.
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, err := alice.Request(schemas.ServiceSubject("alice", schemas.OpRecall), []byte(`{"query":"dog name"}`), 5*time.Second)
		if err == nil && strings.Contains(string(m.Data), "Rex") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice never recalled her memory: %v\n%s", err, in.logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, subj := range []string{
		schemas.ServiceSubject("alice", schemas.OpRecall),
		schemas.ServiceSubject("alice", schemas.OpForget),
		schemas.AdminSubject("export"),
		schemas.AdminSubject("delete-bulk"),
		schemas.HookSubject("alice", schemas.KindAgentEnd),
		schemas.EventSubject(schemas.KindAgentEnd, "alice"),
		schemas.EventSubject(schemas.KindAgentEnd, "mallory"),
		"$JS.API.INFO",
		"$JS.API.STREAM.MSG.GET." + schemas.StreamEvents,
	} {
		if _, err := mallory.Request(subj, []byte(`{"query":"dog","memoryId":"x"}`), 500*time.Millisecond); err == nil {
			t.Errorf("mallory got an answer on %s", subj)
		}
	}
	for _, subj := range []string{">", "clawmem.>", "_INBOX.>", "$JS.>"} {
		sub, err := mallory.SubscribeSync(subj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Request(schemas.ServiceSubject("alice", schemas.OpRecall), []byte(`{"query":"dog name"}`), 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if m, err := sub.NextMsg(300 * time.Millisecond); err == nil {
			t.Errorf("mallory's subscription %s saw %s: %q", subj, m.Subject, m.Data)
		}
		_ = sub.Unsubscribe()
	}
	select {
	case err := <-malErrs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("mallory's async error: %v", err)
		}
	default:
		t.Error("no permissions violation reported to mallory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if js, err := jetstream.New(mallory); err == nil {
		if _, err := js.Stream(ctx, schemas.StreamEvents); err == nil {
			t.Error("mallory reached the events stream")
		}
	}
	// Removing mallory's credentials shuts her out.
	if code, out, errOut := runCLI(t, "agent", "remove", "mallory", "--data-dir", dir); code != 0 {
		t.Fatalf("agent remove: %s %s", out, errOut)
	}
	if code, out, _ := runCLI(t, "agent", "list", "--data-dir", dir); code != 0 || strings.Contains(out, "mallory") || !strings.Contains(out, "alice") {
		t.Fatalf("agent list after removal: %s", out)
	}
}
