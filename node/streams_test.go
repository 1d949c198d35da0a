package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
)

// TestStreamAgesFollowTheConfig: the streams get the configured max ages,
// and a start with changed ages updates the streams that exist, messages
// kept; the cursors bucket's TTL follows the events' age.
func TestStreamAgesFollowTheConfig(t *testing.T) {
	ctx := context.Background()
	_, _, js := natsembed.StartTest(t)
	day := 24 * time.Hour
	load := func(body string) *config.Config {
		t.Helper()
		dir := t.TempDir()
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path, dir)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ages := func() map[string]time.Duration {
		t.Helper()
		out := map[string]time.Duration{}
		for _, name := range []string{schemas.StreamEvents, schemas.StreamTranscripts, schemas.StreamDLQ} {
			s, err := js.Stream(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = s.CachedInfo().Config.MaxAge
		}
		kv, err := js.KeyValue(ctx, schemas.BucketCursors)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out["cursors"] = st.TTL()
		return out
	}
	cases := []struct {
		name string
		body string
		want map[string]time.Duration
	}{
		{"defaults", `{}`, map[string]time.Duration{schemas.StreamEvents: 7 * day, schemas.StreamTranscripts: 30 * day, schemas.StreamDLQ: 30 * day, "cursors": 28 * day}},
		{"changed", `{"streams":{"events":{"maxAge":"36h"},"transcripts":{"maxAge":"400d"},"dlq":{"maxAge":"2d"}}}`,
			map[string]time.Duration{schemas.StreamEvents: 36 * time.Hour, schemas.StreamTranscripts: 400 * day, schemas.StreamDLQ: 2 * day, "cursors": 6 * day}},
		{"back to the defaults", `{}`, map[string]time.Duration{schemas.StreamEvents: 7 * day, schemas.StreamTranscripts: 30 * day, schemas.StreamDLQ: 30 * day, "cursors": 28 * day}},
	}
	for i, c := range cases {
		if err := topology.Ensure(ctx, js, TopologyConfig(load(c.body), nil)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if i == 0 {
			if _, err := js.Publish(ctx, schemas.EventSubject(schemas.KindAgentEnd, "main"), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		got := ages()
		for k, w := range c.want {
			if got[k] != w {
				t.Errorf("%s: %s max age %v, want %v", c.name, k, got[k], w)
			}
		}
	}
	s, err := js.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("the updates kept %d of 1 event", n)
	}
}
