package query

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// memory_stats tells an agent how many of its own events and transcript
// entries are dead letters (OpenClaw's Memory status shows it), never
// another agent's; and whether queries are being embedded.
func TestStatsHealth(t *testing.T) {
	nc, _ := queryStart(t, queryTestEngine(t, nil), Config{EnableAdmin: true})
	ctx := context.Background()
	asked := queryAsk(t, nc, querySubj("main", "stats"), nil)
	if _, d := queryOKReply[schemas.StatsDetails](t, nc, querySubj("main", "stats"), nil); d.DeadLetters == nil || *d.DeadLetters != 0 || !d.EmbedderOK || asked.IsError {
		t.Fatalf("stats without a dead-letter stream: %s", asked.Details)
	}
	if _, d := queryOKReply[schemas.StatsDetails](t, nc, querySubj("main", "stats"), nil); d.LastMemoryAt != 0 {
		t.Fatalf("lastMemoryAt %d with no memory", d.LastMemoryAt)
	}
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "I keep my bike in the shed behind the house"})
	if _, d := queryOKReply[schemas.StatsDetails](t, nc, querySubj("main", "stats"), nil); d.LastMemoryAt == 0 {
		t.Fatal("lastMemoryAt not set after a store")
	}
	if _, d := queryOKReply[schemas.StatsDetails](t, nc, querySubj("bob", "stats"), nil); d.LastMemoryAt != 0 {
		t.Fatalf("bob sees main's last memory: %d", d.LastMemoryAt)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: schemas.StreamDLQ, Subjects: []string{schemas.DLQSubject}}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{
		schemas.DLQSubjectFor("capture", schemas.EventSubject(schemas.KindAgentEnd, "main")),
		schemas.DLQSubjectFor("distill", schemas.EventSubject(schemas.KindBeforeReset, "main")),
		schemas.DLQSubjectFor("capture", schemas.TranscriptSubject("main", "s-1")),
		schemas.DLQSubjectFor("capture", schemas.EventSubject(schemas.KindAgentEnd, "bob")),
		schemas.DLQSubjectFor("capture", schemas.EventSubject(schemas.KindAgentEnd, "mainly")),
		schemas.DLQSubjectFor("store", schemas.WorkCandidates+".3"),
	} {
		if _, err := js.Publish(ctx, subj, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	r, d := queryOKReply[schemas.StatsDetails](t, nc, querySubj("main", "stats"), nil)
	if d.DeadLetters == nil || *d.DeadLetters != 3 {
		t.Fatalf("main's dead letters: %v (%s)", d.DeadLetters, r.Details)
	}
	if !strings.Contains(r.text(), "Dead letters: 3 ") {
		t.Fatalf("stats text %q", r.text())
	}
	if _, d = queryOKReply[schemas.StatsDetails](t, nc, querySubj("bob", "stats"), nil); d.DeadLetters == nil || *d.DeadLetters != 1 {
		t.Fatalf("bob's dead letters: %v", d.DeadLetters)
	}
	if _, d = queryOKReply[schemas.StatsDetails](t, nc, schemas.AdminSubject("stats"), nil); d.DeadLetters != nil {
		t.Fatalf("admin stats count dead letters of no agent: %v", *d.DeadLetters)
	}
}
