package watcher

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
)

// fpMax is how many of a file's first bytes its fingerprint covers: enough
// for OpenClaw's session header, whose id and timestamp make it unique.
const fpMax = 256

// tracked is the watcher's state for one session file.
type tracked struct {
	agent string
	path  string // absolute
	rel   string // relative to the state dir
	key   string // in the bucket
	sf    sessionFile

	rec    record // rec.Offset is past every line already published
	stored record // what the bucket holds at revision rev
	rev    uint64 // 0: the bucket holds nothing for this file yet
	// sum hashes the file's bytes before rec.Offset; nil when the record
	// has no digest yet (see record.Digest).
	sum *prefixHash

	// shortSince is when the file was first seen shorter than rec.Offset
	// and not (yet) handed over to a rotated file; waiting is set while it
	// is given Config.RegrowWait to be written back.
	shortSince time.Time
	waiting    bool

	// ignored: a rotated file the watcher cannot match to a live file it
	// followed, so nothing of it is published.
	ignored bool
	// reconciled: the stream was checked for entries of this file
	// published past the stored offset (by a run that crashed before
	// storing it); lines starting at or before skipThrough are there.
	reconciled  bool
	skipThrough int64
	// clean: the last pass ended without error, when the file looked like
	// seen; a clean file that still looks like that needs no pass.
	clean bool
	seen  fileStat
}

// fileStat is what tells a file changed without reading it.
type fileStat struct {
	size, modNano int64
	inode         uint64
}

func statOf(fi os.FileInfo) fileStat {
	return fileStat{size: fi.Size(), modNano: fi.ModTime().UnixNano(), inode: inodeOf(fi)}
}

// session is the session id entries of this file are published under.
func (t *tracked) session() string {
	if t.rec.Session != "" {
		return t.rec.Session
	}
	return t.sf.Session
}

// track starts following a file, from its record in the bucket if it has
// one.
func (w *Watcher) track(ctx context.Context, agent string, sf sessionFile) (*tracked, error) {
	path := filepath.Join(w.sessionsDir(agent), sf.Name)
	rel, err := filepath.Rel(w.cfg.StateDir, path)
	if err != nil {
		rel = path
	}
	t := &tracked{agent: agent, path: path, rel: filepath.ToSlash(rel), key: recordKey(agent, sf.Name), sf: sf, skipThrough: -1}
	rec, rev, err := w.load(ctx, t.key)
	if err != nil {
		return nil, err
	}
	t.rec, t.stored, t.rev = rec, rec, rev
	t.sum = digestOf(rec)
	return t, nil
}

// digestOf takes up the hash of a record's digest; nil when it has none,
// or one that does not decode (the file is then hashed again when read).
func digestOf(rec record) *prefixHash {
	if rec.Digest == "" {
		return nil
	}
	p, err := restorePrefixHash(rec.Digest)
	if err != nil {
		return nil
	}
	return p
}

// load reads a file's record; a missing one is the zero record at
// revision 0. An unreadable record is logged and treated as missing, but
// its revision is kept so it can be replaced.
func (w *Watcher) load(ctx context.Context, key string) (record, uint64, error) {
	return loadRecord[record](ctx, w, key, "unreadable offset record replaced")
}

// loadRecord reads a JSON record of the offsets bucket: the zero value at
// revision 0 when missing; when unreadable, logged with unreadable and
// treated as missing, keeping its revision so it can be replaced.
func loadRecord[T any](ctx context.Context, w *Watcher, key, unreadable string) (T, uint64, error) {
	var rec T
	e, err := w.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return rec, 0, nil
	}
	if err != nil {
		return rec, 0, fmt.Errorf("read record %s: %w", key, err)
	}
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		w.log.Warn(unreadable, "key", key, "err", err)
		var zero T
		return zero, e.Revision(), nil
	}
	return rec, e.Revision(), nil
}

