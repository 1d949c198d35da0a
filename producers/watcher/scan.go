package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/clawmem/clawmem/schemas"
)

func (w *Watcher) agentsDir() string { return filepath.Join(w.cfg.StateDir, "agents") }

func (w *Watcher) sessionsDir(agent string) string {
	return filepath.Join(w.cfg.StateDir, "agents", agent, "sessions")
}

// open looks up the offsets bucket and the transcript stream the first
// time they are needed, so New does no I/O.
func (w *Watcher) open(ctx context.Context) error {
	if w.kv == nil {
		kv, err := w.js.KeyValue(ctx, schemas.BucketWatch)
		if err != nil {
			return fmt.Errorf("watcher: offsets bucket %s: %w (`clawmem up` creates it)", schemas.BucketWatch, err)
		}
		w.kv = kv
	}
	if w.stream == nil {
		s, err := w.js.Stream(ctx, schemas.StreamTranscripts)
		if err != nil {
			return fmt.Errorf("watcher: stream %s: %w (`clawmem up` creates it)", schemas.StreamTranscripts, err)
		}
		w.stream = s
	}
	return nil
}

// scanAll brings the watches up to date, then passes over every session
// file of every agent; files gone since the last scan are forgotten.
func (w *Watcher) scanAll(ctx context.Context) error {
	if err := w.open(ctx); err != nil {
		return err
	}
	// The agents directory is watched before it is listed: an agent
	// created in between is then either listed or seen as an event. (Listed
	// first, an agent created before the watch began went unseen until the
	// next rescan, an hour later by default.) Each agent's directories are
	// likewise watched before they are scanned.
	w.watchTop()
	agents, err := w.agentDirs()
	if err != nil {
		return err
	}
	if w.listed != nil {
		w.listed()
	}
	w.watchTree(agents)
	seen := make(map[string]bool)
	var errs []error
	for _, agent := range agents {
		if err := w.scanDir(ctx, agent, seen); err != nil {
			errs = append(errs, err)
		}
		if err := w.scanDB(ctx, agent); err != nil {
			errs = append(errs, err)
		}
	}
	w.agents = agents
	w.saveStatus(ctx)
	for path, t := range w.files {
		if !seen[path] {
			if err := w.vanished(ctx, t); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(append(errs, ctx.Err())...)
}

// agentDirs lists the agents under agents/, warning once about each
// directory whose name is not a valid agent id.
func (w *Watcher) agentDirs() ([]string, error) {
	dir := w.agentsDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list agents in %s: %w", dir, err)
	}
	var agents []string
	for _, e := range entries {
		if fi, err := os.Stat(filepath.Join(dir, e.Name())); err != nil || !fi.IsDir() {
			continue
		}
		if err := schemas.ValidateAgentID(e.Name()); err != nil {
			if !w.badAgents[e.Name()] {
				w.badAgents[e.Name()] = true
				w.log.Warn("agent directory skipped: its name is not a valid agent id", "dir", filepath.Join(dir, e.Name()), "err", err)
			}
			continue
		}
		agents = append(agents, e.Name())
	}
	return agents, nil
}

// scanDir passes over the session files of one agent, rotated files first
// so an old file is finished before the new one at its name starts.
func (w *Watcher) scanDir(ctx context.Context, agent string, seen map[string]bool) error {
	entries, err := os.ReadDir(w.sessionsDir(agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list sessions of %s: %w", agent, err)
	}
	var files []sessionFile
	for _, e := range entries {
		if sf, ok := parseFileName(e.Name()); ok && !e.IsDir() {
			files = append(files, sf)
		}
	}
	sortRotatedFirst(files)
	var errs []error
	for _, sf := range files {
		seen[filepath.Join(w.sessionsDir(agent), sf.Name)] = true
		if err := w.processFile(ctx, agent, sf); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sortRotatedFirst(files []sessionFile) {
	slices.SortFunc(files, func(a, b sessionFile) int {
		if a.rotated() != b.rotated() {
			if a.rotated() {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// processFile passes over one file unless it is unchanged since a pass
// that finished cleanly.
func (w *Watcher) processFile(ctx context.Context, agent string, sf sessionFile) error {
	path := filepath.Join(w.sessionsDir(agent), sf.Name)
	t := w.files[path]
	if t == nil {
		var err error
		if t, err = w.track(ctx, agent, sf); err != nil {
			return err
		}
		w.files[path] = t
	}
	if t.ignored {
		return nil
	}
	if t.clean {
		if fi, err := os.Stat(path); err == nil && statOf(fi) == t.seen {
			return nil
		}
	}
	if err := w.pass(ctx, t); err != nil {
		w.met.failures.Inc()
		return err
	}
	return nil
}

// watchTop watches agents/, or the state dir while agents/ does not exist
// (agents/ appearing is then an event). Like every watch, it is added
// before what it covers is listed, so nothing created in between is missed.
func (w *Watcher) watchTop() {
	top := w.agentsDir()
	if _, err := os.Stat(top); err != nil {
		top = w.cfg.StateDir
	}
	w.watch(top)
}

// watchTree watches each agent's directories: its own, sessions/ and the
// database's.
func (w *Watcher) watchTree(agents []string) {
	dirs := make([]string, 0, 3*len(agents))
	for _, agent := range agents {
		dirs = append(dirs, filepath.Join(w.agentsDir(), agent), w.sessionsDir(agent),
			filepath.Dir(w.dbPath(agent))) // the database and its -wal file change there
	}
	w.watch(dirs...)
}

// watch adds the fsnotify watches missing on dirs; a directory that does
// not exist (yet) is skipped: its parent's watch reports it appearing.
func (w *Watcher) watch(dirs ...string) {
	if w.fsw == nil {
		return
	}
	have := make(map[string]bool)
	for _, p := range w.fsw.WatchList() {
		have[p] = true
	}
	for _, d := range dirs {
		if have[d] {
			continue
		}
		if err := w.fsw.Add(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			w.log.Warn("cannot watch directory; relying on the rescan", "dir", d, "err", err)
		}
	}
}

// handleEvents passes over the session files the events name; an event
// about the directories above them triggers a full scan instead.
func (w *Watcher) handleEvents(ctx context.Context, events []fsnotify.Event) error {
	type fileRef struct {
		agent string
		sf    sessionFile
	}
	var files []fileRef
	seen := make(map[string]bool)
	dbAgents := make(map[string]bool)
	agents := w.agentsDir()
	for _, ev := range events {
		if ev.Op == fsnotify.Chmod {
			continue
		}
		dir := filepath.Dir(ev.Name)
		switch {
		case ev.Name == agents || dir == agents || filepath.Dir(dir) == agents:
			return w.scanAll(ctx)
		case filepath.Base(dir) == "agent" && filepath.Dir(filepath.Dir(dir)) == agents:
			if base := filepath.Base(ev.Name); base == OpenClawDBName || base == OpenClawDBName+"-wal" {
				dbAgents[filepath.Base(filepath.Dir(dir))] = true
			}
			continue
		case filepath.Base(dir) != "sessions" || filepath.Dir(filepath.Dir(dir)) != agents:
			continue
		}
		agent := filepath.Base(filepath.Dir(dir))
		sf, ok := parseFileName(filepath.Base(ev.Name))
		if !ok || seen[ev.Name] || schemas.ValidateAgentID(agent) != nil {
			continue
		}
		seen[ev.Name] = true
		files = append(files, fileRef{agent, sf})
	}
	slices.SortStableFunc(files, func(a, b fileRef) int {
		if a.sf.rotated() == b.sf.rotated() {
			return 0
		}
		if a.sf.rotated() {
			return -1
		}
		return 1
	})
	var errs []error
	for _, f := range files {
		if err := w.processFile(ctx, f.agent, f.sf); err != nil {
			errs = append(errs, err)
		}
	}
	for agent := range dbAgents {
		if schemas.ValidateAgentID(agent) != nil {
			continue
		}
		if err := w.scanDB(ctx, agent); err != nil {
			errs = append(errs, err)
		}
		w.dbRecheck[agent] = true
	}
	w.saveStatus(ctx)
	return errors.Join(errs...)
}
