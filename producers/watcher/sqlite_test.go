package watcher_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	_ "modernc.org/sqlite"

	"github.com/clawmem/clawmem/internal/testkit/openclawdb"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/schemas"
)

// ocDB is a test's OpenClaw database, written the way OpenClaw writes it
// (WAL journal, its own connection).
type ocDB struct {
	t    *testing.T
	path string
	db   *sql.DB
	seq  map[string]int
}

func (e *env) newOpenClawDB(agent string) *ocDB {
	e.t.Helper()
	dir := filepath.Join(e.state, "agents", agent, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(dir, watcher.OpenClawDBName)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		e.t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	e.t.Cleanup(func() { db.Close() })
	if err := openclawdb.Create(db, agent, 1796272661025); err != nil {
		e.t.Fatal(err)
	}
	return &ocDB{t: e.t, path: path, db: db, seq: map[string]int{}}
}

func (o *ocDB) exec(q string, args ...any) {
	o.t.Helper()
	if _, err := o.db.Exec(q, args...); err != nil {
		o.t.Fatal(err)
	}
}

// add appends one transcript event of session; zst stores it compressed
// (event_json NULL), as OpenClaw does with large entries.
func (o *ocDB) add(session string, event any, zst bool) {
	o.t.Helper()
	if _, ok := o.seq[session]; !ok {
		o.exec(`INSERT INTO session_windows VALUES (?, 'agent:main:main', 1, 1)`, session)
		o.seq[session] = 0
	}
	raw, ok := event.(string)
	if !ok {
		b, _ := json.Marshal(event)
		raw = string(b)
	}
	seq := o.seq[session]
	o.seq[session]++
	if zst {
		enc, _ := zstd.NewWriter(nil)
		z := enc.EncodeAll([]byte(raw), nil)
		o.exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes, navigation_json)
			VALUES (?, ?, NULL, ?, ?, ?, '{"version":1}')`, session, seq, time.Now().UnixMilli(), z, len(raw))
		return
	}
	o.exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)`, session, seq, raw, time.Now().UnixMilli())
}

func ocMessage(id, role string, content any) map[string]any {
	return map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-12-03T04:37:46.733Z",
		"message": map[string]any{"role": role, "content": content, "timestamp": 1796272661232}}
}

func ocText(text string) []map[string]any { return []map[string]any{{"type": "text", "text": text}} }

func TestSQLiteTranscriptsAreFollowed(t *testing.T) {
	e := setup(t)
	const sid = "80a2cfe9-01bd-4ccc-bb86-2ee8b0d5f072"
	o := e.newOpenClawDB("main")
	o.add(sid, map[string]any{"type": "session", "version": 4, "id": sid, "timestamp": "2026-12-03T04:37:46.522Z"}, false)
	o.add(sid, map[string]any{"type": "model_change", "provider": "fake", "modelId": "m", "id": "6e872aac"}, false)
	o.add(sid, ocMessage("e4067ebd", "user", "Remember that my favourite colour is teal."), false)
	o.add(sid, ocMessage("55845093", "assistant", ocText("Noted: teal.")), false)
	o.add(sid, ocMessage("1e26bdf7", "toolResult", []any{}), true)
	o.add(sid, ocMessage("49562b9b", "assistant", ocText("A long answer kept compressed.")), true)
	o.add(sid, map[string]any{"type": "reset", "id": "a64a426c", "reason": "new"}, false)

	w := e.watcher(time.Hour)
	stop := e.run(w)
	msg := func(id, role, text string) schemas.TranscriptEntry {
		return schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: sid, EntryID: id, Role: role, Text: text}
	}
	want := []schemas.TranscriptEntry{
		msg("e4067ebd", "user", "Remember that my favourite colour is teal."),
		msg("55845093", "assistant", "Noted: teal."),
		msg("49562b9b", "assistant", "A long answer kept compressed."),
	}
	got := e.settleSQLite(w, want)
	for _, g := range got {
		if !strings.HasPrefix(g.MsgID, "transcript.main.sq") || g.File != "sqlite:"+watcher.OpenClawDBName {
			t.Fatalf("entry %+v", g)
		}
	}
	// Rows OpenClaw commits later are followed through fsnotify on the
	// database's -wal file (the rescan is an hour away).
	o.add(sid, ocMessage("265220bc", "user", "My dog is called Rex."), false)
	want = append(want, msg("265220bc", "user", "My dog is called Rex."))
	e.waitFor(len(want))
	e.settleSQLite(w, want)

	// A restart resumes from the stored cursor and re-emits nothing.
	stop()
	o.add("s-2", ocMessage("aa000001", "user", "I prefer window seats."), false)
	w2 := e.watcher(time.Hour)
	e.run(w2)
	want = append(want, schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: "s-2", EntryID: "aa000001", Role: "user", Text: "I prefer window seats."})
	e.settleSQLite(w2, want)
	if !strings.Contains(e.logs.String(), "following OpenClaw's SQLite transcript store") ||
		!strings.Contains(e.logs.String(), "main: sqlite") {
		t.Fatalf("start-up log does not say which transcript source is used:\n%s", e.logs)
	}
	st, err := watcher.Status(context.Background(), e.js)
	if err != nil || len(st) != 1 || st[0].Source != "sqlite" || st[0].Problem != "" {
		t.Fatalf("status %+v %v", st, err)
	}
}