// commit stores t's record if it changed. It runs even when ctx has ended,
// so progress made before shutdown is kept.
func (w *Watcher) commit(ctx context.Context, t *tracked) error {
	if t.sum != nil {
		t.rec.Digest = t.sum.state()
	}
	if t.rec.FileID == "" || (t.rev != 0 && t.rec == t.stored) {
		return nil
	}
	rev, err := w.putRecord(ctx, t.key, t.rev, t.rec)
	if errors.Is(err, errRecordTaken) {
		// Forget the file: the next pass starts again from what the other
		// writer stored.
		delete(w.files, t.path)
		return fmt.Errorf("offset record of %s was changed by someone else (is a second watcher following %s?): %w",
			t.rel, w.cfg.StateDir, err)
	}
	if err != nil {
		return fmt.Errorf("store offset of %s: %w", t.rel, err)
	}
	t.stored, t.rev = t.rec, rev
	return nil
}

// errRecordTaken: a record changed since it was read (another watcher).
var errRecordTaken = errors.New("record changed by another writer")

// putRecord writes v as key's JSON record with compare-and-set against
// revision rev (0: create), even after ctx has ended; a lost race is
// errRecordTaken.
func (w *Watcher) putRecord(ctx context.Context, key string, rev uint64, v any) (uint64, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode record %s: %w", key, err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.Timeout)
	defer cancel()
	if rev == 0 {
		rev, err = w.kv.Create(cctx, key, data)
	} else {
		rev, err = w.kv.Update(cctx, key, data, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, fmt.Errorf("%w: %w", errRecordTaken, err)
	}
	return rev, err
}

// pass publishes the complete lines added to t's file since its offset,
// then stores the new offset.
func (w *Watcher) pass(ctx context.Context, t *tracked) (err error) {
	f, err := os.Open(t.path)
	if errors.Is(err, fs.ErrNotExist) {
		return w.vanished(ctx, t)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", t.rel, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", t.rel, err)
	}
	t.clean = false
	defer func() {
		if cerr := w.commit(ctx, t); err == nil {
			err = cerr
		}
		// A file waiting to grow back is passed again on the next event
		// or rescan, changed or not, until its wait is over.
		if err == nil && ctx.Err() == nil && !t.waiting {
			t.clean, t.seen = true, statOf(fi)
		}
	}()
	if err := w.identify(ctx, t, f, fi); err != nil || t.ignored || t.waiting {
		return err
	}
	if fi.Size() == t.rec.Offset {
		return nil
	}
	return w.readLines(ctx, t, f)
}

// vanished forgets a file that is gone, once its progress is stored; a
// rotated copy of it takes that progress over from the bucket.
func (w *Watcher) vanished(ctx context.Context, t *tracked) error {
	if err := w.commit(ctx, t); err != nil {
		return err
	}
	delete(w.files, t.path)
	return nil
}

// identity is how a file relates to a record.
type identity int

const (
	sameFile  identity = iota
	replaced           // another inode: a new file took the name
	rewritten          // shorter than the offset, or its first bytes differ
)

// reason labels a new generation of a file that is not the same file.
func (id identity) reason() string {
	if id == replaced {
		return "replaced"
	}
	return "truncated"
}

// identify makes t's record describe the file now at t.path: a rotated
// file takes over its original's record; a live file that begins with the
// bytes already published, whatever its inode, keeps its generation; a
// new, replaced or truncated one starts a new generation, unless it is
// shorter than what was published and still given time to be written
// back (t.waiting); and the fingerprint grows.
func (w *Watcher) identify(ctx context.Context, t *tracked, f *os.File, fi os.FileInfo) error {
	t.waiting = false
	if t.rec.FileID == "" {
		if t.sf.rotated() {
			return w.adopt(ctx, t, f, fi)
		}
		return w.newGeneration(ctx, t, f, fi, "new")
	}
	id, err := identityOf(f, fi, t.rec)
	if err != nil {
		return err
	}
	switch {
	case id != sameFile && t.sf.rotated():
		w.log.Warn("rotated session file changed; ignoring it", "file", t.rel)
		t.ignored = true
		return nil
	case id != sameFile:
		handed, err := w.handOver(ctx, t)
		if err != nil {
			return err
		}
		if !handed {
			same, err := t.sameStart(f, fi)
			if err != nil {
				return err
			}
			if same {
				return w.followOn(t, f, fi)
			}
			if fi.Size() < t.rec.Offset && t.sum != nil && w.regrowing(t) {
				return nil
			}
		}
		return w.newGeneration(ctx, t, f, fi, id.reason())
	case !t.shortSince.IsZero():
		// Seen shorter than its offset, it is the same file again only if
		// it was written back with the same bytes: the fingerprint covers
		// only the first of them.
		same, err := t.sameStart(f, fi)
		if err != nil {
			return err
		}
		if !same {
			return w.newGeneration(ctx, t, f, fi, rewritten.reason())
		}
	}
	t.shortSince = time.Time{}
	return extendFingerprint(f, fi, &t.rec)
}

