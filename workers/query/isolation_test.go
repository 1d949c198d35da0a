package query

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

func TestQueryAgentIsolation(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	secret := "The vault recovery phrase is kept in the blue notebook"
	_, sd := queryOKReply[schemas.StoreDetails](t, nc, querySubj("alice", "store"), schemas.StoreRequest{Text: secret, Importance: queryPtr(0.8)})
	id := sd.ID
	if sd.Scope != "agent:alice" {
		t.Fatalf("alice's memory went to %s", sd.Scope)
	}
	b := func(op string) string { return querySubj("bob", op) }

	r, rd := queryOKReply[schemas.RecallDetails](t, nc, b("recall"), schemas.RecallRequest{Query: secret})
	if rd.Count != 0 || strings.Contains(r.text(), "vault") {
		t.Fatalf("bob recalled alice's memory: %q", r.text())
	}
	_, cd := queryOKReply[schemas.ContextDetails](t, nc, b("context"), schemas.ContextRequest{Prompt: "Where is the vault recovery phrase kept?"})
	if cd.Count != 0 || strings.Contains(cd.PrependContext, "vault") {
		t.Fatalf("bob's context holds alice's memory: %+v", cd)
	}
	_, ld := queryOKReply[schemas.ListDetails](t, nc, b("list"), nil)
	_, st := queryOKReply[memory.Stats](t, nc, b("stats"), nil)
	if ld.Count != 0 || st.Total != 0 {
		t.Fatalf("bob lists %d, counts %d of alice's memories", ld.Count, st.Total)
	}
	scoped := map[string]any{
		"recall": schemas.RecallRequest{Query: secret, Scope: "agent:alice"},
		"list":   schemas.ListRequest{Scope: "agent:alice"},
		"stats":  schemas.StatsRequest{Scope: "agent:alice"},
		"store":  schemas.StoreRequest{Text: "Alice now keeps the phrase in the red notebook", Scope: "agent:alice"},
		"forget": schemas.ForgetRequest{MemoryID: id, Scope: "agent:alice"},
		"update": schemas.UpdateRequest{MemoryID: id, Importance: queryPtr(0.1), Scope: "agent:alice"},
	}
	for op, body := range scoped {
		queryWantError(t, nc, b(op), body, schemas.CodeDenied)
	}
	newText := "The vault recovery phrase is gone"
	for _, key := range []string{id, id[:8], strings.ToUpper(id[:13])} {
		queryWantError(t, nc, b("forget"), schemas.ForgetRequest{MemoryID: key}, schemas.CodeNotFound)
		queryWantError(t, nc, b("update"), schemas.UpdateRequest{MemoryID: key, Text: &newText}, schemas.CodeNotFound)
		queryWantError(t, nc, b("update"), schemas.UpdateRequest{MemoryID: key, Importance: queryPtr(0.1)}, schemas.CodeNotFound)
	}
	_, fd := queryOKReply[schemas.ForgetDetails](t, nc, b("forget"), schemas.ForgetRequest{Query: secret})
	_, ud := queryOKReply[schemas.UpdateDetails](t, nc, b("update"), schemas.UpdateRequest{MemoryID: secret, Text: &newText})
	if fd.Action != "candidates" || len(fd.Candidates) != 0 || ud.Action != "candidates" || len(ud.Candidates) != 0 {
		t.Fatalf("bob's queries reached alice's memory: forget %+v, update %+v", fd, ud)
	}
	// Dedup must not reveal alice's memory either: bob's copy is his own.
	_, sd = queryOKReply[schemas.StoreDetails](t, nc, b("store"), schemas.StoreRequest{Text: secret})
	if sd.Action != "created" || sd.ID == id || sd.Scope != "agent:bob" {
		t.Fatalf("bob's store of the same text: %+v", sd)
	}

	m, err := eng.Backend().Get(context.Background(), id, engine.AllScopes())
	if err != nil || m.Text != secret || m.Importance != 0.8 || m.Scope != "agent:alice" {
		t.Fatalf("alice's memory after bob's attempts: %+v, %v", m, err)
	}
	_, ld = queryOKReply[schemas.ListDetails](t, nc, schemas.AdminSubject("list"), schemas.ListRequest{Scope: "agent:alice"})
	if ld.Count != 1 || ld.Memories[0].ID != id || ld.Memories[0].Text != secret {
		t.Fatalf("admin list of agent:alice: %+v", ld)
	}
	_, rd = queryOKReply[schemas.RecallDetails](t, nc, querySubj("alice", "recall"), schemas.RecallRequest{Query: secret})
	if rd.Count != 1 || rd.Memories[0].ID != id {
		t.Fatalf("alice no longer recalls her memory: %+v", rd)
	}
}

func queryPtr[T any](v T) *T { return &v }

// TestQuerySubjectDecidesTheAgent: an agentId in the payload is ignored.
func TestQuerySubjectDecidesTheAgent(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	secret := "The vault recovery phrase is kept in the blue notebook"
	_, sd := queryOKReply[schemas.StoreDetails](t, nc, querySubj("alice", "store"), schemas.StoreRequest{Text: secret})

	_, rd := queryOKReply[schemas.RecallDetails](t, nc, querySubj("bob", "recall"), map[string]any{"query": secret, "agentId": "alice"})
	if rd.Count != 0 {
		t.Fatalf("bob, claiming to be alice, recalled %+v", rd.Memories)
	}
	queryWantError(t, nc, querySubj("bob", "forget"), map[string]any{"memoryId": sd.ID, "agentId": "alice"}, schemas.CodeNotFound)
	_, sd2 := queryOKReply[schemas.StoreDetails](t, nc, querySubj("bob", "store"),
		map[string]any{"text": "Bob's standup is at nine every morning", "agentId": "alice"})
	if sd2.Scope != "agent:bob" {
		t.Fatalf("payload agentId moved bob's memory to %s", sd2.Scope)
	}
	if _, err := eng.Backend().Get(context.Background(), sd.ID, engine.AllScopes()); err != nil {
		t.Fatalf("alice's memory: %v", err)
	}
}

func TestQueryAgentTokens(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	queryOKReply[schemas.RecallDetails](t, nc, "clawmem.v1.a-b.recall", schemas.RecallRequest{Query: "tea"})
	queryOKReply[schemas.RecallDetails](t, nc, "clawmem.v1.A_1.recall", schemas.RecallRequest{Query: "tea"})
	for _, agent := range []string{"bad$id", "a:b", "ä", "a+b", strings.Repeat("x", schemas.MaxAgentIDLen+1)} {
		for _, op := range []string{"recall", "store", "stats"} {
			body := map[string]string{"recall": `{"query":"tea"}`, "store": `{"text":"I prefer green tea over coffee"}`, "stats": ""}[op]
			d := queryWantError(t, nc, querySubj(agent, op), body, schemas.CodeInvalid)
			if !strings.Contains(d.Error, "agent id") {
				t.Errorf("%s/%s: %q does not blame the agent id", agent, op, d.Error)
			}
		}
	}
	// Subjects the endpoints do not match find no responder at all.
	for _, subj := range []string{"clawmem.v1.a.b.recall", "clawmem.v1.recall", "clawmem.v1.a.nosuchop"} {
		if _, err := nc.Request(subj, []byte(`{"query":"tea"}`), time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("%s: err %v, want no responders", subj, err)
		}
	}
	_, st := queryOKReply[memory.Stats](t, nc, schemas.AdminSubject("stats"), nil)
	if st.Total != 0 {
		t.Fatalf("%d memories stored through invalid agents", st.Total)
	}
}
