package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

// testDims is the local embedder's size in these tests.
const testDims = 256

// backupStore opens an empty real store of dim dimensions.
func backupStore(t testing.TB, dim int) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{Dimensions: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// seedMemories imports n memories with known ids, timestamps, scopes and
// metadata, embedded by the local embedder, and returns them.
func seedMemories(t testing.TB, st engine.Store, n int) []schemas.Memory {
	t.Helper()
	emb := testkit.LocalEmbedder(t, testDims)
	scopes := []string{"global", "agent:main", "custom:ops"}
	cats := []schemas.Category{schemas.CategoryFact, schemas.CategoryPreference, schemas.CategoryDecision}
	ms := make([]schemas.Memory, n)
	texts := make([]string, n)
	for i := range ms {
		texts[i] = fmt.Sprintf("Memory %d: the build server deploys with docker compose <%d> & \"quotes\" 乌龙茶", i, i*7)
		ms[i] = schemas.Memory{
			ID: uuid.NewString(), Text: texts[i], Category: cats[i%3], Scope: scopes[i%3],
			Importance: float64(i%10) / 10, Timestamp: int64(1_700_000_000_000 + i*1000),
			Metadata: json.RawMessage(fmt.Sprintf(`{"source":"test","n":%d}`, i)),
		}
	}
	for start := 0; start < n; start += 500 {
		end := min(start+500, n)
		vecs, err := emb.EmbedPassages(context.Background(), texts[start:end])
		if err != nil {
			t.Fatal(err)
		}
		for i := range vecs {
			ms[start+i].Vector = vecs[i]
		}
		if err := st.Import(context.Background(), ms[start:end]...); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// dayClock is a clock the test moves a day at a time.
type dayClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *dayClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *dayClock) next()          { c.add(24 * time.Hour) }
func (c *dayClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newDayClock() *dayClock {
	return &dayClock{t: time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)}
}

func backupJS(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, _, js := natsembed.StartTest(t)
	if err := topology.Ensure(context.Background(), js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	return js
}

func names(files []BackupFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func TestBackupRetentionOverTenDays(t *testing.T) {
	st := backupStore(t, testDims)
	seedMemories(t, st, 5)
	js := backupJS(t)
	clock := newDayClock()
	dir := t.TempDir()
	job, err := NewBackup(st, js, BackupConfig{Dir: dir, WithVectors: true, Now: clock.now}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for day := 1; day <= 10; day++ {
		res, err := job.RunOnce(ctx)
		if err != nil {
			t.Fatalf("day %d: %v", day, err)
		}
		if !res.Uploaded || res.Count != 5 || len(res.Files) != 2 {
			t.Fatalf("day %d: %+v", day, res)
		}
		if day > 7 && len(res.Removed) != 2 {
			t.Fatalf("day %d removed %v, want the oldest backup and snapshot", day, res.Removed)
		}
		clock.next()
	}
	var want []string
	for day := 4; day <= 10; day++ {
		d := time.Date(2026, 3, day, 0, 0, 0, 0, time.UTC)
		want = append(want, BackupFileName(BackupKindBackup, d), BackupFileName(BackupKindSnapshot, d))
	}
	slices.Sort(want)
	if got := dirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("backup dir after 10 days:\n got %v\nwant %v", got, want)
	}
	local, err := ListBackups(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(local) != 14 || local[0].Date != "2026-03-04" || local[13].Date != "2026-03-10" || local[0].Count != 5 {
		t.Fatalf("ListBackups: %+v", local)
	}
	objs, err := ListBackupObjects(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	got := names(objs)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Object Store after 10 days:\n got %v\nwant %v", got, want)
	}
}

// failAfter is a disk that accepts n bytes, then fails: a full disk, or
// the last write before a crash.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestBackupFailureMidWriteKeepsEarlierBackups(t *testing.T) {
	st := backupStore(t, testDims)
	seedMemories(t, st, 200)
	clock := newDayClock()
	dir := t.TempDir()
	job, err := NewBackup(st, nil, BackupConfig{Dir: dir, Now: clock.now}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := job.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	day1 := filepath.Join(dir, BackupFileName(BackupKindBackup, clock.now()))
	before, err := os.ReadFile(day1)
	if err != nil {
		t.Fatal(err)
	}
	// What a process killed mid-write leaves: a temp file, never renamed.
	stale := filepath.Join(dir, backupTempPrefix+"1234")
	if err := os.WriteFile(stale, before[:len(before)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if files, _ := ListBackups(dir, false); len(files) != 1 {
		t.Fatalf("a temp file was listed as a backup: %+v", files)
	}

	cases := []struct {
		name    string
		advance bool // a new day: the failed backup would be a new file
	}{
		{"new day", true},
		{"same day overwrite", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.advance {
				clock.next()
				defer clock.add(-24 * time.Hour)
			}
			job.wrap = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 5000} }
			defer func() { job.wrap = nil }()
			_, err := job.RunOnce(ctx)
			if !errors.Is(err, errDiskFull) {
				t.Fatalf("RunOnce = %v, want the disk's error", err)
			}
			after, err := os.ReadFile(day1)
			if err != nil || !bytes.Equal(before, after) {
				t.Fatalf("the earlier backup changed (%v)", err)
			}
			if got := dirNames(t, dir); !slices.Equal(got, []string{filepath.Base(day1)}) {
				t.Fatalf("after a failed backup the dir holds %v, want only %s", got, filepath.Base(day1))
			}
		})
	}
	// And the next good run replaces the failed day's attempt in full.
	clock.next()
	res, err := job.RunOnce(ctx)
	if err != nil || res.Count != 200 {
		t.Fatalf("recovery run: %+v %v", res, err)
	}
	if n, _ := countLines(res.Files[0].Path); n != 200 {
		t.Fatalf("recovered backup has %d lines", n)
	}
}

func TestBackupFormat(t *testing.T) {
	st := backupStore(t, testDims)
	seeded := seedMemories(t, st, 3)
	dir := t.TempDir()
	job, err := NewBackup(st, nil, BackupConfig{Dir: dir, WithVectors: true, Now: newDayClock().now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].Name != "memory-backup-2026-03-01.jsonl" || res.Files[1].Name != "memory-snapshot-2026-03-01.jsonl" {
		t.Fatalf("names: %v", names(res.Files))
	}
	b, _ := os.ReadFile(res.Files[0].Path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines", len(lines))
	}
	var row map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[0]), &row); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range row {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"category", "id", "importance", "metadata", "scope", "text", "timestamp"}; !slices.Equal(keys, want) {
		t.Fatalf("backup keys %v, want %v (no vector)", keys, want)
	}
	if !strings.Contains(lines[0], `<0> & \"quotes\" 乌龙茶`) || !strings.Contains(lines[0], `"metadata":{"source":"test","n":0}`) {
		t.Fatalf("text or metadata mangled: %s", lines[0])
	}
	snap, _ := os.ReadFile(res.Files[1].Path)
	var m schemas.Memory
	if err := json.Unmarshal(bytes.SplitN(snap, []byte("\n"), 2)[0], &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != seeded[0].ID || !slices.Equal(m.Vector, seeded[0].Vector) {
		t.Fatalf("snapshot row lost its vector: %+v", m)
	}
}

func TestBackupObjectStoreCopy(t *testing.T) {
	st := backupStore(t, testDims)
	seedMemories(t, st, 50)
	js := backupJS(t)
	job, err := NewBackup(st, js, BackupConfig{Dir: t.TempDir(), Now: newDayClock().now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := job.RunOnce(ctx)
	if err != nil || !res.Uploaded {
		t.Fatalf("%+v %v", res, err)
	}
	objs, err := ListBackupObjects(ctx, js)
	if err != nil || len(objs) != 1 {
		t.Fatalf("objects %+v %v", objs, err)
	}
	if o := objs[0]; o.Name != res.Files[0].Name || o.Count != 50 || o.Size != res.Files[0].Size || o.Date != "2026-03-01" {
		t.Fatalf("object %+v, file %+v", o, res.Files[0])
	}
	obs, _ := js.ObjectStore(ctx, schemas.BucketBackups)
	remote, err := obs.GetBytes(ctx, res.Files[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := os.ReadFile(res.Files[0].Path)
	if !bytes.Equal(remote, local) {
		t.Fatal("the Object Store copy differs from the file")
	}
}

func TestBackupUploadFailureKeepsFile(t *testing.T) {
	st := backupStore(t, testDims)
	seedMemories(t, st, 5)
	_, _, js := natsembed.StartTest(t) // no topology: the bucket is missing
	job, err := NewBackup(st, js, BackupConfig{Dir: t.TempDir(), Now: newDayClock().now}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	res, err := job.RunOnce(context.Background())
	if err != nil || res.Uploaded || !strings.Contains(res.UploadError, schemas.BucketBackups) {
		t.Fatalf("%+v %v", res, err)
	}
	if n, _ := countLines(res.Files[0].Path); n != 5 {
		t.Fatalf("file has %d lines", n)
	}
}

func TestBackupJobRunsFirstBackupAndAnswersRequests(t *testing.T) {
	st := backupStore(t, testDims)
	seedMemories(t, st, 4)
	js := backupJS(t)
	dir := t.TempDir()
	clock := newDayClock()
	job, err := NewBackup(st, js, BackupConfig{Dir: dir, Schedule: "@every 1h", FirstDelay: 50 * time.Millisecond, Now: clock.now},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	first := filepath.Join(dir, BackupFileName(BackupKindBackup, clock.now()))
	testkit.WaitFor(t, 10*time.Second, func() error {
		_, err := os.Stat(first)
		return err
	})

	clock.next()
	var reply *struct {
		schemas.ToolResult
		Details BackupResult `json:"details"`
	}
	testkit.WaitFor(t, 5*time.Second, func() error {
		msg, err := js.Conn().Request(schemas.AdminSubject(schemas.OpBackup), []byte(`{}`), 5*time.Second)
		if err != nil {
			return err
		}
		reply = nil
		return json.Unmarshal(msg.Data, &reply)
	})
	if reply.IsError || reply.Details.Count != 4 || !reply.Details.Uploaded ||
		reply.Details.Files[0].Name != BackupFileName(BackupKindBackup, clock.now()) {
		t.Fatalf("reply: %+v", reply)
	}
	if !strings.Contains(reply.Content[0].Text, "backed up 4 memories") {
		t.Fatalf("reply text: %q", reply.Content[0].Text)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestBackupConfigErrors(t *testing.T) {
	st := backupStore(t, 8)
	for _, c := range []BackupConfig{{}, {Dir: t.TempDir(), Schedule: "every day"}} {
		if _, err := NewBackup(st, nil, c, nil); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%+v: err %v", c, err)
		}
	}
}

// BenchmarkBackup100k writes a backup of 100,000 memories (texts of ~110
// characters, metadata) to disk, and to disk plus the Object Store: the
// budget is 5 s.
func BenchmarkBackup100k(b *testing.B) {
	if testing.Short() {
		b.Skip("100k memories")
	}
	const n = 100_000
	st := backupStore(b, 8)
	ms := make([]schemas.Memory, 0, 1000)
	for i := range n {
		ms = append(ms, schemas.Memory{ID: uuid.NewString(), Scope: "agent:main", Category: schemas.CategoryFact, Importance: 0.7,
			Text:      fmt.Sprintf("Memory %d: the user prefers dark mode in every editor, deploys with docker compose and drinks oolong tea daily.", i),
			Vector:    []float32{1, float32(i % 7), 0, 0, 0, 0, 0, 1},
			Timestamp: int64(1_700_000_000_000 + i), Metadata: json.RawMessage(`{"source":"auto-capture","session":"s1"}`)})
		if len(ms) == cap(ms) {
			if err := st.Import(context.Background(), ms...); err != nil {
				b.Fatal(err)
			}
			ms = ms[:0]
		}
	}
	for _, c := range []struct {
		name string
		js   jetstream.JetStream
	}{{"disk", nil}, {"disk+objectstore", backupJS(b)}} {
		b.Run(c.name, func(b *testing.B) {
			job, err := NewBackup(st, c.js, BackupConfig{Dir: b.TempDir()}, nil)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				res, err := job.RunOnce(context.Background())
				if err != nil || res.Count != n || (c.js != nil && !res.Uploaded) {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/backup")
		})
	}
}