// sameStart reports whether f begins with the bytes t has handled: a
// rewrite in place or a copy renamed over the file, which may have lines
// added after them.
func (t *tracked) sameStart(f *os.File, fi os.FileInfo) (bool, error) {
	if t.sum == nil || fi.Size() < t.rec.Offset {
		return false, nil
	}
	p, err := hashPrefix(f, t.rec.Offset)
	if err != nil {
		return false, err
	}
	return p.sameAs(t.sum), nil
}

// followOn keeps t's generation, and its offset, for a file that begins
// with the bytes already handled: nothing is published again.
func (w *Watcher) followOn(t *tracked, f *os.File, fi os.FileInfo) error {
	w.log.Info("session file was rewritten with the lines already published first; following it on from its offset",
		"file", t.rel, "offset", t.rec.Offset, "size", fi.Size())
	t.rec.Inode, t.rec.FPLen, t.rec.FP = inodeOf(fi), 0, ""
	t.shortSince = time.Time{}
	return extendFingerprint(f, fi, &t.rec)
}

// regrowing reports whether a file shorter than what was published is
// still given time to be written back with those bytes; it sets t.waiting.
func (w *Watcher) regrowing(t *tracked) bool {
	if t.shortSince.IsZero() {
		t.shortSince = time.Now()
		w.log.Info("session file is shorter than what was published; waiting for it to be written back before reading it again from the beginning",
			"file", t.rel, "offset", t.rec.Offset, "wait", w.cfg.RegrowWait)
	}
	t.waiting = time.Since(t.shortSince) < w.cfg.RegrowWait
	return t.waiting
}

// identityOf compares the open file with a record.
func identityOf(f *os.File, fi os.FileInfo, rec record) (identity, error) {
	if ino := inodeOf(fi); rec.Inode != 0 && ino != 0 && ino != rec.Inode {
		return replaced, nil
	}
	if fi.Size() < rec.Offset || fi.Size() < rec.FPLen {
		return rewritten, nil
	}
	if rec.FPLen > 0 {
		fp, err := fingerprint(f, rec.FPLen)
		if err != nil {
			return sameFile, err
		}
		if fp != rec.FP {
			return rewritten, nil
		}
	}
	return sameFile, nil
}

// fingerprint hashes the first n bytes of f.
func fingerprint(f *os.File, n int64) (string, error) {
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, 0); err != nil {
		return "", fmt.Errorf("read the start of %s: %w", f.Name(), err)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:16]), nil
}

// extendFingerprint makes rec's fingerprint cover up to fpMax bytes of a
// file whose shorter prefix already matched.
func extendFingerprint(f *os.File, fi os.FileInfo, rec *record) error {
	n := min(fi.Size(), fpMax)
	if n <= rec.FPLen {
		return nil
	}
	fp, err := fingerprint(f, n)
	if err != nil {
		return err
	}
	rec.FPLen, rec.FP = n, fp
	return nil
}

