// Package jobs holds the scheduled jobs: backups (and restoring one) and
// consolidation. Each runs on its cron schedule until its context ends,
// one run at a time.
package jobs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/robfig/cron/v3"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/schemas"
)

// Backup file kinds. A backup is the seed's format (no vectors); a
// snapshot also carries every vector, so restoring it needs no embedder.
const (
	BackupKindBackup   = "backup"
	BackupKindSnapshot = "snapshot"
)

// BackupConfig tunes the backup job.
type BackupConfig struct {
	// Dir receives the backup files; required.
	Dir string
	// Schedule is a cron spec; default @daily. "off" leaves only the first
	// backup and requests.
	Schedule string
	// Keep is how many backups of each kind stay, on disk and in the
	// Object Store; default 7.
	Keep int
	// WithVectors also writes a snapshot with vectors.
	WithVectors bool
	// FirstDelay is when the first backup runs after start; default 1 min
	// (the seed's), negative: not before the schedule.
	FirstDelay time.Duration
	// Now is the clock naming the files; default time.Now.
	Now func() time.Time
}

func (c BackupConfig) withDefaults() BackupConfig {
	if c.Schedule == "" {
		c.Schedule = "@daily"
	}
	if c.Keep <= 0 {
		c.Keep = 7
	}
	if c.FirstDelay == 0 {
		c.FirstDelay = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Backup writes the store to JSONL files, atomically, keeps the newest
// few and copies each to the Object Store bucket schemas.BucketBackups.
type Backup struct {
	store engine.Store
	js    jetstream.JetStream
	cfg   BackupConfig
	log   *slog.Logger
	// mu makes runs one at a time: the schedule, the first run and
	// requests may meet, and they share the temp-file cleanup.
	mu sync.Mutex
	// wrap, for tests, stands between the encoder and the temp file; a
	// writer that fails is a disk that fills or a crash mid-write.
	wrap func(io.Writer) io.Writer
	// ready is closed once Run answers backup requests.
	ready chan struct{}
}

// Ready is closed once Run answers backup requests (at once without NATS).
func (b *Backup) Ready() <-chan struct{} { return b.ready }

// NewBackup checks cfg and builds the job. js may be nil: then there is
// no Object Store copy and no request endpoint.
func NewBackup(store engine.Store, js jetstream.JetStream, cfg BackupConfig, log *slog.Logger) (*Backup, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: backup directory is empty", schemas.ErrInvalid)
	}
	if cfg.Schedule != "off" {
		if _, err := cron.ParseStandard(cfg.Schedule); err != nil {
			return nil, fmt.Errorf("%w: backup schedule %q: %v", schemas.ErrInvalid, cfg.Schedule, err)
		}
	}
	if log == nil {
		log = slog.Default()
	}
	return &Backup{store: store, js: js, cfg: cfg, log: log.With("job", "backup"), ready: make(chan struct{})}, nil
}

// BackupResult is what one run did.
type BackupResult struct {
	Files    []BackupFile `json:"files"`
	Count    int          `json:"count"`
	Removed  []string     `json:"removed,omitempty"` // older backups deleted
	Uploaded bool         `json:"uploaded"`
	// UploadError says why the Object Store copy failed; the files on
	// disk are written all the same.
	UploadError string        `json:"uploadError,omitempty"`
	Duration    time.Duration `json:"duration"`
}

// Summary is a one-line account of the run.
func (r BackupResult) Summary() string {
	names := make([]string, len(r.Files))
	for i, f := range r.Files {
		names[i] = f.Path
	}
	s := fmt.Sprintf("backed up %d memories to %s", r.Count, strings.Join(names, ", "))
	switch {
	case r.Uploaded:
		s += " (copied to the Object Store " + schemas.BucketBackups + ")"
	case r.UploadError != "":
		s += "; the Object Store copy failed: " + r.UploadError
	}
	return s
}

// RunOnce writes a backup now (and a snapshot, WithVectors), removes old
// ones and uploads the new files. A file is written under a temporary name,
// synced and renamed into place, so a failure at any point leaves the
// earlier backups as they were and nothing partial under a backup's name.
func (b *Backup) RunOnce(ctx context.Context) (BackupResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := time.Now()
	var res BackupResult
	if err := os.MkdirAll(b.cfg.Dir, 0o700); err != nil {
		return res, fmt.Errorf("backup dir: %w", err)
	}
	b.removeStaleTemps()
	now := b.cfg.Now()
	kinds := []string{BackupKindBackup}
	if b.cfg.WithVectors {
		kinds = append(kinds, BackupKindSnapshot)
	}
	outs := make([]*pendingFile, len(kinds))
	defer func() {
		for _, o := range outs {
			if o != nil {
				o.abort()
			}
		}
	}()
	for i := range kinds {
		o, err := b.createPending()
		if err != nil {
			return res, err
		}
		outs[i] = o
	}
	// Rows are written as `clawmem export` writes them, so a backup is
	// also an export file any importer reads.
	var line []byte
	err := b.store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: b.cfg.WithVectors}, func(m schemas.Memory) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		for i, o := range outs {
			line = append(portable.AppendRow(line[:0], m, i == 1), '\n')
			if _, err := o.bw.Write(line); err != nil {
				return err
			}
		}
		res.Count++
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("write backup: %w", err)
	}
	for i, o := range outs {
		name := BackupFileName(kinds[i], now)
		size, err := o.commit(filepath.Join(b.cfg.Dir, name))
		outs[i] = nil
		if err != nil {
			return res, fmt.Errorf("write %s: %w", name, err)
		}
		res.Files = append(res.Files, BackupFile{Name: name, Path: filepath.Join(b.cfg.Dir, name), Kind: kinds[i],
			Date: now.UTC().Format(time.DateOnly), Size: size, Count: res.Count, Time: now})
	}
	removed, err := b.prune()
	res.Removed = removed
	if err != nil {
		return res, err
	}
	if b.js != nil {
		if err := b.upload(ctx, res.Files); err != nil {
			res.UploadError = err.Error()
			b.log.Warn("backup not copied to the Object Store; the files on disk are complete", "err", err)
		} else {
			res.Uploaded = true
		}
	}
	res.Duration = time.Since(start)
	return res, nil
}
