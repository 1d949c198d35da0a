package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/capture"
	"github.com/clawmem/clawmem/workers/stage"
	"github.com/clawmem/clawmem/workers/store"
)

// dlqPipeline runs the real capture and store stages on an embedded NATS
// and returns its URL, JetStream and the engine.
func dlqPipeline(t *testing.T) (string, jetstream.JetStream, *memory.Engine) {
	t.Helper()
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	eng, st, err := storeopen.Engine(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	m := stage.NewMetrics(nil)
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{
		capture.New(js, eng.Embedder(), capture.Config{}, m, log).Run,
		store.New(js, eng, stage.Config{}, m, nil, log).Run,
	} {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait(); st.Close() })
	return srv.ClientURL(), js, eng
}

func agentEndBody(session, text string) []byte {
	content, _ := json.Marshal(text)
	ev, _ := json.Marshal(schemas.AgentEndEvent{Success: true, Messages: []schemas.Message{{Role: "user", Content: content}}})
	b, _ := json.Marshal(schemas.HookEvent{V: schemas.Version, Kind: schemas.KindAgentEnd, SessionKey: session,
		Timestamp: time.Now().UnixMilli(), Event: ev})
	return b
}

func dlqList(t *testing.T, url string, extra ...string) []client.DeadLetter {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"dlq", "list", "--nats-url", url, "--data-dir", t.TempDir(), "--json"}, extra...)...)
	var entries []client.DeadLetter
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil {
		t.Fatalf("dlq list: %d %s %s", code, out, errOut)
	}
	return entries
}

