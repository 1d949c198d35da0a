package watcher

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/engine/redact"
)

// Config configures a Watcher.
type Config struct {
	// StateDir is OpenClaw's state directory; default
	// distill.DefaultStateDir() ($OPENCLAW_STATE_DIR, else ~/.openclaw).
	StateDir string
	// Rescan is how often every session file is checked without waiting
	// for a file-system event: the safety net for missed events, and the
	// poll for an agents directory that does not exist yet. Default 2 s.
	Rescan time.Duration
	// Timeout bounds one publish or offset write; default 5 s.
	Timeout time.Duration
	// CommitEvery is how many entries a long read publishes between two
	// offset writes; default 256.
	CommitEvery int
	// RegrowWait is how long a session file shorter than what was already
	// published is given to grow back to those same bytes (a rewrite in
	// place passes through a short file) before it is read again from the
	// start as a new file. Default 1 s.
	RegrowWait time.Duration
	// Registerer receives the watcher's metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
	// Secrets (secrets.mode): unless off, each entry's text is published
	// with its credentials redacted, so the transcripts stream never
	// holds one. Default redact.
	Secrets redact.Mode
}

func (c Config) withDefaults() (Config, error) {
	if c.StateDir == "" {
		dir, err := distill.DefaultStateDir()
		if err != nil {
			return c, err
		}
		c.StateDir = dir
	}
	dir, err := filepath.Abs(distill.ExpandHome(c.StateDir))
	if err != nil {
		return c, fmt.Errorf("watcher: state dir %q: %w", c.StateDir, err)
	}
	c.StateDir = dir
	if c.Rescan <= 0 {
		c.Rescan = 2 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	if c.CommitEvery <= 0 {
		c.CommitEvery = 256
	}
	if c.RegrowWait <= 0 {
		c.RegrowWait = time.Second
	}
	return c, nil
}