// A database file replaced under the watcher (a copy renamed over it), or
// deleted and made anew between two of its passes, is opened again: the
// handle it holds would go on reading the old file and never see a new row.
func TestSQLiteReplacedDatabaseIsReopened(t *testing.T) {
	e := setup(t)
	const sid = "80a2cfe9-01bd-4ccc-bb86-2ee8b0d5f072"
	o := e.newOpenClawDB("main")
	o.add(sid, ocMessage("00000001", "user", "I live in Prague."), false)
	w := e.watcher(time.Hour)
	msg := func(session, id, text string) schemas.TranscriptEntry {
		return schemas.TranscriptEntry{V: schemas.Version, AgentID: "main", SessionID: session, EntryID: id, Role: "user", Text: text}
	}
	want := []schemas.TranscriptEntry{msg(sid, "00000001", "I live in Prague.")}
	e.sync(w)
	e.settleSQLite(w, want)

	// A copy (VACUUM INTO) renamed over the database, its WAL gone with it.
	tmp := o.path + ".copy"
	o.exec(`VACUUM INTO ?`, tmp)
	o.exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	o.db.Close()
	if err := os.Rename(tmp, o.path); err != nil {
		t.Fatal(err)
	}
	os.Remove(o.path + "-wal")
	os.Remove(o.path + "-shm")
	db, err := sql.Open("sqlite", "file:"+o.path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	o.db = db
	o.add(sid, ocMessage("00000002", "user", "I work from home on Fridays."), false)
	want = append(want, msg(sid, "00000002", "I work from home on Fridays."))
	e.sync(w)
	got := e.settleSQLite(w, want)
	if fileIDOf(got[0].MsgID) != fileIDOf(got[1].MsgID) {
		t.Errorf("the copy is another database: %s, then %s", got[0].MsgID, got[1].MsgID)
	}

	// Deleted and made anew (OpenClaw's schema_meta gets a new created_at)
	// between two passes.
	o.db.Close()
	for _, f := range []string{o.path, o.path + "-wal", o.path + "-shm"} {
		os.Remove(f)
	}
	const sid2 = "91b3d0fa-12ce-4ddd-8c97-3ff9c1e6a183"
	o = e.newOpenClawDB("main")
	o.exec(`UPDATE schema_meta SET created_at = created_at + 1`)
	o.add(sid2, ocMessage("00000003", "user", "My new laptop is a ThinkPad."), false)
	want = append(want, msg(sid2, "00000003", "My new laptop is a ThinkPad."))
	e.sync(w)
	e.settleSQLite(w, want)
}

// settleSQLite syncs and compares the stream with want, ignoring the
// per-file fields (offset, file) the JSONL checks compare.
func (e *env) settleSQLite(w *watcher.Watcher, want []schemas.TranscriptEntry) []entry {
	e.t.Helper()
	e.waitFor(len(want))
	e.sync(w)
	got := e.entries()
	if len(got) != len(want) {
		e.t.Fatalf("%d entries, want %d:\n%s", len(got), len(want), dumpEntries(got))
	}
	ids := map[string]bool{}
	for i, g := range got {
		x := want[i]
		if g.AgentID != x.AgentID || g.SessionID != x.SessionID || g.EntryID != x.EntryID || g.Role != x.Role || g.Text != x.Text {
			e.t.Fatalf("entry %d: %+v, want %+v", i, g.TranscriptEntry, x)
		}
		if g.Subject != schemas.TranscriptSubject(g.AgentID, g.SessionID) || ids[g.MsgID] {
			e.t.Fatalf("entry %d: subject %s msg id %s (repeated %v)", i, g.Subject, g.MsgID, ids[g.MsgID])
		}
		ids[g.MsgID] = true
	}
	return got
}

func dumpEntries(es []entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s %s %s %q\n", e.SessionID, e.EntryID, e.Role, e.Text)
	}
	return b.String()
}

