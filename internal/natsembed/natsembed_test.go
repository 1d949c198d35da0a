package natsembed

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The flush policy reaches JetStream: every write flushed, an interval,
// or the server's default.
func TestSync(t *testing.T) {
	for _, sync := range []Sync{{}, {Always: true}, {Interval: 250 * time.Millisecond}} {
		srv, err := Start(Options{StoreDir: t.TempDir(), Port: -1, Sync: sync})
		if err != nil {
			t.Fatal(err)
		}
		cfg := srv.JetStreamConfig()
		srv.Stop()
		if cfg == nil || cfg.SyncAlways != sync.Always || (sync.Interval != 0 && cfg.SyncInterval != sync.Interval) {
			t.Fatalf("sync %+v: JetStream runs with %+v", sync, cfg)
		}
	}
}

// A full disk fails JetStream's writes for good (its file store refuses
// every later write); once there is room again Guard restarts the server
// on the same port and writes succeed, with what was stored before kept.
// CheckDisk reports the full disk meanwhile. Needs root for the tmpfs.
func TestGuardRecoversFromAFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", "-l", mnt).Run()
	srv, err := Start(Options{StoreDir: filepath.Join(mnt, "js"), Port: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	url := srv.ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Guard(ctx, 100*time.Millisecond)
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
		t.Fatal(err)
	}
	pub := func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "s", make([]byte, 64<<10))
		return err
	}
	if err := pub(); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(mnt, "ballast")
	f, _ := os.Create(ballast)
	for {
		if _, err := f.Write(make([]byte, 1<<20)); err != nil {
			break
		}
	}
	f.Close()
	if !errors.Is(srv.CheckDisk(), ErrDiskFull) {
		t.Fatal("CheckDisk does not report the full disk")
	}
	failed := false
	for range 50 {
		if pub() != nil {
			failed = true
			break
		}
	}
	if !failed {
		t.Fatal("publishes kept succeeding on a full disk")
	}
	os.Remove(ballast)
	deadline := time.Now().Add(20 * time.Second)
	for pub() != nil {
		if time.Now().After(deadline) {
			t.Fatal("no publish succeeded within 20 s of space returning")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if srv.ClientURL() != url {
		t.Fatalf("restarted on %s, was %s", srv.ClientURL(), url)
	}
	s, err := js.Stream(ctx, "S")
	if err != nil || s.CachedInfo().State.Msgs < 2 {
		t.Fatalf("stream after the restart: %v %+v", err, s)
	}
}
