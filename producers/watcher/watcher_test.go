package watcher_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/schemas"
)

func TestFollowsAppendsAndPartialLines(t *testing.T) {
	e := setup(t)
	tr := e.newTranscript("main", "sess-1.jsonl")
	tr.write(header("sess-1"))
	want := []schemas.TranscriptEntry{
		tr.message("sess-1", "user", "a1b2c3d4", "[Telegram Alice +5m] remember that my cat is called Tom"),
	}
	w := e.watcher(time.Hour)
	e.run(w)
	e.settle(w, want)

	// An assistant line written in two parts is published only once whole.
	line := messageLine("assistant", "b1b2c3d4", "Noted: your cat is Tom.", 1767348000999)
	off := tr.write(line[:40])
	e.sync(w)
	e.check(e.entries(), want)
	tr.write(line[40:])
	want = append(want, schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "sess-1", File: "sess-1.jsonl",
		Offset: off, EntryID: "b1b2c3d4", Role: "assistant", Text: "Noted: your cat is Tom.", Timestamp: 1767348000999})
	e.waitFor(len(want))

	// Lines that carry no memory are passed over; a thread file is a
	// session of its own, whatever its header says.
	tr.write(toolResultLine("c1c2c3d4"))
	tr.write(jsonLine(map[string]any{"type": "model_change", "id": "d1d2d3d4", "provider": "x", "modelId": "y"}))
	want = append(want, tr.message("sess-1", "user", "e1e2e3e4", "日本語も大丈夫？"))
	topic := e.newTranscript("main", "sess-1-topic-42.jsonl")
	topic.write(header("sess-1"))
	want = append(want, topic.message("sess-1-topic-42", "user", "f1f2f3f4", "in the thread"))
	e.settle(w, want)
	if n := e.counter("clawmem_watcher_entries_total", "result", "published"); n != float64(len(want)) {
		t.Errorf("published metric %v, want %d", n, len(want))
	}
}

func TestTruncatedOrRewrittenFileStartsOver(t *testing.T) {
	e := setup(t)
	const regrow = 50 * time.Millisecond
	w := e.watcher(time.Hour, regrow)
	tr := e.newTranscript("main", "s.jsonl")
	tr.write(header("s"))
	want := []schemas.TranscriptEntry{
		tr.message("s", "user", "00000001", "first message of the first life"),
		tr.message("s", "assistant", "00000002", "a long answer that makes the file longer than what replaces it"),
	}
	e.sync(w)
	before := e.entries()
	e.check(before, want)

	// Shorter than the offset: given RegrowWait to be written back, then
	// read again from byte 0. The same offsets get new Msg-Ids, so the
	// stream does not drop them as duplicates.
	tr.truncate()
	tr.write(header("s"))
	second := tr.message("s", "user", "00000003", "second life")
	e.sync(w)
	e.check(e.entries(), want)
	time.Sleep(regrow)
	e.sync(w)
	want = append(want, second)
	got := e.entries()
	e.check(got, want)
	if got[2].Offset != before[0].Offset || got[2].MsgID == before[0].MsgID {
		t.Errorf("rewritten file: offset %d id %q; first life: offset %d id %q", got[2].Offset, got[2].MsgID, before[0].Offset, before[0].MsgID)
	}

	// Rewritten past the old offset between two looks: the changed first
	// bytes give it away.
	tr.truncate()
	tr.write(strings.Replace(header("s2"), "10:00:00", "11:00:00", 1))
	want = append(want,
		tr.message("s2", "user", "00000004", "third life, much longer than the second one so the offset is passed"),
		tr.message("s2", "assistant", "00000005", "indeed"))
	e.sync(w)
	e.check(e.entries(), want)

	// Cut, seen short, and written back past the offset with its first
	// bytes (the fingerprint's) as they were but another line after them:
	// a new generation too, or that line would never be published.
	kept := want[len(want)-2]
	all, err := os.ReadFile(tr.path)
	if err != nil {
		t.Fatal(err)
	}
	tr.truncate()
	tr.write(string(all[:kept.Offset]))
	e.sync(w)
	tr.message("s2", "user", "00000004", "third life, much longer than the second one so the offset is passed")
	want = append(want, kept, tr.message("s2", "assistant", "00000006", "written back with another answer, longer"))
	e.sync(w)
	e.check(e.entries(), want)
	if n := e.counter("clawmem_watcher_file_generations_total", "reason", "truncated"); n != 3 {
		t.Errorf("truncated metric %v, want 3", n)
	}
}

