// Package instance finds the `clawmem up` that runs on a data dir and
// connects to it: the run file the instance writes once it is up, the
// marker it keeps while it starts, and a NATS connection with the data
// dir's credentials. node writes these files; the front ends read them.
// It is a package of its own so that a front end finding an instance does
// not link the node that runs one.
package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// RunFile records how to reach a running `clawmem up`, so other clawmem
// commands with the same data dir find it without flags.
const RunFile = "run.json"

// RunInfo is RunFile's content.
type RunInfo struct {
	PID       int    `json:"pid"`
	NATSURL   string `json:"natsUrl"`
	IngestURL string `json:"ingestUrl,omitempty"`
	// URLs are the services' addresses by name (the console's).
	URLs    map[string]string `json:"urls,omitempty"`
	Started string            `json:"started"`
}

// StartingFile marks a `clawmem up` on the data dir that has not written
// its run file yet. It is written before anything else, so that other
// commands wait for the instance instead of opening its store directly.
const StartingFile = "starting"

// startingMark is StartingFile's content.
type startingMark struct {
	PID   int    `json:"pid"`
	Since string `json:"since"`
}

// Running reports a live `clawmem up` on dataDir.
func Running(dataDir string) bool {
	info, ok := ReadRunInfo(dataDir)
	return ok && info.PID > 0 && ProcessAlive(info.PID)
}

// ReadRunInfo reads the run file of the `clawmem up` on dataDir; false
// when there is none, or it does not decode.
func ReadRunInfo(dataDir string) (RunInfo, bool) {
	var info RunInfo
	b, err := os.ReadFile(filepath.Join(dataDir, RunFile))
	return info, err == nil && json.Unmarshal(b, &info) == nil
}

// WriteRunInfo writes dir's run file, then removes this process's
// StartingFile: the instance is up.
func WriteRunInfo(dir string, info RunInfo) error {
	b, _ := json.MarshalIndent(info, "", "  ")
	tmp := filepath.Join(dir, RunFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, RunFile)); err != nil {
		return err
	}
	// The marker goes only once the run file is there: a command reading
	// the marker and then the run file never misses the instance.
	UnmarkStarting(dir)
	return nil
}

// MarkStarting writes this process's StartingFile on dir.
func MarkStarting(dir string) error {
	b, _ := json.Marshal(startingMark{PID: os.Getpid(), Since: time.Now().UTC().Format(time.RFC3339)})
	tmp := filepath.Join(dir, StartingFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, StartingFile))
}

// UnmarkStarting removes dir's StartingFile if this process wrote it.
func UnmarkStarting(dir string) {
	if StartingPID(dir) == os.Getpid() {
		os.Remove(filepath.Join(dir, StartingFile))
	}
}

// StartingPID is the PID of a `clawmem up` starting on dataDir: 0 when
// none is, or the marker's process is gone (a crash during start-up).
func StartingPID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, StartingFile))
	var m startingMark
	if err != nil || json.Unmarshal(b, &m) != nil || m.PID <= 0 || !ProcessAlive(m.PID) {
		return 0
	}
	return m.PID
}

// startPoll is how often AwaitStart looks again.
const startPoll = 50 * time.Millisecond

// AwaitStart waits while a `clawmem up` is starting on dataDir, until it
// runs (its run file is written) or gives up (its process ends, or it
// removes its marker), for at most max. slow, when set, is called once
// when the wait passes a second. An instance still starting after max
// is an error.
func AwaitStart(ctx context.Context, dataDir string, max time.Duration, slow func()) error {
	pid := StartingPID(dataDir)
	if pid == 0 {
		return nil
	}
	start := time.Now()
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		// The run file is written before the marker goes: read in this
		// order, a ready instance is never missed.
		if Running(dataDir) || StartingPID(dataDir) == 0 {
			return nil
		}
		waited := time.Since(start)
		if waited >= max {
			return fmt.Errorf("clawmem (pid %d) on %s is still starting after %v; try again once it is up (its log says what it is doing), or remove %s if no clawmem runs",
				pid, dataDir, max, filepath.Join(dataDir, StartingFile))
		}
		if slow != nil && waited >= time.Second {
			slow()
			slow = nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