// newGeneration starts t's file over from byte 0 under a new file id, and
// stores that before any entry carries it.
func (w *Watcher) newGeneration(ctx context.Context, t *tracked, f *os.File, fi os.FileInfo, reason string) error {
	switch {
	case t.rec.FileID == "":
		w.log.Info("following session file", "file", t.rel, "bytes", fi.Size())
	case reason == "replaced": // /new or a deletion, once the old file is finished
		w.log.Info("new session file under a followed name; reading it from the beginning", "file", t.rel)
	default:
		w.log.Warn("session file shrank or was rewritten; reading it again from the beginning", "file", t.rel,
			"offset", t.rec.Offset, "size", fi.Size())
	}
	w.met.restarts.WithLabelValues(reason).Inc()
	rec := record{Path: t.rel, FileID: rand.Text(), Inode: inodeOf(fi)}
	if err := extendFingerprint(f, fi, &rec); err != nil {
		return err
	}
	t.rec, t.sum, t.reconciled, t.skipThrough, t.shortSince = rec, newPrefixHash(), true, -1, time.Time{}
	return w.commit(ctx, t)
}

// adopt gives a rotated file without a record of its own the state of the
// live file it was, if that is where it came from; otherwise the watcher
// never followed it and it is ignored.
func (w *Watcher) adopt(ctx context.Context, t *tracked, f *os.File, fi os.FileInfo) error {
	origPath := filepath.Join(filepath.Dir(t.path), t.sf.Original)
	orig := w.files[origPath]
	if orig == nil || orig.rec.FileID == "" {
		rec, _, err := w.load(ctx, recordKey(t.agent, t.sf.Original))
		if err != nil {
			return err
		}
		orig = &tracked{rec: rec, sum: digestOf(rec), skipThrough: -1}
	}
	if orig.rec.FileID == "" {
		w.log.Debug("rotated session file was never followed; skipping it", "file", t.rel)
		t.ignored = true
		return nil
	}
	if id, err := identityOf(f, fi, orig.rec); err != nil || id != sameFile {
		w.log.Debug("rotated session file is not the one followed under its name; skipping it", "file", t.rel, "err", err)
		t.ignored = true
		return err
	}
	if w.files[origPath] == orig {
		delete(w.files, origPath) // whatever is at the name now is another file
	}
	t.rec, t.rec.Path, t.sum = orig.rec, t.rel, orig.sum.clone()
	t.reconciled, t.skipThrough = orig.reconciled, orig.skipThrough
	w.log.Info("session file was rotated; finishing it", "file", t.rel, "offset", t.rec.Offset, "size", fi.Size())
	return extendFingerprint(f, fi, &t.rec)
}

// handOver runs when another file has taken t's name: if the file t
// followed was renamed to a rotated name that has no state yet, that file
// gets t's state and is read to its end before the new file is started.
// It reports whether a rotated file holds t's generation, now or since an
// earlier pass: the file at the name is then a new one.
func (w *Watcher) handOver(ctx context.Context, t *tracked) (bool, error) {
	dir := filepath.Dir(t.path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range entries {
		sf, ok := parseFileName(e.Name())
		if !ok || !sf.rotated() || sf.Original != t.sf.Name {
			continue
		}
		path := filepath.Join(dir, sf.Name)
		if s := w.files[path]; s != nil && s.rec.FileID != "" {
			if s.rec.FileID == t.rec.FileID {
				return true, nil
			}
			continue
		}
		s, err := w.track(ctx, t.agent, sf)
		if err != nil {
			return false, err
		}
		if s.rec.FileID != "" {
			w.files[path] = s
			if s.rec.FileID == t.rec.FileID {
				return true, nil
			}
			continue
		}
		match, err := matches(path, t.rec)
		if err != nil || !match {
			continue
		}
		s.rec, s.rec.Path, s.sum = t.rec, s.rel, t.sum.clone()
		s.reconciled, s.skipThrough = t.reconciled, t.skipThrough
		w.files[path] = s
		w.log.Info("session file was rotated; finishing it", "file", s.rel, "offset", s.rec.Offset)
		return true, w.pass(ctx, s)
	}
	return false, nil
}

// matches reports whether the file at path is the one rec describes.
func matches(path string, rec record) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	id, err := identityOf(f, fi, rec)
	return id == sameFile, err
}