// A file rewritten with the lines already published first — a copy
// renamed over it, as editors and compactions write, or a rewrite in place
// through a short file, even across a restart — is followed on from its
// offset: only the lines added are published, under the same file id.
func TestRewrittenWithSameLinesIsFollowedOn(t *testing.T) {
	e := setup(t)
	w := e.watcher(time.Hour, time.Minute)
	tr := e.newTranscript("main", "s.jsonl")
	tr.write(header("s"))
	want := []schemas.TranscriptEntry{
		tr.message("s", "user", "00000001", "my cat is called Tom"),
		tr.message("s", "assistant", "00000002", "Noted: Tom."),
	}
	e.sync(w)
	e.check(e.entries(), want)
	content := func() string {
		b, err := os.ReadFile(tr.path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// Replaced atomically by a copy with a line more.
	old := content()
	tmp := filepath.Join(filepath.Dir(tr.path), ".s.jsonl.tmp")
	if err := os.WriteFile(tmp, []byte(old+messageLine("user", "00000003", "and my dog Rex", 1767348000300)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, tr.path); err != nil {
		t.Fatal(err)
	}
	want = append(want, schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "s", File: "s.jsonl", Offset: int64(len(old)),
		EntryID: "00000003", Role: "user", Text: "and my dog Rex", Timestamp: 1767348000300})
	tr.size = int64(len(content()))
	e.sync(w)
	e.check(e.entries(), want)

	// Rewritten in place in pieces, the watcher looking in between, and
	// restarted while the file is short.
	all := content()
	tr.truncate()
	tr.write(all[:len(all)/3])
	e.sync(w)
	tr.write(all[len(all)/3 : 2*len(all)/3])
	w = e.watcher(time.Hour, time.Minute)
	e.sync(w)
	e.check(e.entries(), want)
	tr.write(all[2*len(all)/3:])
	want = append(want, tr.message("s", "assistant", "00000004", "Noted: Rex."))
	e.sync(w)
	got := e.entries()
	e.check(got, want)
	for _, g := range got[1:] {
		if fileIDOf(g.MsgID) != fileIDOf(got[0].MsgID) {
			t.Errorf("entry %s under file id %s, the first under %s", g.EntryID, fileIDOf(g.MsgID), fileIDOf(got[0].MsgID))
		}
	}
	for _, reason := range []string{"truncated", "replaced"} {
		if n := e.counter("clawmem_watcher_file_generations_total", "reason", reason); n != 0 {
			t.Errorf("%v new generations (%s), want none", n, reason)
		}
	}
}

func TestRotationFinishesOldFileThenFollowsNew(t *testing.T) {
	e := setup(t)
	tr := e.newTranscript("main", "s1.jsonl")
	tr.write(header("s1"))
	want := []schemas.TranscriptEntry{tr.message("s1", "user", "00000001", "before the reset")}
	w := e.watcher(time.Hour)
	e.run(w)
	e.settle(w, want)

	// /new: a last line lands, the file is renamed, and a new file with the
	// same session id takes its name.
	last := tr.message("s1", "assistant", "00000002", "the last answer before /new")
	tr.rename("s1.jsonl.reset.2026-01-02T10-00-00.000Z")
	last.File = filepath.Base(tr.path) // unless the watcher read it before the rename
	fresh := e.newTranscript("main", "s1.jsonl")
	fresh.write(header("s1"))
	next := []schemas.TranscriptEntry{
		fresh.message("s1", "user", "00000003", "after the reset"),
		fresh.message("s1", "assistant", "00000004", "fresh start"),
	}
	e.waitFor(4)
	e.sync(w)
	got := e.entries()
	if len(got) > 1 && got[1].File == "s1.jsonl" {
		last.File = "s1.jsonl"
	}
	e.check(got, append(append(want, last), next...))

	// The rotated file is still followed after the rename.
	more := tr.message("s1", "user", "00000005", "a straggler written to the rotated file")
	want = append(append(append(want, last), next...), more)
	e.settle(w, want)
	oldID, newID := fileIDOf(got[0].MsgID), fileIDOf(got[2].MsgID)
	if oldID == newID {
		t.Errorf("old and new file share the file id %q", oldID)
	}

	// Deleting a session renames it with nothing in its place; its last
	// line is still published.
	d := e.newTranscript("main", "d.jsonl")
	d.write(header("d"))
	want = append(want, d.message("d", "user", "0000000d", "soon deleted"))
	e.settle(w, want)
	final := d.message("d", "assistant", "0000000e", "the last word")
	d.rename("d.jsonl.deleted.2026-01-02T12-00-00.000Z")
	e.waitFor(len(want) + 1)
	e.sync(w)
	got = e.entries()
	final.File = got[len(got)-1].File
	if final.File != "d.jsonl" {
		final.File = filepath.Base(d.path)
	}
	e.check(got, append(want, final))
}

func fileIDOf(msgID string) string {
	parts := strings.Split(msgID, ".")
	if len(parts) != 4 {
		return ""
	}
	return parts[2]
}

func TestNewAgentDirectoriesAreFollowed(t *testing.T) {
	e := setup(t)
	if err := os.MkdirAll(filepath.Join(e.state, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := e.watcher(time.Hour)
	e.run(w)
	e.sync(w)

	for _, bad := range []string{"a.b", "*"} {
		tr := e.newTranscript(bad, "x.jsonl")
		tr.write(header("x"))
		tr.message("x", "user", "00000001", "from an agent that cannot exist")
	}
	tr := e.newTranscript("bob", "s.jsonl")
	tr.write(header("s"))
	want := []schemas.TranscriptEntry{tr.message("s", "user", "00000001", "hello from bob, a new agent")}
	e.settle(w, want)
	for _, bad := range []string{"agents/a.b", "agents/*"} {
		if !strings.Contains(e.logs.String(), bad+" ") {
			t.Errorf("no warning about %s in log:\n%s", bad, e.logs)
		}
	}
	if n := strings.Count(e.logs.String(), "agent directory skipped"); n != 2 {
		t.Errorf("%d warnings about bad agent directories, want one each for a.b and *", n)
	}
}

func TestStateDirAppearsLater(t *testing.T) {
	tests := []struct {
		name   string
		exists bool // the state dir exists, agents/ does not
		rescan time.Duration
	}{
		{"agents dir created", true, time.Hour},
		{"state dir created", false, 20 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			e.state = filepath.Join(e.state, "openclaw")
			if tt.exists {
				if err := os.Mkdir(e.state, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			w := e.watcher(tt.rescan)
			e.run(w)
			e.sync(w)
			tr := e.newTranscript("main", "s.jsonl")
			tr.write(header("s"))
			want := []schemas.TranscriptEntry{tr.message("s", "user", "00000001", "first words")}
			e.settle(w, want)
		})
	}
}

func TestRestartResumesWithoutLossOrRepeat(t *testing.T) {
	e := setup(t)
	a := e.newTranscript("main", "a.jsonl")
	a.write(header("a"))
	want := []schemas.TranscriptEntry{
		a.message("a", "user", "00000001", "one"),
		a.message("a", "assistant", "00000002", "two"),
	}
	c := e.newTranscript("main", "c.jsonl")
	c.write(header("c"))
	want = append(want, c.message("c", "user", "0000000c", "see"))
	w1 := e.watcher(time.Hour)
	stop := e.run(w1)
	e.settle(w1, want)
	stop()

	// While no watcher runs, c.jsonl gets a last line and is deleted,
	// which OpenClaw does by renaming it.
	gone := c.message("c", "assistant", "0000000d", "sea")
	c.rename("c.jsonl.deleted.2026-01-02T11-30-00.000Z")
	gone.File = filepath.Base(c.path)
	want = append(want, gone)

	// While no watcher runs: more lines, one unfinished, then /new, and a
	// second session.
	want = append(want,
		a.message("a", "user", "00000003", "three"),
		a.message("a", "assistant", "00000004", "four"))
	unfinished := messageLine("user", "00000005", "five", 1767348005555)
	offFive := a.write(unfinished[:25])
	a.rename("a.jsonl.reset.2026-01-02T11-00-00.000Z")
	want[len(want)-2].File, want[len(want)-1].File = filepath.Base(a.path), filepath.Base(a.path)
	a2 := e.newTranscript("main", "a.jsonl")
	a2.write(header("a"))
	want = append(want, a2.message("a", "user", "00000006", "six"))
	b := e.newTranscript("main", "b.jsonl")
	b.write(header("b"))
	want = append(want, b.message("b", "user", "00000007", "seven"))

	w2 := e.watcher(time.Hour)
	stop = e.run(w2)
	e.settle(w2, want)

	// The unfinished line completes in the rotated file.
	a.write(unfinished[25:])
	want = append(want, schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "a", File: filepath.Base(a.path),
		Offset: offFive, EntryID: "00000005", Role: "user", Text: "five", Timestamp: 1767348005555})
	e.settle(w2, want)
	stop()

	// A crash after publishing but before storing the offset: the stored
	// offset of b.jsonl is behind the stream. Nothing is published again,
	// not even as a duplicate, however long the watcher was down.
	rewind(t, e.js, "b.jsonl")
	w3 := e.watcher(time.Hour)
	e.sync(w3)
	e.check(e.entries(), want)
	if n := e.counter("clawmem_watcher_entries_total", "result", "duplicate"); n != 0 {
		t.Errorf("%v duplicates published after the restart, want 0", n)
	}
	want = append(want, b.message("b", "assistant", "00000008", "eight"))
	e.sync(w3)
	e.check(e.entries(), want)
}

// rewind sets the stored offset of the file named name back to 0.
func rewind(t *testing.T, js jetstream.JetStream, name string) {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, schemas.BucketWatch)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := kv.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ent, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(ent.Value(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["path"] != "agents/main/sessions/"+name {
			continue
		}
		rec["offset"], rec["session"] = 0, ""
		data, _ := json.Marshal(rec)
		if _, err := kv.Update(ctx, k, data, ent.Revision()); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no offset record for %s among %v", name, keys)
}

func TestBadLinesAreSkipped(t *testing.T) {
	e := setup(t)
	tr := e.newTranscript("main", "s.jsonl")
	tr.write(header("s"))
	tr.write("this is not json\n")
	tr.write(`{"type":"message","id":"x","message":{"role":"user","content":"cut off` + "\n")
	tr.write("\xff\xfe" + messageLine("user", "00000009", "invalid utf-8 before the json", 1))
	tr.write(`{"type":"message","id":"0000000a","message":{"role":"user","content":"bad ` + "\xc3\x28" + ` inside"}}` + "\n")
	want := []schemas.TranscriptEntry{tr.message("s", "user", "00000001", "still fine after garbage")}
	tr.write("\n   \n")
	tr.write(`{"type":"message","id":"y","message":{"role":"user","content":"` + strings.Repeat("x", distill.MaxLineBytes) + `"}}` + "\n")
	tr.write(toolResultLine("00000002"))
	crlf := messageLine("assistant", "00000003", "windows line ending", 1767348000003)
	off := tr.write(strings.TrimSuffix(crlf, "\n") + "\r\n")
	want = append(want, schemas.TranscriptEntry{V: 1, AgentID: "main", SessionID: "s", File: "s.jsonl", Offset: off,
		EntryID: "00000003", Role: "assistant", Text: "windows line ending", Timestamp: 1767348000003})
	want = append(want, tr.message("s", "user", "00000004", "the end"))

	w := e.watcher(time.Hour)
	e.sync(w)
	e.check(e.entries(), want)
	if n := e.counter("clawmem_watcher_lines_skipped_total", "reason", "bad"); n != 4 {
		t.Errorf("%v bad lines counted, want 4", n)
	}
	if n := e.counter("clawmem_watcher_lines_skipped_total", "reason", "too_long"); n != 1 {
		t.Errorf("%v too long lines counted, want 1", n)
	}
	// Skipped lines stay skipped after a restart.
	e.sync(e.watcher(time.Hour))
	e.check(e.entries(), want)
}

func TestHugeTextIsCutToOneMessage(t *testing.T) {
	e := setupSmall(t)
	tr := e.newTranscript("main", "s.jsonl")
	tr.write(header("s"))
	// U+2028 is 3 bytes in the file and 6 once encoded: this line is well
	// within the line limit, but its entry does not fit one message.
	text := strings.Repeat("\u2028", 300_000)
	tr.write(`{"type":"message","id":"00000001","message":{"role":"user","content":"` + text + `","timestamp":1}}` + "\n")
	want := []schemas.TranscriptEntry{tr.message("s", "assistant", "00000002", "after the huge one")}
	w := e.watcher(time.Hour)
	e.sync(w)
	got := e.entries()
	if len(got) != 2 {
		t.Fatalf("%d entries", len(got))
	}
	e.check(got[1:], want)
	if n := len(got[0].Text); n == 0 || n >= len(text) || !strings.HasPrefix(text, got[0].Text) {
		t.Fatalf("text of %d bytes, original %d", n, len(text))
	}
	data, err := json.Marshal(got[0].TranscriptEntry)
	if err != nil {
		t.Fatal(err)
	}
	if limit := int(e.js.Conn().MaxPayload()); len(data) > limit || len(data) < limit-4096 {
		t.Fatalf("entry of %d bytes for a %d byte limit", len(data), limit)
	}
}

func TestRotatedFilesNeverFollowedAreSkipped(t *testing.T) {
	e := setup(t)
	old := e.newTranscript("main", "old.jsonl")
	old.write(header("old"))
	old.message("old", "user", "00000001", "archived before clawmem existed")
	old.rename("old.jsonl.reset.2025-01-01T00-00-00.000Z")
	del := e.newTranscript("main", "gone.jsonl.deleted.2025-01-01T00-00-00.000Z")
	del.write(header("gone"))
	del.message("gone", "user", "00000002", "deleted before clawmem existed")
	live := e.newTranscript("main", "live.jsonl")
	live.write(header("live"))
	want := []schemas.TranscriptEntry{live.message("live", "user", "00000003", "current")}
	if err := os.WriteFile(filepath.Join(e.state, "agents", "main", "sessions", "sessions.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	w := e.watcher(time.Hour)
	e.sync(w)
	e.check(e.entries(), want)
}

func TestRunAndSyncTogether(t *testing.T) {
	e := setup(t)
	w := e.watcher(10 * time.Millisecond)
	e.run(w)
	var want []schemas.TranscriptEntry
	trs := []*transcript{e.newTranscript("main", "p.jsonl"), e.newTranscript("main", "q.jsonl")}
	for _, tr := range trs {
		tr.write(header(strings.TrimSuffix(filepath.Base(tr.path), ".jsonl")))
	}
	for i := range 40 {
		tr := trs[i%2]
		session := strings.TrimSuffix(filepath.Base(tr.path), ".jsonl")
		want = append(want, tr.message(session, "user", fmt.Sprintf("%08x", i), fmt.Sprintf("message %d", i)))
		if i%10 == 0 {
			e.sync(w)
		}
	}
	e.waitFor(len(want))
	e.sync(w)
	got := e.entries()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	// Files are read in any order; within a file, in order.
	next := map[string]int{}
	for _, g := range got {
		var i int
		if _, err := fmt.Sscanf(g.EntryID, "%x", &i); err != nil {
			t.Fatal(err)
		}
		if want[i] != g.TranscriptEntry || i < next[g.File] {
			t.Fatalf("entry %+v out of order or wrong (want %+v)", g.TranscriptEntry, want[i])
		}
		next[g.File] = i + 1
	}
}

func TestNewNeedsJetStream(t *testing.T) {
	if _, err := watcher.New(watcher.Config{StateDir: t.TempDir()}, nil, nil); err == nil {
		t.Fatal("New without JetStream succeeded")
	}
	w, err := watcher.New(watcher.Config{StateDir: "relative/dir"}, fakeJS{}, nil)
	if err != nil || !filepath.IsAbs(w.StateDir()) {
		t.Fatalf("state dir %q, %v", w.StateDir(), err)
	}
	t.Setenv(distill.StateDirEnv, "/tmp/openclaw-state")
	if w, err := watcher.New(watcher.Config{}, fakeJS{}, nil); err != nil || w.StateDir() != "/tmp/openclaw-state" {
		t.Fatalf("default state dir: %v", err)
	}
}

// fakeJS stands in where New only stores the context.
type fakeJS struct{ jetstream.JetStream }

// An agent directory created after a scan listed the agents, before the
// scan's watches were in place, is still followed at once (it was left to
// the hourly rescan when the agents were listed before agents/ was watched).
func TestAgentCreatedWhileScanningIsFollowed(t *testing.T) {
	e := setup(t)
	if err := os.MkdirAll(filepath.Join(e.state, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	w := e.watcher(time.Hour)
	var once sync.Once
	created := make(chan *transcript, 1)
	watcher.OnListed(w, func() {
		once.Do(func() {
			tr := e.newTranscript("late", "s.jsonl")
			tr.write(header("s"))
			created <- tr
		})
	})
	e.run(w)
	tr := <-created
	want := []schemas.TranscriptEntry{tr.message("s", "user", "00000001", "from an agent made mid-scan")}
	e.settle(w, want)
}
