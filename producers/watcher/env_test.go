package watcher_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/schemas"
)

// env is one test's NATS server, state dir, metrics and log.
type env struct {
	t     *testing.T
	js    jetstream.JetStream
	state string
	reg   *prometheus.Registry
	logs  *testkit.Buffer
}

func setup(t *testing.T) *env {
	t.Helper()
	_, _, js := natsembed.StartTest(t)
	return setupOn(t, js)
}

// setupSmall is setup on a server whose messages are limited to NATS's
// default 1 MB, as an external server's are.
func setupSmall(t *testing.T) *env {
	t.Helper()
	s, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), Port: -1, MaxPayload: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	_, js := natsembed.ConnectTest(t, s)
	return setupOn(t, js)
}

func setupOn(t *testing.T, js jetstream.JetStream) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, js: js, state: t.TempDir(), reg: prometheus.NewRegistry(), logs: &testkit.Buffer{}}
}

// watcher makes a Watcher over the env's state dir. A long rescan makes
// fsnotify do the work; tests of the rescan set a short one. regrow, when
// given, is the Config.RegrowWait.
func (e *env) watcher(rescan time.Duration, regrow ...time.Duration) *watcher.Watcher {
	e.t.Helper()
	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := watcher.Config{StateDir: e.state, Rescan: rescan, Registerer: e.reg}
	if len(regrow) > 0 {
		cfg.RegrowWait = regrow[0]
	}
	w, err := watcher.New(cfg, e.js, log)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// run starts w.Run; the returned stop cancels it and waits for it.
func (e *env) run(w *watcher.Watcher) (stop func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					e.t.Errorf("Run: %v", err)
				}
			case <-time.After(10 * time.Second):
				e.t.Error("Run did not return after cancel")
			}
		})
	}
	e.t.Cleanup(stop)
	return stop
}

func (e *env) sync(w *watcher.Watcher) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Sync(ctx); err != nil {
		e.t.Fatalf("Sync: %v", err)
	}
}

func (e *env) streamMsgs() uint64 {
	e.t.Helper()
	return testkit.StreamMsgs(e.t, e.js, schemas.StreamTranscripts)
}

