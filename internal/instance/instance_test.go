package instance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// deadPID is the PID of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to run:", err)
	}
	return cmd.ProcessState.Pid()
}

// TestAwaitStart: a command waits while a live `clawmem up` is starting
// (its marker, no run file yet), until the run file appears or the marker
// goes; a marker of a dead process is ignored; a start that outlasts the
// bound is an error; past a second the wait says so, once.
func TestAwaitStart(t *testing.T) {
	write := func(dir, name string, v any) error {
		b, _ := json.Marshal(v)
		return os.WriteFile(filepath.Join(dir, name), b, 0o600)
	}
	cases := []struct {
		name     string
		marker   int           // PID in the marker; 0: none
		after    time.Duration // when the instance is up (or gone)
		ready    bool          // up: the run file is written; else the marker goes
		max      time.Duration
		wantErr  string
		minTook  time.Duration
		maxTook  time.Duration
		wantSlow bool
	}{
		{name: "nothing starting", max: time.Minute, maxTook: 100 * time.Millisecond},
		{name: "marker of a dead process", marker: -1, max: time.Minute, maxTook: 100 * time.Millisecond},
		{name: "up soon", marker: os.Getpid(), after: 300 * time.Millisecond, ready: true, max: time.Minute,
			minTook: 300 * time.Millisecond, maxTook: 900 * time.Millisecond},
		{name: "slow start is announced", marker: os.Getpid(), after: 1500 * time.Millisecond, ready: true, max: time.Minute,
			minTook: 1500 * time.Millisecond, maxTook: 3 * time.Second, wantSlow: true},
		{name: "start given up", marker: os.Getpid(), after: 300 * time.Millisecond, max: time.Minute,
			minTook: 300 * time.Millisecond, maxTook: 900 * time.Millisecond},
		{name: "still starting at the bound", marker: os.Getpid(), max: 1200 * time.Millisecond, wantErr: "still starting after 1.2s",
			minTook: 1200 * time.Millisecond, maxTook: 3 * time.Second, wantSlow: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pid := c.marker
			if pid == -1 {
				pid = deadPID(t)
			}
			if pid != 0 {
				if err := write(dir, StartingFile, startingMark{PID: pid}); err != nil {
					t.Fatal(err)
				}
			}
			if c.after > 0 {
				timer := time.AfterFunc(c.after, func() {
					if c.ready {
						if err := write(dir, RunFile, RunInfo{PID: pid}); err != nil {
							t.Error(err)
						}
					}
					os.Remove(filepath.Join(dir, StartingFile))
				})
				defer timer.Stop()
			}
			slow := 0
			start := time.Now()
			err := AwaitStart(context.Background(), dir, c.max, func() { slow++ })
			took := time.Since(start)
			if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err %v, want %q", err, c.wantErr)
			}
			if took < c.minTook || took > c.maxTook {
				t.Fatalf("took %v, want %v..%v", took, c.minTook, c.maxTook)
			}
			if (slow == 1) != c.wantSlow || slow > 1 {
				t.Fatalf("announced %d times", slow)
			}
		})
	}
}

// TestStartingMarker: Run's marker names this process until the run file
// is written, which removes it.
func TestStartingMarker(t *testing.T) {
	dir := t.TempDir()
	if err := MarkStarting(dir); err != nil {
		t.Fatal(err)
	}
	if got := StartingPID(dir); got != os.Getpid() {
		t.Fatalf("starting pid %d, want %d", got, os.Getpid())
	}
	if err := WriteRunInfo(dir, RunInfo{PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, StartingFile)); !os.IsNotExist(err) || !Running(dir) {
		t.Fatalf("after the run file: marker %v, running %v", err, Running(dir))
	}
}
