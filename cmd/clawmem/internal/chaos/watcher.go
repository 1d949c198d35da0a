package chaos

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite" // OpenClaw's database, written as OpenClaw writes it

	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/testkit/openclawdb"
	"github.com/clawmem/clawmem/producers/watcher"
	"github.com/clawmem/clawmem/schemas"
)

// WatcherOptions size the watcher-faults scenario.
type WatcherOptions struct {
	// Files is how many JSONL session files are written at once; file i
	// suffers the faults of kind i mod 4 (truncate, rotate, rewrite,
	// delete). Default 4.
	Files int
	// Entries is how many entries each file, and the SQLite database, is
	// given, one per round of appends (at least 16). Default 80.
	Entries int
	// Every is the pause between two rounds of appends. Default 150 ms.
	Every time.Duration
}

func (o WatcherOptions) withDefaults() WatcherOptions {
	if o.Files <= 0 {
		o.Files = 4
	}
	if o.Entries <= 0 {
		o.Entries = 80
	}
	// Each fault needs a round of its own, and appends around it.
	o.Entries = max(o.Entries, 16)
	if o.Every <= 0 {
		o.Every = 150 * time.Millisecond
	}
	return o
}

// The kinds of fault, each an entry's label in the tally.
const (
	faultTruncate = "truncate"
	faultRotate   = "rotate"
	faultRewrite  = "rewrite"
	faultDelete   = "delete"
	faultSQLite   = "sqlite"
)

// fileFaults are the faults of the JSONL files, file i taking kind i mod 4.
var fileFaults = []string{faultTruncate, faultRotate, faultRewrite, faultDelete}

// watchAgent is the agent whose transcripts the scenario writes.
const watchAgent = "main"

// WatcherFaults writes OpenClaw session files and an OpenClaw SQLite
// transcript database that a real `clawmem up` follows, while truncating,
// rotating, atomically rewriting and deleting the files, and vacuuming,
// replacing and re-creating the database, with one SIGKILL and restart of
// clawmem up in the middle. Then every entry written must be in the
// TRANSCRIPTS stream exactly once.
//
// A file or database is deleted only once the watcher has published all of
// it: what is removed before it was read cannot be published by anyone.
func WatcherFaults(ctx context.Context, env Env, o WatcherOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "watcher faults"}
	o = o.withDefaults()
	up, nc, err := env.start(ctx, "watcher", nil)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return r, err
	}
	w := &watchRun{
		js: js, r: &r, rng: rand.New(rand.NewPCG(env.Seed, 23)),
		dir:    filepath.Join(up.StateDir(), "agents", watchAgent, "sessions"),
		wrote:  make(map[string]wrote),
		faults: make(map[string]int),
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return r, err
	}
	files := make([]*jsonlFile, o.Files)
	for i := range files {
		if files[i], err = w.newJSONL(fileFaults[i%len(fileFaults)]); err != nil {
			return r, err
		}
	}
	db, err := w.newDB(filepath.Join(up.StateDir(), "agents", watchAgent, "agent", watcher.OpenClawDBName))
	if err != nil {
		return r, err
	}
	defer db.close()

	// Faults at a quarter and three quarters of the appends, the kill at
	// half, the database's re-creation at seven eighths; the appends go on
	// while clawmem is down.
	round1, kill, round2, recreate := o.Entries/4, o.Entries/2, 3*o.Entries/4, 7*o.Entries/8
	var restarted chan error
	joinRestart := func() error {
		if restarted == nil {
			return nil
		}
		err := <-restarted
		restarted = nil
		if err != nil {
			return fmt.Errorf("restart after the kill: %w", err)
		}
		return nil
	}
	// A restart under way ends before up.Kill runs, or it would leave a
	// clawmem up behind.
	defer joinRestart()
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for i := range o.Entries {
		for _, f := range files {
			if err := w.appendEntry(f); err != nil {
				return r, err
			}
		}
		if err := w.addRow(db); err != nil {
			return r, err
		}
		switch i {
		case round1, round2:
			if err := joinRestart(); err != nil {
				return r, err
			}
			for j, f := range files {
				if files[j], err = w.fault(ctx, f, i == round2); err != nil {
					return r, fmt.Errorf("%s %s: %w", f.kind, filepath.Base(f.path), err)
				}
			}
			faultDB := db.vacuum
			if i == round2 {
				faultDB = db.replace
			}
			if err := faultDB(); err != nil {
				return r, fmt.Errorf("sqlite: %w", err)
			}
			w.faults[faultSQLite]++
		case kill:
			up.Kill()
			w.kills++
			restarted = make(chan error, 1)
			go func() {
				time.Sleep(3 * o.Every)
				restarted <- up.Start(ctx)
			}()
		case recreate:
			if err := w.recreateDB(ctx, db); err != nil {
				return r, fmt.Errorf("sqlite re-creation: %w", err)
			}
			w.faults[faultSQLite]++
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-tick.C:
		}
	}
	if err := joinRestart(); err != nil {
		return r, err
	}

	t, err := w.settle(ctx)
	if err != nil {
		r.fail("reading the stream: %v", err)
	}
	w.report(t)
	if err := up.Stop(); err != nil {
		r.fail("graceful stop after the faults: %v", err)
	}
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	return r, nil
}