func TestDLQCommands(t *testing.T) {
	url, js, eng := dlqPipeline(t)
	ctx := context.Background()
	dd := t.TempDir()
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, append(args, "--nats-url", url, "--data-dir", dd)...)
	}
	if code, out, _ := run("dlq", "list"); code != 0 || !strings.Contains(out, "no dead letters") {
		t.Fatalf("empty list: %d %s", code, out)
	}

	// Dead-lettered by the real stages: malformed at once.
	if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), []byte(`{not json`)); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, schemas.WorkItemSubject(schemas.WorkCandidates, "main", schemas.DefaultPartitions), []byte(`{"v":99}`)); err != nil {
		t.Fatal(err)
	}
	// And one as a stage writes it, of a good event that failed for a
	// reason since fixed (say the embedder was down).
	good := agentEndBody("s-replay", "Remember that my dog is called Rex")
	h := nats.Header{}
	h.Set(schemas.HeaderDLQStage, "capture")
	h.Set(schemas.HeaderDLQReason, "embed: 503 Service Unavailable")
	h.Set(schemas.HeaderDLQAttempts, "5")
	h.Set(schemas.HeaderDLQSubject, schemas.EventSubject(schemas.KindAgentEnd, "main"))
	h.Set(schemas.HeaderDLQTime, "2026-03-01T10:00:00Z")
	h.Set("Trace-Id", "t-1")
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: schemas.DLQSubjectFor("capture", schemas.EventSubject(schemas.KindAgentEnd, "main")), Header: h, Data: good}); err != nil {
		t.Fatal(err)
	}
	var entries []client.DeadLetter
	waitUntil(t, 10*time.Second, func() error {
		if entries = dlqList(t, url); len(entries) != 3 {
			return fmt.Errorf("%d dead letters", len(entries))
		}
		return nil
	})
	byStage := map[string][]client.DeadLetter{}
	for _, e := range entries {
		byStage[e.Stage] = append(byStage[e.Stage], e)
	}
	store := byStage["store"]
	if len(store) != 1 || store[0].Subject != schemas.WorkItemSubject(schemas.WorkCandidates, "main", schemas.DefaultPartitions) || store[0].Attempts != 1 ||
		!strings.Contains(store[0].Reason, "version 99") || store[0].Stream != schemas.StreamWork || store[0].Time.IsZero() {
		t.Fatalf("store dead letter: %+v", store)
	}
	capture := byStage["capture"]
	if len(capture) != 2 {
		t.Fatalf("capture dead letters: %+v", capture)
	}
	manual := capture[slices.IndexFunc(capture, func(e client.DeadLetter) bool { return e.Attempts == 5 })]
	if manual.Reason != "embed: 503 Service Unavailable" || !manual.Time.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("manual dead letter: %+v", manual)
	}
	if got := dlqList(t, url, "--stage", "capture"); len(got) != 2 {
		t.Fatalf("--stage capture: %+v", got)
	}
	code, out, _ := run("dlq", "list")
	if code != 0 || !strings.Contains(out, "SEQ") || !strings.Contains(out, "version 99") || !strings.Contains(out, "embed: 503") {
		t.Fatalf("list: %s", out)
	}

	seq := strconv.FormatUint(manual.Seq, 10)
	code, out, _ = run("dlq", "show", seq)
	if code != 0 || !strings.Contains(out, "Trace-Id: t-1") || !strings.Contains(out, "my dog is called Rex") || !strings.Contains(out, "attempts: 5") {
		t.Fatalf("show: %s", out)
	}
	code, out, _ = run("dlq", "show", seq, "--json")
	var shown struct {
		Stage   string
		Headers map[string][]string
		Body    schemas.HookEvent
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Stage != "capture" || shown.Body.SessionKey != "s-replay" {
		t.Fatalf("show --json: %s", out)
	}
	if code, _, errOut := run("dlq", "show", "999999"); code != 1 || !strings.Contains(errOut, "no dead letter with sequence 999999") {
		t.Fatalf("show missing: %d %s", code, errOut)
	}

	// Replay: the fixed event is captured and stored; the DLQ copy is gone.
	code, out, _ = run("dlq", "replay", seq, "--json")
	var replay struct {
		Replayed, Failed int
		Results          []client.ReplayResult
	}
	if code != 0 || json.Unmarshal([]byte(out), &replay) != nil || replay.Replayed != 1 || replay.Results[0].Stream != schemas.StreamEvents {
		t.Fatalf("replay: %d %s", code, out)
	}
	events, _ := js.Stream(ctx, schemas.StreamEvents)
	copied, err := events.GetMsg(ctx, replay.Results[0].StreamSeq)
	if err != nil {
		t.Fatal(err)
	}
	if copied.Header.Get(schemas.HeaderDLQStage) != "" || copied.Header.Get("Trace-Id") != "t-1" ||
		!strings.HasPrefix(copied.Header.Get(jetstream.MsgIDHeader), "dlq-replay-"+seq+"-") {
		t.Fatalf("replayed headers: %v", copied.Header)
	}
	waitUntil(t, 10*time.Second, func() error {
		ms, err := eng.List(ctx, memory.Admin(), memory.ListOptions{Limit: 10})
		if err != nil || len(ms) != 1 || !strings.Contains(ms[0].Text, "Rex") {
			return fmt.Errorf("stored %v %v", ms, err)
		}
		return nil
	})
	if code, _, errOut := run("dlq", "show", seq); code != 1 || !strings.Contains(errOut, "no dead letter") {
		t.Fatalf("replayed dead letter still there: %d %s", code, errOut)
	}

	// Replaying the poison sends it through the store stage again, which
	// dead-letters it anew under a new sequence.
	code, out, _ = run("dlq", "replay", "--all", "--stage", "store")
	if code != 0 || !strings.Contains(out, "1 replayed, 0 failed") {
		t.Fatalf("replay --all: %d %s", code, out)
	}
	waitUntil(t, 10*time.Second, func() error {
		got := dlqList(t, url, "--stage", "store")
		if len(got) != 1 || got[0].Seq == store[0].Seq {
			return fmt.Errorf("store dead letters %+v", got)
		}
		return nil
	})
	poison := capture[slices.IndexFunc(capture, func(e client.DeadLetter) bool { return e.Attempts == 1 })]
	if code, out, _ := run("dlq", "replay", strconv.FormatUint(poison.Seq, 10), "--stage", "store"); code != 1 ||
		!strings.Contains(out, "not from stage store") || !strings.Contains(out, "0 replayed, 1 failed") {
		t.Fatalf("replay of another stage's letter: %d %s", code, out)
	}

	// Purge asks for --yes, then empties one stage, then the rest.
	if code, _, errOut := run("dlq", "purge", "--stage", "capture"); code != 1 || !strings.Contains(errOut, "deletes 1 dead letters of stage capture") {
		t.Fatalf("purge without --yes: %d %s", code, errOut)
	}
	code, out, _ = run("dlq", "purge", "--stage", "capture", "--yes", "--json")
	var purged struct{ Purged int }
	if code != 0 || json.Unmarshal([]byte(out), &purged) != nil || purged.Purged != 1 {
		t.Fatalf("purge capture: %d %s", code, out)
	}
	if got := dlqList(t, url); len(got) != 1 || got[0].Stage != "store" {
		t.Fatalf("after purging capture: %+v", got)
	}
	if code, out, _ := run("dlq", "purge", "--yes"); code != 0 || !strings.Contains(out, "purged 1 dead letters") {
		t.Fatalf("purge all: %d %s", code, out)
	}
	if got := dlqList(t, url); len(got) != 0 {
		t.Fatalf("after purge: %+v", got)
	}
	for _, args := range [][]string{{"dlq", "list", "--stage", "a.b"}, {"dlq", "replay"}, {"dlq", "replay", "1", "--all"}, {"dlq", "show", "x"}} {
		if code, _, _ := run(args...); code != 1 {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
}

// With no clawmem running, the dlq and distill commands read the data
// dir's NATS store in process; a named NATS that is down is said so.
func TestDLQAndDistillOnAStoppedDataDir(t *testing.T) {
	dd := t.TempDir()
	writeConfig(t, dd, "")
	srv, err := natsembed.Start(natsembed.Options{StoreDir: filepath.Join(dd, "nats"), Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	subject := schemas.EventSubject(schemas.KindAgentEnd, "main")
	h := nats.Header{}
	h.Set(schemas.HeaderDLQStage, "capture")
	h.Set(schemas.HeaderDLQReason, "malformed")
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: schemas.DLQSubjectFor("capture", subject), Header: h, Data: []byte(`{not json`)}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	srv.Stop()

	code, out, errOut := runCLI(t, "dlq", "list", "--data-dir", dd, "--json")
	var entries []client.DeadLetter
	if code != 0 || json.Unmarshal([]byte(out), &entries) != nil || len(entries) != 1 || entries[0].Subject != subject || entries[0].Reason != "malformed" {
		t.Fatalf("dlq list on a stopped data dir: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "distill", "status", "--data-dir", dd); code != 0 || !strings.Contains(out, "no distillation jobs") {
		t.Fatalf("distill status on a stopped data dir: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "dlq", "list", "--data-dir", dd, "--nats-url", "nats://127.0.0.1:1"); code != 1 ||
		!strings.Contains(errOut, "connect to NATS at nats://127.0.0.1:1") {
		t.Fatalf("dlq list against a NATS that is down: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "dlq", "list", "--data-dir", t.TempDir()); code != 1 || !strings.Contains(errOut, "never ran here") {
		t.Fatalf("dlq list where clawmem never ran: %d %s", code, errOut)
	}
}
