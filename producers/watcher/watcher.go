package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go/jetstream"
)

// maxEventBatch bounds how many queued file-system events are handled
// together; one append makes several.
const maxEventBatch = 1024

// Watcher follows OpenClaw's session files and publishes their messages
// to the TRANSCRIPTS stream. Create it with New and start it with Run.
type Watcher struct {
	cfg     Config
	js      jetstream.JetStream
	log     *slog.Logger
	met     *metrics
	running atomic.Bool

	// mu serialises scans and passes: Run's loop and Sync share the state
	// below.
	mu        sync.Mutex
	kv        jetstream.KeyValue
	stream    jetstream.Stream
	fsw       *fsnotify.Watcher // nil outside Run
	files     map[string]*tracked
	dbs       map[string]*trackedDB // OpenClaw SQLite databases, by path
	badAgents map[string]bool       // invalid agent directories already warned about
	statusSig string                // the sources last saved for doctor
	agents    []string              // the agents the last full scan found
	// dbRecheck holds the agents whose database changed: a commit becomes
	// visible a moment after the -wal write that woke the watcher, so they
	// are passed over again shortly after.
	dbRecheck map[string]bool
	// listed, when set (tests), runs each time a scan has listed the agents.
	listed func()
}

// New makes a Watcher publishing through js. It does no I/O: the offsets
// bucket (schemas.BucketWatch) and the TRANSCRIPTS stream, which
// topology.Ensure creates, are looked up on the first scan.
func New(cfg Config, js jetstream.JetStream, log *slog.Logger) (*Watcher, error) {
	if js == nil {
		return nil, errors.New("watcher: no JetStream context")
	}
	if log == nil {
		log = slog.Default()
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Watcher{
		cfg: cfg, js: js, log: log.With("component", "watcher"), met: newMetrics(cfg.Registerer, log),
		files: make(map[string]*tracked), dbs: make(map[string]*trackedDB), dbRecheck: make(map[string]bool), badAgents: make(map[string]bool),
	}, nil
}

// StateDir is the OpenClaw state directory being watched, resolved.
func (w *Watcher) StateDir() string { return w.cfg.StateDir }

// Run watches until ctx ends. Work in hand when it ends is finished: an
// entry being published is acknowledged and every offset reached is
// stored. A scan that fails (JetStream unavailable) is logged and retried
// on the next event or rescan; Run returns an error only when it cannot
// watch at all.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watcher: already running")
	}
	defer w.running.Store(false)
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watcher: fsnotify: %w", err)
	}
	w.mu.Lock()
	w.fsw = fsw
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.flush(ctx)
		for _, t := range w.dbs {
			w.closeDB(t)
		}
		if err := fsw.Close(); err != nil {
			w.log.Warn("closing fsnotify", "err", err)
		}
		w.fsw = nil
	}()
	w.log.Info("watching OpenClaw transcripts: agents/*/agent/"+OpenClawDBName+" (OpenClaw ≥ 2026.7) and agents/*/sessions/*.jsonl (older)",
		"dir", w.agentsDir(), "rescan", w.cfg.Rescan)
	w.locked(ctx, "initial scan", w.scanAll)
	return w.loop(ctx, fsw)
}

// loop handles events, errors and rescans until ctx ends.
func (w *Watcher) loop(ctx context.Context, fsw *fsnotify.Watcher) error {
	tick := time.NewTicker(w.cfg.Rescan)
	defer tick.Stop()
	var recheck <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			w.log.Info("watcher stopped")
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return errors.New("watcher: fsnotify stopped")
			}
			batch := collect(fsw, ev)
			w.locked(ctx, "event", func(ctx context.Context) error { return w.handleEvents(ctx, batch) })
			if recheck == nil && w.recheckPending() {
				recheck = time.After(dbRecheckDelay)
			}
		case <-recheck:
			recheck = nil
			w.locked(ctx, "database recheck", w.recheckDBs)
		case err, ok := <-fsw.Errors:
			if !ok {
				return errors.New("watcher: fsnotify stopped")
			}
			w.log.Warn("file-system events may have been lost; rescanning", "err", err)
			w.locked(ctx, "rescan", w.scanAll)
		case <-tick.C:
			w.locked(ctx, "rescan", w.scanAll)
		}
	}
}

// collect adds the events already queued behind first.
func collect(fsw *fsnotify.Watcher, first fsnotify.Event) []fsnotify.Event {
	batch := []fsnotify.Event{first}
	for len(batch) < maxEventBatch {
		select {
		case ev, ok := <-fsw.Events:
			if !ok {
				return batch
			}
			batch = append(batch, ev)
		default:
			return batch
		}
	}
	return batch
}

// locked runs fn under mu and logs its error; a shutdown is not one.
func (w *Watcher) locked(ctx context.Context, what string, fn func(context.Context) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := fn(ctx); err != nil && ctx.Err() == nil {
		w.log.Warn(what+" failed; retrying on the next event or rescan", "err", err)
	}
}

// flush stores every offset reached but not yet stored.
func (w *Watcher) flush(ctx context.Context) {
	if w.kv == nil {
		return
	}
	for _, t := range w.files {
		if err := w.commit(ctx, t); err != nil {
			w.log.Warn("offset not stored at shutdown; its entries will be deduplicated when published again",
				"file", t.rel, "err", err)
		}
	}
}

// Sync passes over every session file once, publishing whatever is new,
// and returns when that is done, with the errors met. It may run with or
// without Run; tests use it to wait until the watcher has caught up.
func (w *Watcher) Sync(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scanAll(ctx)
}