// waitFor polls until the stream holds at least n entries.
func (e *env) waitFor(n int) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.streamMsgs() < uint64(n) {
		if time.Now().After(deadline) {
			e.t.Fatalf("stream has %d entries after 10 s, want %d; log:\n%s", e.streamMsgs(), n, e.logs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// settle waits for n entries, lets w catch up with a Sync, and checks that
// the stream holds exactly want, in order.
func (e *env) settle(w *watcher.Watcher, want []schemas.TranscriptEntry) []entry {
	e.t.Helper()
	e.waitFor(len(want))
	e.sync(w)
	got := e.entries()
	e.check(got, want)
	return got
}

// entry is one message read back from the stream.
type entry struct {
	schemas.TranscriptEntry
	Subject string
	MsgID   string
}

// entries reads the whole TRANSCRIPTS stream with an ordered consumer.
func (e *env) entries() []entry {
	e.t.Helper()
	n := e.streamMsgs()
	if n == 0 {
		return nil
	}
	c, err := e.js.OrderedConsumer(context.Background(), schemas.StreamTranscripts,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{schemas.TranscriptsSubject}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []entry
	for uint64(len(out)) < n {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			e.t.Fatalf("entry %d of %d: %v", len(out)+1, n, err)
		}
		var te schemas.TranscriptEntry
		if err := json.Unmarshal(m.Data(), &te); err != nil {
			e.t.Fatalf("entry %d: %v: %s", len(out)+1, err, m.Data())
		}
		out = append(out, entry{TranscriptEntry: te, Subject: m.Subject(), MsgID: m.Headers().Get(jetstream.MsgIDHeader)})
	}
	return out
}

// check compares the stream with want: the same entries, each file's in
// the order of its lines (files may interleave), every entry on its
// session's subject, and no Msg-Id twice.
func (e *env) check(got []entry, want []schemas.TranscriptEntry) {
	e.t.Helper()
	ids := make(map[string]bool)
	last := make(map[string]int64)
	var gotEntries []schemas.TranscriptEntry
	for i, g := range got {
		gotEntries = append(gotEntries, g.TranscriptEntry)
		if s := schemas.TranscriptSubject(g.AgentID, g.SessionID); g.Subject != s {
			e.t.Errorf("entry %d: subject %q, want %q", i, g.Subject, s)
		}
		if !strings.HasPrefix(g.MsgID, "transcript."+g.AgentID+".") || ids[g.MsgID] {
			e.t.Errorf("entry %d: Msg-Id %q missing, malformed or repeated", i, g.MsgID)
		}
		ids[g.MsgID] = true
		file := g.AgentID + "/" + g.File + "/" + fileIDOf(g.MsgID)
		if off, ok := last[file]; ok && g.Offset <= off {
			e.t.Errorf("entry %d: offset %d of %s after %d", i, g.Offset, g.File, off)
		}
		last[file] = g.Offset
	}
	key := func(a, b schemas.TranscriptEntry) int {
		return cmp.Or(strings.Compare(a.AgentID, b.AgentID), strings.Compare(a.File, b.File),
			cmp.Compare(a.Offset, b.Offset), strings.Compare(a.EntryID, b.EntryID))
	}
	want = slices.SortedStableFunc(slices.Values(want), key)
	slices.SortStableFunc(gotEntries, key)
	if !slices.Equal(gotEntries, want) {
		e.t.Errorf("stream holds %d entries:\n%s\nwant %d:\n%s", len(gotEntries), dump(gotEntries), len(want), dump(want))
	}
}

func dump(entries []schemas.TranscriptEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "  %+v\n", e)
	}
	return b.String()
}

// counter reads a watcher metric.
func (e *env) counter(name, label, value string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// transcript is a session file being written, as OpenClaw appends to it.
type transcript struct {
	t     *testing.T
	agent string
	path  string
	size  int64
}

// newTranscript starts <state>/agents/<agent>/sessions/<name>, empty.
func (e *env) newTranscript(agent, name string) *transcript {
	e.t.Helper()
	dir := filepath.Join(e.state, "agents", agent, "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	tr := &transcript{t: e.t, agent: agent, path: filepath.Join(dir, name)}
	if err := os.WriteFile(tr.path, nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return tr
}

// write appends s and returns the offset it starts at.
func (tr *transcript) write(s string) int64 {
	tr.t.Helper()
	f, err := os.OpenFile(tr.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tr.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		tr.t.Fatal(err)
	}
	off := tr.size
	tr.size += int64(len(s))
	return off
}

// rename moves the file, as OpenClaw does on /new.
func (tr *transcript) rename(name string) {
	tr.t.Helper()
	to := filepath.Join(filepath.Dir(tr.path), name)
	if err := os.Rename(tr.path, to); err != nil {
		tr.t.Fatal(err)
	}
	tr.path = to
}

// truncate empties the file.
func (tr *transcript) truncate() {
	tr.t.Helper()
	if err := os.Truncate(tr.path, 0); err != nil {
		tr.t.Fatal(err)
	}
	tr.size = 0
}

// message appends a message line and returns the entry it must become.
func (tr *transcript) message(session, role, id, text string) schemas.TranscriptEntry {
	tr.t.Helper()
	ts := int64(1767348000000) + tr.size
	off := tr.write(messageLine(role, id, text, ts))
	return schemas.TranscriptEntry{V: 1, AgentID: tr.agent, SessionID: session, File: filepath.Base(tr.path),
		Offset: off, EntryID: id, Role: role, Text: text, Timestamp: ts}
}

func header(session string) string {
	return jsonLine(map[string]any{"type": "session", "version": 3, "id": session,
		"timestamp": "2026-01-02T10:00:00.000Z", "cwd": "/home/u/project"})
}

// messageLine is an OpenClaw message entry: user content as a string,
// assistant content as blocks with thinking and a tool call around the text.
func messageLine(role, id, text string, ts int64) string {
	var content any = text
	if role == "assistant" {
		content = []any{
			map[string]any{"type": "thinking", "thinking": "let me think"},
			map[string]any{"type": "text", "text": text},
			map[string]any{"type": "toolCall", "id": "c1", "name": "read", "arguments": map[string]any{"path": "x"}},
		}
	}
	return jsonLine(map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-01-02T10:00:00.000Z",
		"message": map[string]any{"role": role, "content": content, "timestamp": ts}})
}

func toolResultLine(id string) string {
	return jsonLine(map[string]any{"type": "message", "id": id, "timestamp": "2026-01-02T10:00:00.000Z",
		"message": map[string]any{"role": "toolResult", "toolCallId": "c1", "toolName": "read",
			"content": []any{map[string]any{"type": "text", "text": "file contents"}}, "isError": false}})
}

func jsonLine(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}