// watchRun is the scenario's writer: what it wrote, and where.
type watchRun struct {
	js     jetstream.JetStream
	r      *Result
	rng    *rand.Rand
	dir    string           // the agent's sessions directory
	wrote  map[string]wrote // by marker
	n      int              // entries made
	faults map[string]int
	kills  int
}

// wrote is one entry written: the fault its file suffered, its session.
type wrote struct{ Kind, Session string }

// markerRE finds the marker that names an entry in its text.
var markerRE = regexp.MustCompile(`\bwf\d{6}\b`)

// entry makes the next message entry of session, user and assistant in
// turn as OpenClaw writes them, its text starting with a unique marker.
func (w *watchRun) entry(kind, session string) map[string]any {
	i := w.n
	w.n++
	marker := fmt.Sprintf("wf%06d", i)
	w.wrote[marker] = wrote{Kind: kind, Session: session}
	text := marker + " " + testkit.Sentence(w.rng, i)
	role, content := "user", any(text)
	if i%2 == 1 {
		role, content = "assistant", []any{map[string]any{"type": "text", "text": text}}
	}
	ts := time.Now().UnixMilli()
	return map[string]any{"type": "message", "id": fmt.Sprintf("%08x", w.rng.Uint32()), "parentId": nil,
		"timestamp": time.UnixMilli(ts).UTC().Format("2006-01-02T15:04:05.000Z"),
		"message":   map[string]any{"role": role, "content": content, "timestamp": ts}}
}

// sessionID makes an OpenClaw session id (a UUID) from the run's seed.
func (w *watchRun) sessionID() string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", w.rng.Uint32(), w.rng.Uint32()&0xffff, w.rng.Uint32()&0xfff,
		w.rng.Uint32()&0xfff, w.rng.Uint64()&0xffffffffffff)
}

func header(session string) map[string]any {
	return map[string]any{"type": "session", "version": 3, "id": session,
		"timestamp": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "cwd": "/home/u/project"}
}

func jsonLine(v map[string]any) string {
	b, _ := json.Marshal(v) // maps of strings and numbers always encode
	return string(b) + "\n"
}

// jsonlFile is a session file being written, as OpenClaw appends to it.
type jsonlFile struct {
	kind, session, path string
	lines               []string // what the file holds now
}

// newJSONL starts a file for a new session: its header line.
func (w *watchRun) newJSONL(kind string) (*jsonlFile, error) {
	s := w.sessionID()
	f := &jsonlFile{kind: kind, session: s, path: filepath.Join(w.dir, s+".jsonl")}
	return f, f.write(jsonLine(header(s)))
}

// write appends lines to the file.
func (f *jsonlFile) write(lines ...string) error {
	h, err := os.OpenFile(f.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = h.WriteString(strings.Join(lines, ""))
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		f.lines = append(f.lines, lines...)
	}
	return err
}

