package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/instance"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/jobs"
)

// waitUntil polls fn until it returns nil or timeout passes.
func waitUntil(t *testing.T, timeout time.Duration, fn func() error) {
	t.Helper()
	testkit.WaitFor(t, timeout, fn)
}

// writeConfig writes dir's config.json: an embedded NATS on a free port, no
// session watcher, plus extra top-level keys (a JSON fragment, may be empty).
func writeConfig(t *testing.T, dir, extra string) {
	t.Helper()
	cfg := `{"nats":{"port":-1},"ingest":{"addr":"127.0.0.1:0"},"ui":{"listen":"127.0.0.1:0"},"watch":{"enabled":false}` + extra + `}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// serveInProcess runs `clawmem up`'s serve with roles on dir, in this
// process, until the test ends, and returns once it has written its run
// file. Its log goes to the returned buffer.
func serveInProcess(t *testing.T, dir string, roles ...string) (*testkit.Buffer, context.CancelFunc) {
	t.Helper()
	logs := &testkit.Buffer{}
	a := &app{dataDir: dir, stdout: io.Discard, stderr: logs}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.serve(ctx, "", roles, true) }()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
			done <- nil
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop:\n%s", logs.String())
		}
	}
	t.Cleanup(stop)
	waitUntil(t, 30*time.Second, func() error {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended: %v\n%s", err, logs.String())
		default:
		}
		if !instance.Running(dir) {
			return errors.New("no run file yet")
		}
		return nil
	})
	return logs, stop
}

// seedStore stores n memories in dir's store (nothing may run on it) and
// returns them as stored.
func seedStore(t *testing.T, dir string, n int) map[string]schemas.Memory {
	t.Helper()
	eng, st := openDirEngine(t, dir)
	defer st.Close()
	scopes := []string{"global", "agent:main"}
	half := 0.5
	for i := range n {
		_, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{
			Text:  fmt.Sprintf("Fact number %d: the staging database runs on host db-%d.internal", i, i),
			Scope: scopes[i%2], Importance: &half, Metadata: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}, memory.DedupTool)
		if err != nil {
			t.Fatal(err)
		}
	}
	return storeContents(t, st)
}

func storeContents(t *testing.T, st engine.Store) map[string]schemas.Memory {
	t.Helper()
	out := map[string]schemas.Memory{}
	err := st.Iterate(context.Background(), engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
		out[m.ID] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openedContents opens the store in dir and returns what it holds.
func openedContents(t *testing.T, dir string) map[string]schemas.Memory {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return storeContents(t, st)
}

func TestBackupNowListRestoreDirect(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "")
	seeded := seedStore(t, dir, 20)

	code, out, errOut := runCLI(t, "backup", "now", "--data-dir", dir, "--json")
	var res jobs.BackupResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("backup now: %d %s %s", code, out, errOut)
	}
	name := jobs.BackupFileName(jobs.BackupKindBackup, time.Now())
	if res.Count != 20 || len(res.Files) != 1 || res.Files[0].Path != filepath.Join(dir, "backups", name) || res.Uploaded {
		t.Fatalf("result %+v", res)
	}

	code, out, _ = runCLI(t, "backup", "list", "--data-dir", dir, "--json")
	var list struct {
		Local            []jobs.BackupFile
		ObjectStore      []jobs.BackupFile
		ObjectStoreError string
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		t.Fatalf("backup list: %d %s", code, out)
	}
	if len(list.Local) != 1 || list.Local[0].Name != name || list.Local[0].Count != 20 || len(list.ObjectStore) != 0 ||
		!strings.Contains(list.ObjectStoreError, "never ran") {
		t.Fatalf("list %+v", list)
	}
	code, out, _ = runCLI(t, "backup", "list", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, name) || !strings.Contains(out, "MEMORIES") {
		t.Fatalf("backup list: %s", out)
	}

	restored := filepath.Join(t.TempDir(), "store")
	code, out, errOut = runCLI(t, "backup", "restore", name, "--data-dir", dir, "--db", restored)
	if code != 0 || !strings.Contains(out, "expected 20 memories, restored 20") || !strings.Contains(out, "20 embedded") {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	portSame(t, seeded, openedContents(t, restored))

	// Into a store that is no longer empty: refused, nothing added.
	code, _, errOut = runCLI(t, "backup", "restore", filepath.Join(dir, "backups", name), "--data-dir", dir, "--db", restored)
	if code != 1 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("restore into a full store: %d %s", code, errOut)
	}
	if n := len(openedContents(t, restored)); n != 20 {
		t.Fatalf("the refused restore changed the store: %d memories", n)
	}
	for _, c := range []struct{ arg, want string }{
		{"memory-backup-1999-01-01.jsonl", "no such file"},
		{filepath.Join(dir, "nope.jsonl"), "no such file"},
	} {
		code, _, errOut = runCLI(t, "backup", "restore", c.arg, "--data-dir", dir, "--db", t.TempDir())
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Fatalf("restore %s: %d %s", c.arg, code, errOut)
		}
	}
}

func TestBackupSnapshotRestoreKeepsVectors(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, `,"jobs":{"backup":{"withVectors":true,"keep":3}}`)
	seeded := seedStore(t, dir, 5)
	code, out, errOut := runCLI(t, "backup", "now", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "backed up 5 memories") || !strings.Contains(out, "memory-snapshot-") {
		t.Fatalf("backup now: %d %s %s", code, out, errOut)
	}
	snap := filepath.Join(dir, "backups", jobs.BackupFileName(jobs.BackupKindSnapshot, time.Now()))
	restored := t.TempDir()
	code, out, errOut = runCLI(t, "backup", "restore", snap, "--data-dir", dir, "--db", restored, "--json")
	var rep struct {
		OK bool
		jobs.RestoreReport
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Restored != 5 || rep.VectorsKept != 5 || rep.Embedded != 0 {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	portSame(t, seeded, openedContents(t, restored))
}

func TestBackupThroughRunningInstance(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up in process")
	}
	dir := t.TempDir()
	writeConfig(t, dir, "")
	seeded := seedStore(t, dir, 12)
	_, stop := serveInProcess(t, dir, node.RoleStore, node.RoleQuery)

	code, out, errOut := runCLI(t, "backup", "now", "--data-dir", dir, "--json")
	var res jobs.BackupResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Count != 12 || !res.Uploaded {
		t.Fatalf("backup now: %d %s %s", code, out, errOut)
	}
	name := res.Files[0].Name
	// The running instance owns the store: a direct backup must say so.
	if code, _, errOut := runCLI(t, "backup", "now", "--data-dir", dir, "--db", filepath.Join(dir, "store")); code != 1 || !strings.Contains(errOut, "running") {
		t.Fatalf("direct backup of a running store: %d %s", code, errOut)
	}

	listed := func() (local, remote []jobs.BackupFile) {
		t.Helper()
		code, out, errOut := runCLI(t, "backup", "list", "--data-dir", dir, "--json")
		var list struct{ Local, ObjectStore []jobs.BackupFile }
		if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("backup list: %d %s %s", code, out, errOut)
		}
		return list.Local, list.ObjectStore
	}
	if local, remote := listed(); len(local) != 1 || len(remote) != 1 || remote[0].Name != name || remote[0].Count != 12 || remote[0].Size != local[0].Size {
		t.Fatalf("list: local %+v, object store %+v", local, remote)
	}

	// With the file gone, restore by name finds the Object Store copy.
	if err := os.Remove(res.Files[0].Path); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	code, out, errOut = runCLI(t, "backup", "restore", name, "--data-dir", dir, "--db", restored)
	if code != 0 || !strings.Contains(out, "nats:"+schemas.BucketBackups+"/"+name) || !strings.Contains(out, "expected 12 memories, restored 12") {
		t.Fatalf("restore from the Object Store: %d %s %s", code, out, errOut)
	}
	portSame(t, seeded, openedContents(t, restored))

	// Stopped, the data dir's NATS is started just to list the bucket.
	stop()
	if local, remote := listed(); len(local) != 0 || len(remote) != 1 || remote[0].Name != name {
		t.Fatalf("list after stop: local %+v, object store %+v", local, remote)
	}
}

// TestBackupRestoreKeepsHistory: a backup of a store with a superseded
// memory restores into an empty --db with equal counts (history counted
// on both sides), exit 0, and the two stores export the same rows.
func TestBackupRestoreKeepsHistory(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "")
	seeded := seedStore(t, dir, 4)
	var old string
	for id := range seeded {
		old = id
		break
	}
	eng, st := openDirEngine(t, dir)
	half := 0.5
	_, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{Text: "The staging database moved to host db-new.internal",
		Scope: seeded[old].Scope, Importance: &half, Supersedes: old}, memory.DedupTool)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(context.Background(), engine.AllScopes())
	st.Close()
	if err != nil || stats.Total != 4 || stats.History != 1 {
		t.Fatalf("before the backup: %+v %v", stats, err)
	}

	code, out, errOut := runCLI(t, "backup", "now", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "backed up 5 memories") {
		t.Fatalf("backup now: %d %s %s", code, out, errOut)
	}
	restored := filepath.Join(t.TempDir(), "store")
	code, out, errOut = runCLI(t, "backup", "restore", jobs.BackupFileName(jobs.BackupKindBackup, time.Now()),
		"--data-dir", dir, "--db", restored)
	if code != 0 || !strings.Contains(out, "expected 5 memories, restored 5") || errOut != "" {
		t.Fatalf("restore: %d %s %s", code, out, errOut)
	}
	export := func(db string) string {
		t.Helper()
		code, out, errOut := runCLI(t, "export", "--data-dir", dir, "--db", db)
		if code != 0 || strings.Count(out, "\n") != 5 {
			t.Fatalf("export %s: %d %s %s", db, code, out, errOut)
		}
		return out
	}
	if a, b := export(filepath.Join(dir, "store")), export(restored); a != b {
		t.Fatalf("exports differ:\n%s\n%s", a, b)
	}
	if !strings.Contains(export(restored), `"supersededBy"`) {
		t.Fatal("the restored export lacks the superseded row's successor")
	}
}
