package main

import (
	"strings"
	"testing"
)

// The watcher-faults scenario against a real `clawmem up`: every entry
// written to the truncated, rotated, rewritten and deleted session files
// and the vacuumed, replaced and re-created database is published once,
// across a SIGKILL.
func TestChaosWatcher(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up for half a minute")
	}
	code, out, errOut := runCLI(t, "chaos", "watcher", "--bin", clawmemBinary(t), "--scratch", t.TempDir())
	t.Log(out)
	if code != 0 || !strings.Contains(out, "watcher faults") || !strings.Contains(out, " pass ") ||
		!strings.Contains(out, "0 missing, 0 dup; truncate 2, rotate 2, rewrite 2, delete 2, sqlite 3, kills 1") {
		t.Fatalf("clawmem chaos watcher: exit %d\n%s\n%s", code, out, errOut)
	}
}