func (w *watchRun) appendEntry(f *jsonlFile) error {
	return f.write(jsonLine(w.entry(f.kind, f.session)))
}

// fault does to f what its kind says; second is the second round. It
// returns the file to go on writing.
func (w *watchRun) fault(ctx context.Context, f *jsonlFile, second bool) (*jsonlFile, error) {
	w.faults[f.kind]++
	switch f.kind {
	case faultTruncate:
		if second {
			return f, w.truncateAnew(ctx, f)
		}
		return f, f.truncateRewrite()
	case faultRotate:
		return f, f.rotate()
	case faultRewrite:
		return f, w.rewrite(f)
	default:
		return w.remove(ctx, f)
	}
}

// truncateRewrite cuts the file to nothing and writes its lines back in
// three pieces, cut mid-line, as a rewrite in place does: the watcher may
// look at it in between. Nothing of it is new.
func (f *jsonlFile) truncateRewrite() error {
	h, err := os.OpenFile(f.path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	defer h.Close()
	all := strings.Join(f.lines, "")
	for _, piece := range []string{all[:len(all)/3], all[len(all)/3 : 2*len(all)/3], all[2*len(all)/3:]} {
		time.Sleep(50 * time.Millisecond)
		if _, err := h.WriteString(piece); err != nil {
			return err
		}
	}
	return h.Close()
}

// truncateAnew cuts the file, once the watcher has read it, and starts it
// over with the same session's header: what follows is new.
func (w *watchRun) truncateAnew(ctx context.Context, f *jsonlFile) error {
	w.caughtUp(ctx, f.session)
	if err := os.Truncate(f.path, 0); err != nil {
		return err
	}
	f.lines = nil
	return f.write(jsonLine(header(f.session)))
}

// rotate renames the file as OpenClaw's /new does and goes on with the
// session in a new file at its name.
func (f *jsonlFile) rotate() error {
	to := f.path + ".reset." + time.Now().UTC().Format("2006-01-02T15-04-05.000Z")
	if err := os.Rename(f.path, to); err != nil {
		return err
	}
	f.lines = nil
	return f.write(jsonLine(header(f.session)))
}

// rewrite replaces the file atomically, as editors and a compaction do, by
// a copy holding its lines and three new entries.
func (w *watchRun) rewrite(f *jsonlFile) error {
	lines := slices.Clone(f.lines)
	for range 3 {
		lines = append(lines, jsonLine(w.entry(f.kind, f.session)))
	}
	tmp := filepath.Join(filepath.Dir(f.path), "."+filepath.Base(f.path)+".tmp")
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "")), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, f.path); err != nil {
		return err
	}
	f.lines = lines
	return nil
}

// remove deletes the file once the watcher has read it, and starts a new
// session in a new file.
func (w *watchRun) remove(ctx context.Context, f *jsonlFile) (*jsonlFile, error) {
	w.caughtUp(ctx, f.session)
	if err := os.Remove(f.path); err != nil {
		return nil, err
	}
	return w.newJSONL(f.kind)
}

// ocDB is an OpenClaw SQLite transcript database being written, in WAL
// mode, one session at a time.
type ocDB struct {
	path    string
	db      *sql.DB
	created int64 // schema_meta's created_at: the database's identity
	session string
	seq     int
}

// newDB creates the database with a new session.
func (w *watchRun) newDB(path string) (*ocDB, error) {
	d := &ocDB{path: path}
	return d, w.createDB(d)
}

func (w *watchRun) createDB(d *ocDB) error {
	if err := os.MkdirAll(filepath.Dir(d.path), 0o700); err != nil {
		return err
	}
	if err := d.open(); err != nil {
		return err
	}
	d.created = max(time.Now().UnixMilli(), d.created+1)
	if err := openclawdb.Create(d.db, watchAgent, d.created); err != nil {
		return err
	}
	d.session, d.seq = w.sessionID(), 0
	if _, err := d.db.Exec(`INSERT INTO session_windows VALUES (?, 'agent:main:main', ?, ?)`, d.session, d.created, d.created); err != nil {
		return err
	}
	return d.insert(header(d.session))
}

