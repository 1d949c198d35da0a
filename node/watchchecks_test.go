package node_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/node"
)

// Doctor's watcher line says why there is nothing to watch in a first
// user's terms: no OpenClaw state dir (shown as ~/.openclaw when it is the
// home's), or watching turned off; neither asks the running clawmem.
func TestWatchChecksSayWhyNothingIsWatched(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	on, off := true, false
	noDial := func() (*nats.Conn, error) {
		t.Fatal("dialled the running clawmem for a watcher with nothing to watch")
		return nil, nil
	}
	for _, c := range []struct {
		name string
		w    config.Watch
		want string
	}{
		{"no ~/.openclaw", config.Watch{Enabled: &on, StateDir: filepath.Join(home, ".openclaw")}, "no OpenClaw data dir at ~/.openclaw: nothing to watch"},
		{"elsewhere", config.Watch{Enabled: &on, StateDir: "/nonexistent/openclaw"}, "no OpenClaw data dir at /nonexistent/openclaw: nothing to watch"},
		{"off", config.Watch{Enabled: &off, StateDir: filepath.Join(home, ".openclaw")}, "off (watch.enabled is false)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checks := node.WatchChecks(context.Background(), c.w, noDial)
			if len(checks) != 1 || !checks[0].OK || !strings.HasPrefix(checks[0].Detail, c.want) {
				t.Fatalf("%+v, want one passing check saying %q", checks, c.want)
			}
		})
	}
}
