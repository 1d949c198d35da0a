package natsembed

import (
	"testing"
	"time"
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