func (d *ocDB) open() error {
	db, err := sql.Open("sqlite", "file:"+d.path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	d.db = db
	return nil
}

func (d *ocDB) close() {
	if d.db != nil {
		d.db.Close()
		d.db = nil
	}
}

func (d *ocDB) insert(event map[string]any) error {
	b, err := json.Marshal(event)
	if err != nil {
		return err
	}
	_, err = d.db.Exec(`INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)`,
		d.session, d.seq, string(b), time.Now().UnixMilli())
	d.seq++
	return err
}

func (w *watchRun) addRow(d *ocDB) error { return d.insert(w.entry(faultSQLite, d.session)) }

// vacuum rebuilds the database file in place.
func (d *ocDB) vacuum() error {
	_, err := d.db.Exec(`VACUUM`)
	return err
}

// replace rewrites the database into a copy and renames the copy over it,
// as a restore or an offline compaction does; the old WAL goes with the
// old file.
func (d *ocDB) replace() error {
	tmp := d.path + ".rewrite"
	os.Remove(tmp)
	if _, err := d.db.Exec(`VACUUM INTO ?`, tmp); err != nil {
		return err
	}
	if _, err := d.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return err
	}
	d.close()
	if err := os.Rename(tmp, d.path); err != nil {
		return err
	}
	for _, f := range []string{d.path + "-wal", d.path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return d.open()
}

// recreateDB deletes the database, once the watcher has read it, and
// creates a new one with a new session.
func (w *watchRun) recreateDB(ctx context.Context, d *ocDB) error {
	w.caughtUp(ctx, d.session)
	d.close()
	for _, f := range []string{d.path, d.path + "-wal", d.path + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return w.createDB(d)
}

// caughtUp waits until every entry written to session is in the stream;
// after 20 s it records the failure and lets the fault go ahead.
func (w *watchRun) caughtUp(ctx context.Context, session string) {
	want := 0
	for _, e := range w.wrote {
		if e.Session == session {
			want++
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		seen, err := readSightings(ctx, w.js, schemas.TranscriptSubject(watchAgent, session))
		if err == nil {
			got := make(map[string]bool)
			for _, s := range seen {
				if w.wrote[s.Marker].Session == session {
					got[s.Marker] = true
				}
			}
			if len(got) >= want {
				return
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			w.r.fail("session %s not all published within 20 s (so it was deleted or cut with entries unread)", session)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sighting is one entry found in the stream.
type sighting struct {
	Marker, Session string
}

// readSightings reads the stream's entries on subjects matching filter.
func readSightings(ctx context.Context, js jetstream.JetStream, filter string) ([]sighting, error) {
	s, err := js.Stream(ctx, schemas.StreamTranscripts)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	if n == 0 {
		return nil, nil
	}
	c, err := js.OrderedConsumer(ctx, schemas.StreamTranscripts, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, err
	}
	out := make([]sighting, 0, n)
	for uint64(len(out)) < n {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return out, fmt.Errorf("entry %d of %d: %w", len(out)+1, n, err)
		}
		var e schemas.TranscriptEntry
		if err := json.Unmarshal(m.Data(), &e); err != nil {
			return out, fmt.Errorf("entry %d: %w", len(out)+1, err)
		}
		out = append(out, sighting{Marker: markerRE.FindString(e.Text), Session: e.SessionID})
	}
	return out, nil
}

// settle reads the stream until it stops changing: 3 s when every entry
// is there (a late duplicate would still show), 10 s while some are
// missing, at most a minute.
func (w *watchRun) settle(ctx context.Context) (watchTally, error) {
	deadline := time.Now().Add(time.Minute)
	var last watchTally
	var lastErr error
	lastN, changed := -1, time.Now()
	for {
		seen, err := readSightings(ctx, w.js, schemas.TranscriptsSubject)
		lastErr = err
		if err == nil {
			last = tallyWatch(w.wrote, seen)
			if len(seen) != lastN {
				lastN, changed = len(seen), time.Now()
			}
			quiet := 10 * time.Second
			if last.Missing == 0 {
				quiet = 3 * time.Second
			}
			if time.Since(changed) >= quiet {
				return last, nil
			}
		}
		if time.Now().After(deadline) {
			return last, lastErr
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// watchCount is what became of the entries written, of one fault kind or
// all.
type watchCount struct {
	Written   int `json:"written"`
	Published int `json:"published"` // distinct entries in the stream
	Once      int `json:"once"`      // entries in the stream exactly once
	Missing   int `json:"missing"`
	Dup       int `json:"dup"` // entries in the stream more than once
}

// watchTally is the stream's content against what was written.
type watchTally struct {
	watchCount
	ByKind map[string]*watchCount `json:"byKind"`
	// MissingIDs and DupIDs are the markers of the entries missing and
	// duplicated, sorted.
	MissingIDs []string `json:"-"`
	DupIDs     []string `json:"-"`
	// Foreign counts entries whose marker was never written (or that have
	// none); WrongSession those published under another session than the
	// one written.
	Foreign      int `json:"foreign"`
	WrongSession int `json:"wrongSession"`
}

// tallyWatch counts, for every entry written, how often it is in seen.
func tallyWatch(written map[string]wrote, seen []sighting) watchTally {
	t := watchTally{ByKind: make(map[string]*watchCount)}
	times := make(map[string]int)
	for _, s := range seen {
		e, ok := written[s.Marker]
		switch {
		case !ok:
			t.Foreign++
			continue
		case s.Session != e.Session:
			t.WrongSession++
		}
		times[s.Marker]++
	}
	for marker, e := range written {
		k := t.ByKind[e.Kind]
		if k == nil {
			k = &watchCount{}
			t.ByKind[e.Kind] = k
		}
		n := times[marker]
		for _, c := range []*watchCount{&t.watchCount, k} {
			c.Written++
			switch {
			case n == 0:
				c.Missing++
			case n == 1:
				c.Published++
				c.Once++
			default:
				c.Published++
				c.Dup++
			}
		}
		switch {
		case n == 0:
			t.MissingIDs = append(t.MissingIDs, marker)
		case n > 1:
			t.DupIDs = append(t.DupIDs, marker)
		}
	}
	slices.Sort(t.MissingIDs)
	slices.Sort(t.DupIDs)
	return t
}

// report fills the result from the tally.
func (w *watchRun) report(t watchTally) {
	r := w.r
	kinds := append(slices.Clone(fileFaults), faultSQLite)
	for _, kind := range kinds {
		k := t.ByKind[kind]
		if k == nil {
			continue
		}
		var missing, dup []string
		for _, m := range t.MissingIDs {
			if w.wrote[m].Kind == kind {
				missing = append(missing, m)
			}
		}
		for _, m := range t.DupIDs {
			if w.wrote[m].Kind == kind {
				dup = append(dup, m)
			}
		}
		if k.Missing > 0 {
			r.fail("%s: %d of %d entries missing (%s)", kind, k.Missing, k.Written, firstFew(missing))
		}
		if k.Dup > 0 {
			r.fail("%s: %d of %d entries published more than once (%s)", kind, k.Dup, k.Written, firstFew(dup))
		}
	}
	if t.Foreign > 0 {
		r.fail("%d entries in the stream that were never written", t.Foreign)
	}
	if t.WrongSession > 0 {
		r.fail("%d entries published under another session than their own", t.WrongSession)
	}
	var faults []string
	for _, kind := range kinds {
		faults = append(faults, fmt.Sprintf("%s %d", kind, w.faults[kind]))
	}
	r.Figures = map[string]any{
		"written": t.Written, "published": t.Published, "once": t.Once, "missing": t.Missing, "duplicated": t.Dup,
		"byKind": t.ByKind, "faults": w.faults, "kills": w.kills,
	}
	r.Summary = fmt.Sprintf("entries %d written, %d published once, %d missing, %d dup; %s, kills %d",
		t.Written, t.Once, t.Missing, t.Dup, strings.Join(faults, ", "), w.kills)
}

// firstFew lists up to five ids, and how many more there are.
func firstFew(ids []string) string {
	if len(ids) <= 5 {
		return strings.Join(ids, " ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:5], " "), len(ids)-5)
}
