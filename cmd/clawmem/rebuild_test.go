package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/node"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
)

// The running store worker publishes every change (the memories of a store
// written before it started, then a forget) to the memory log, and
// `clawmem rebuild` builds an identical store from it.
func TestRebuildFromTheMemoryLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up in process")
	}
	dir := t.TempDir()
	seeded := seedStore(t, dir, 6)
	_, stop := serveInProcess(t, dir, node.RoleStore, node.RoleQuery)
	var gone string
	for id := range seeded {
		gone = id
		break
	}
	if code, out, errOut := runCLI(t, "--data-dir", dir, "forget", gone); code != 0 {
		t.Fatalf("forget: %d %s %s", code, out, errOut)
	}
	into := filepath.Join(t.TempDir(), "rebuilt")
	var rep memlog.RebuildReport
	waitUntil(t, 30*time.Second, func() error {
		code, out, errOut := runCLI(t, "--data-dir", dir, "--json", "rebuild", "--into", into)
		if code != 0 {
			return fmt.Errorf("rebuild: %s %s", out, errOut)
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			return err
		}
		if rep.Memories != 5 {
			return fmt.Errorf("rebuilt %d memories, want 5", rep.Memories)
		}
		return nil
	})
	if rep.LogSeq == 0 || rep.LogBytes == 0 {
		t.Fatalf("report: %+v", rep)
	}
	if code, _, errOut := runCLI(t, "--data-dir", dir, "rebuild", "--into", filepath.Join(dir, "store")); code != 1 || !strings.Contains(errOut, "is the store in use") {
		t.Fatalf("rebuild into the store in use: %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "--data-dir", dir, "rebuild"); code != 1 || !strings.Contains(errOut, "--into DIR") {
		t.Fatalf("rebuild without --into: %d %s", code, errOut)
	}
	// status: this instance writes every partition, and its query service
	// has the log.
	code, out, errOut := runCLI(t, "--data-dir", dir, "--json", "status")
	var st client.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st.Writers) != 1 || len(st.Writers[0].Partitions) != schemas.DefaultPartitions ||
		st.LogSeq < rep.LogSeq || len(st.Instances) != 1 {
		t.Fatalf("status: %d %s %s", code, out, errOut)
	}
	for _, in := range st.Instances {
		if in.Role != "writer" || in.Lag != 0 {
			t.Errorf("instance %+v: want the writer, with no lag", in)
		}
	}
	stop()

	open := func(d string) map[string]string {
		st, err := sqlitestore.Open(context.Background(), d, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		out := map[string]string{}
		for id, m := range storeContents(t, st) {
			out[id] = m.Text + "|" + m.Scope + "|" + string(m.Metadata)
		}
		return out
	}
	want, got := open(filepath.Join(dir, "store")), open(into)
	if len(want) != 5 || len(got) != len(want) {
		t.Fatalf("store %d memories, rebuilt %d", len(want), len(got))
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: store %q, rebuilt %q", id, w, got[id])
		}
	}
	if _, ok := got[gone]; ok {
		t.Error("the forgotten memory came back")
	}
	// With clawmem stopped, rebuild reads the data dir's NATS store.
	again := filepath.Join(t.TempDir(), "again")
	code, out, errOut = runCLI(t, "--data-dir", dir, "--json", "rebuild", "--into", again)
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Memories != 5 {
		t.Fatalf("rebuild with clawmem stopped: %d %s %s", code, out, errors.New(errOut))
	}
}