// Bad rows (invalid UTF-8, a 10 MB entry, a zstd blob that is garbage, no
// JSON at all, an empty session id) are skipped and reported; the rows
// around them are published and nothing panics.
func TestSQLiteBadRowsAreSkipped(t *testing.T) {
	e := setup(t)
	o := e.newOpenClawDB("main")
	o.add("s1", ocMessage("00000001", "user", "I live in Prague."), false)
	o.add("s1", `{"type":"message","id":"00000002","message":{"role":"user","content":"bad `+"\xff\xfe"+` bytes"}}`, false)
	o.add("s1", ocMessage("00000003", "user", strings.Repeat("x", 10<<20)), false)
	o.add("s1", "{not json", false)
	o.exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, event_utf8_bytes, navigation_json)
		VALUES ('s1', 100, NULL, 1, x'00112233', 4, '{}')`)
	o.exec(`INSERT INTO session_windows VALUES ('', 'k', 1, 1)`)
	o.exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES ('', 0, ?, 1)`,
		`{"type":"message","id":"00000009","message":{"role":"user","content":"no session"}}`)
	o.add("s1", ocMessage("00000004", "user", "My dog is called Rex."), false)
	w := e.watcher(time.Hour)
	e.sync(w)
	want := []schemas.TranscriptEntry{
		{V: schemas.Version, AgentID: "main", SessionID: "s1", EntryID: "00000001", Role: "user", Text: "I live in Prague."},
		{V: schemas.Version, AgentID: "main", SessionID: "s1", EntryID: "00000004", Role: "user", Text: "My dog is called Rex."},
	}
	e.settleSQLite(w, want)
	logs := e.logs.String()
	for _, wantLog := range []string{"not valid UTF-8", "over the 8388608-byte limit", "does not decompress", "empty session_id"} {
		if !strings.Contains(logs, wantLog) {
			t.Errorf("log lacks %q:\n%s", wantLog, logs)
		}
	}
	if n := e.counter("clawmem_watcher_lines_skipped_total", "reason", "bad"); n != 5 {
		t.Errorf("%v bad rows counted, want 5", n)
	}
}

