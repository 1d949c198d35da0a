package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DiskOptions size the disk-full scenario.
type DiskOptions struct {
	SizeMB int           // the tmpfs the data dir lives on
	Events int           // events published while the disk is full and after
	Rate   float64       // events per second
	Full   time.Duration // how long the disk stays full
}

// DiskFull runs `clawmem up` with its data dir on a small tmpfs it mounts
// (root only; skipped otherwise), fills the filesystem with a ballast file
// while events are published, keeps it full for a while, then deletes the
// ballast. It passes when ingest refused events with 503 or 507 while
// full (nothing else), recall answered while full, clawmem up kept
// running, and after space returned every acknowledged event was stored
// exactly once, without a restart.
func DiskFull(ctx context.Context, env Env, o DiskOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "disk full"}
	if os.Geteuid() != 0 {
		r.Skipped = "needs root to mount a tmpfs for the data dir (run as root, or in a container that may mount)"
		return r, nil
	}
	dir, err := mkdirTemp(env.Scratch, "disk")
	if err != nil {
		return r, err
	}
	mnt := filepath.Join(dir, "fs")
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return r, err
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm", o.SizeMB), "tmpfs", mnt).CombinedOutput(); err != nil {
		r.Skipped = fmt.Sprintf("cannot mount a tmpfs: %v %s", err, strings.TrimSpace(string(out)))
		return r, nil
	}
	defer exec.Command("umount", "-l", mnt).Run()
	up, err := NewUp(env.Bin, filepath.Join(mnt, "data"), nil)
	if err != nil {
		return r, err
	}
	if err := os.MkdirAll(up.Dir, 0o700); err != nil {
		return r, err
	}
	nc, err := connect(ctx, up)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	pid := up.PID()

	load := NewLoad(up.Ingest(), o.Events, o.Rate, env.Seed)
	loadCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()
	time.Sleep(2 * time.Second)

	// Fill the filesystem.
	ballast := filepath.Join(mnt, "ballast")
	filled, err := fill(ballast)
	if err != nil {
		return r, fmt.Errorf("filling the disk: %w", err)
	}
	fullAt := time.Now()
	refusedBefore := load.Codes()["503"] + load.Codes()["507"]
	var fullRecall string
	deadline := fullAt.Add(o.Full)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		if fullRecall == "" {
			if mode, failed := recallOnce(ctx, nc, load.Text(0)); failed {
				r.fail("recall failed while the disk was full: %s", mode)
				fullRecall = "failed"
			} else {
				fullRecall = mode
			}
		}
	}
	codes := load.Codes()
	refused := codes["503"] + codes["507"] - refusedBefore
	if refused == 0 {
		r.fail("ingest refused nothing in %s with the disk full", o.Full)
	}
	if up.PID() != pid {
		r.fail("clawmem up exited with the disk full:\n%s", up.LastLines(60))
	}
	if err := os.Remove(ballast); err != nil {
		return r, err
	}
	freedAt := time.Now()
	<-loaded
	acked := time.Since(freedAt).Seconds()
	t, err := load.Settle(ctx, nc, 60*time.Second)
	if err != nil {
		r.fail("counting the store: %v\n%s", err, up.LastLines(80))
	}
	r.checkNoDLQ(ctx, nc, t)
	for code, n := range load.Codes() {
		if code != "202" && code != "503" && code != "507" && code != "no answer" {
			r.fail("ingest answered %d events with %s", n, code)
		}
	}
	if up.PID() != pid {
		r.fail("clawmem up exited after the space came back:\n%s", up.LastLines(80))
	} else if err := up.Stop(); err != nil {
		r.fail("graceful stop: %v", err)
	}
	restarts := strings.Count(up.Logs(), "restarting the embedded NATS server")
	r.Figures = map[string]any{"embeddedNATSRestarts": restarts, "tmpfsMB": o.SizeMB, "ballastMB": float64(filled) / (1 << 20), "fullSec": o.Full.Seconds(),
		"refused": refused, "answers": load.Codes(), "recallWhileFull": fullRecall, "allAckedSecAfterFree": acked}
	r.Summary = fmt.Sprintf("tmpfs %d MB filled (ballast %.0f MB) for %.0f s: %d events refused (%v), recall %s; space back: all acknowledged %.1f s later, without a restart (embedded NATS restarted by the disk guard %d×)",
		o.SizeMB, float64(filled)/(1<<20), o.Full.Seconds(), refused, load.Codes(), fullRecall, acked, restarts)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
		os.WriteFile(filepath.Join(dir, "clawmem-up.log"), []byte(up.Logs()), 0o600)
	}
	return r, nil
}

// fill writes zeros to path until the filesystem is full; it returns how
// much it wrote.
func fill(path string) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			// Take the last pages too.
			for err == nil || errors.Is(err, syscall.ENOSPC) && len(buf) > 512 {
				buf = buf[:len(buf)/2]
				w, err = f.Write(buf)
				n += int64(w)
			}
			return n, nil
		}
		if err != nil && !errors.Is(err, io.ErrShortWrite) {
			return n, err
		}
	}
}