// readLines publishes the complete lines from t's offset on, moving the
// offset past each line handled and storing it every CommitEvery entries.
func (w *Watcher) readLines(ctx context.Context, t *tracked, f *os.File) error {
	// The file id must be in the bucket before an entry carries it.
	if t.rev == 0 || t.rec.FileID != t.stored.FileID {
		if err := w.commit(ctx, t); err != nil {
			return err
		}
	}
	if err := w.reconcile(ctx, t); err != nil {
		return err
	}
	if t.sum == nil {
		sum, err := hashPrefix(f, t.rec.Offset)
		if err != nil {
			return err
		}
		t.sum = sum
	}
	if _, err := f.Seek(t.rec.Offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s to %d: %w", t.rel, t.rec.Offset, err)
	}
	lr := newLineReader(f, distill.MaxLineBytes)
	pending := 0
	for ctx.Err() == nil {
		start := t.rec.Offset
		line, n, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) || errors.Is(err, errPartial) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s at %d: %w", t.rel, start, err)
		}
		published, err := w.handleLine(ctx, t, start, line, tooLong)
		if err != nil {
			return err
		}
		if tooLong {
			if err := t.sum.addRange(f, start, n); err != nil {
				return err
			}
		} else {
			t.sum.add(line, newline)
		}
		t.rec.Offset = start + n
		if published {
			pending++
		}
		if pending >= w.cfg.CommitEvery {
			if err := w.commit(ctx, t); err != nil {
				return err
			}
			pending = 0
		}
	}
	return nil
}

var newline = []byte{'\n'}

// handleLine publishes a message line, takes the session id from a header
// line and skips lines that are not transcript entries. It reports
// whether an entry was published.
func (w *Watcher) handleLine(ctx context.Context, t *tracked, start int64, line []byte, tooLong bool) (bool, error) {
	if tooLong {
		w.skip(t, start, "too_long", fmt.Errorf("line longer than %d bytes", distill.MaxLineBytes))
		return false, nil
	}
	l, err := distill.ParseLine(line)
	if err != nil {
		w.skip(t, start, "bad", err)
		return false, nil
	}
	switch l.Kind {
	case distill.KindSession:
		w.setSession(t, l.SessionID)
	case distill.KindMessage:
		if start <= t.skipThrough {
			return false, nil
		}
		err := w.publish(ctx, t, start, l)
		if errors.Is(err, errEntryTooLarge) {
			w.skip(t, start, "too_large", err)
			return false, nil
		}
		return err == nil, err
	}
	return false, nil
}

// maxSessionIDLen bounds a session id taken from a header line; a longer
// one is not an OpenClaw id, and the file name serves instead.
const maxSessionIDLen = 256

// setSession takes a header line's session id for the entries that follow.
// Thread files keep the id from their name, as the thread is a session of
// its own.
func (w *Watcher) setSession(t *tracked, id string) {
	switch {
	case t.sf.Topic || id == "":
	case len(id) > maxSessionIDLen:
		w.log.Warn("session header id too long; using the file name", "file", t.rel, "bytes", len(id))
	default:
		t.rec.Session = id
	}
}

// skip logs a line that is passed over.
func (w *Watcher) skip(t *tracked, offset int64, reason string, err error) {
	w.met.skipped.WithLabelValues(reason).Inc()
	w.log.Warn("transcript line skipped", "file", t.rel, "offset", offset, "reason", reason, "err", err)
}

// reconcile runs before the first read of a file this process did not
// start: when the stream already holds an entry of this file generation
// past the stored offset (a run published it, then stopped before storing
// the offset), the lines up to it are not published again, however long
// ago that was.
func (w *Watcher) reconcile(ctx context.Context, t *tracked) error {
	if t.reconciled {
		return nil
	}
	m, err := w.stream.GetLastMsgForSubject(ctx, schemas.TranscriptSubject(t.agent, t.session()))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		t.reconciled = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up the last entry of %s: %w", t.rel, err)
	}
	agent, fileID, offset, ok := parseMsgID(m.Header.Get(jetstream.MsgIDHeader))
	if ok && agent == t.agent && fileID == t.rec.FileID && offset >= t.rec.Offset {
		w.log.Info("entries past the stored offset are already in the stream; not publishing them again",
			"file", t.rel, "offset", t.rec.Offset, "through", offset)
		t.skipThrough = offset
	}
	t.reconciled = true
	return nil
}