// A database whose schema is not OpenClaw's (a newer version), a corrupt
// or truncated file, and a locked one are reported once, in the log and in
// the status doctor reads, and never stop the watcher; a JSONL agent next
// to them is still followed.
func TestSQLiteUnreadableDatabasesAreReported(t *testing.T) {
	e := setup(t)
	// Schema changed: transcript_events without event_json.
	other := filepath.Join(e.state, "agents", "newer", "agent")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(other, watcher.OpenClawDBName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, payload BLOB)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Corrupt: not a database at all.
	corrupt := filepath.Join(e.state, "agents", "broken", "agent")
	if err := os.MkdirAll(corrupt, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, watcher.OpenClawDBName), []byte(strings.Repeat("garbage!", 1000)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Truncated: a real database cut in the middle of its pages.
	o := e.newOpenClawDB("cut")
	for i := range 200 {
		o.add("s1", ocMessage(fmt.Sprintf("%08x", i), "user", strings.Repeat("some text ", 50)), false)
	}
	o.exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	o.db.Close()
	if err := os.Truncate(o.path, 8192); err != nil {
		t.Fatal(err)
	}
	// A healthy JSONL agent beside them.
	tr := e.newTranscript("old", "s9.jsonl")
	tr.write(header("s9"))
	want := []schemas.TranscriptEntry{tr.message("s9", "user", "00000001", "I prefer tea.")}

	w := e.watcher(50 * time.Millisecond)
	e.run(w)
	e.waitFor(1)
	time.Sleep(300 * time.Millisecond) // several rescans: each problem must be logged once
	logs := e.logs.String()
	if n := strings.Count(logs, "its schema is not the one this clawmem knows"); n != 1 {
		t.Errorf("schema problem logged %d times, want once:\n%s", n, logs)
	}
	if !strings.Contains(logs, "lacks event_json") {
		t.Errorf("schema log does not say what is missing:\n%s", logs)
	}
	if n := strings.Count(logs, "cannot be read now") + strings.Count(logs, "not the one this clawmem knows"); n < 3 {
		t.Errorf("corrupt and truncated databases not reported:\n%s", logs)
	}
	if strings.Count(logs, `agent=broken`) > 3 || strings.Contains(logs, "failed; retrying") {
		t.Errorf("the corrupt database is reported on every rescan:\n%s", logs)
	}
	st, err := watcher.Status(context.Background(), e.js)
	if err != nil {
		t.Fatal(err)
	}
	problems := map[string]string{}
	for _, s := range st {
		problems[s.Agent] = s.Source + ":" + s.Problem
	}
	for _, agent := range []string{"newer", "broken", "cut"} {
		if !strings.HasPrefix(problems[agent], "sqlite:") || problems[agent] == "sqlite:" {
			t.Errorf("status of %s: %q (all %v)", agent, problems[agent], problems)
		}
	}
	if problems["old"] != "jsonl:" {
		t.Errorf("status of the JSONL agent: %q", problems["old"])
	}
	got := e.entries()
	if len(got) != 1 || got[0].Text != want[0].Text {
		t.Fatalf("entries %+v", got)
	}
}

// A database locked by OpenClaw's writer (an open write transaction in
// rollback-journal mode) is waited for, then read; the watcher never
// writes to it.
func TestSQLiteLockedDatabaseIsRetried(t *testing.T) {
	e := setup(t)
	o := e.newOpenClawDB("main")
	o.add("s1", ocMessage("00000001", "user", "I live in Prague."), false)
	o.exec(`PRAGMA journal_mode=DELETE`)
	ctx := context.Background()
	conn, err := o.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	w := e.watcher(100 * time.Millisecond)
	e.run(w)
	time.Sleep(3 * time.Second) // past the 2 s busy timeout: one "cannot be read" line
	if n := e.streamMsgs(); n != 0 {
		t.Fatalf("%d entries read through an exclusive lock", n)
	}
	if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	e.waitFor(1)
	// The recovery is logged once the pass that published the row ends.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(e.logs.String(), "readable again") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(e.logs.String(), "cannot be read now") || !strings.Contains(e.logs.String(), "readable again") {
		t.Errorf("lock not reported, or recovery not logged:\n%s", e.logs)
	}
	fi, err := os.Stat(o.path)
	if err != nil {
		t.Fatal(err)
	}
	before := fi.ModTime()
	time.Sleep(300 * time.Millisecond)
	if fi, _ := os.Stat(o.path); !fi.ModTime().Equal(before) {
		t.Error("the watcher wrote to OpenClaw's database")
	}
}
