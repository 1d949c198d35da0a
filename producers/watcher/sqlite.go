package watcher

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go/jetstream"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver, as the store uses

	"github.com/clawmem/clawmem/distill"
	"github.com/clawmem/clawmem/schemas"
)

// OpenClaw from 2026.7 keeps an agent's sessions in one SQLite database,
// <stateDir>/agents/<agent>/agent/openclaw-agent.sqlite, instead of
// sessions/*.jsonl. Its table transcript_events holds one row per
// transcript entry — (session_id, seq, event_json | event_zstd,
// created_at) — whose JSON is the same entry a JSONL line holds (type,
// id, parentId, timestamp, message{role, content, timestamp}); a /new adds
// a {"type":"reset"} entry and keeps the session id. Large entries are
// stored zstd-compressed in event_zstd with event_json NULL.
//
// The watcher follows each database read-only (mode=ro, query_only, a busy
// timeout; it never writes and never holds a write lock, so OpenClaw's
// writer is never blocked) from a cursor — the last rowid of
// transcript_events published — kept in the offsets bucket, and publishes
// each user or assistant message as the JSONL path does. A row's Msg-Id
// names the database and the rowid, so a restart re-emits nothing.

// OpenClawDBName is the per-agent database of OpenClaw ≥ 2026.7.
const OpenClawDBName = "openclaw-agent.sqlite"

// dbRecheckDelay is how long after a change of a database it is read again.
const dbRecheckDelay = 200 * time.Millisecond

// dbBatch is how many rows one query reads; the cursor is stored after
// each batch.
const dbBatch = 256

// transcriptColumns are the columns of transcript_events the watcher reads;
// event_zstd is optional (older 2026.7 databases have only event_json).
var transcriptColumns = []string{"session_id", "seq", "event_json"}

// dbRecord is a database's entry in the offsets bucket.
type dbRecord struct {
	Path string `json:"path"` // relative to the state dir
	// DBID names the database's generation: a database deleted and made
	// anew starts its rowids again, and is read from the start.
	DBID string `json:"dbId"`
	// RowID is the last transcript_events rowid published.
	RowID int64 `json:"rowid"`
}

// trackedDB is the watcher's state for one OpenClaw database.
type trackedDB struct {
	agent, path, rel, key string
	db                    *sql.DB
	hasZstd               bool
	// inode is the database file's when db was opened: a file renamed over
	// it, or a database deleted and made anew, is another inode, which db
	// would never see.
	inode       uint64
	rec, stored dbRecord
	rev         uint64
	// problem is the last error, logged once until it changes or clears.
	problem string
}

// DBStatus is what the watcher knows of one agent's transcript source, for
// `clawmem doctor` and the start-up log.
type DBStatus struct {
	Agent   string    `json:"agent"`
	Source  string    `json:"source"` // sqlite, jsonl or none
	Path    string    `json:"path,omitempty"`
	RowID   int64     `json:"rowid,omitempty"`
	Problem string    `json:"problem,omitempty"`
	Updated time.Time `json:"updated"`
}

// statusKey is the bucket key under which the watcher keeps its DBStatus
// list.
const statusKey = "status"

func (w *Watcher) dbPath(agent string) string {
	return filepath.Join(w.cfg.StateDir, "agents", agent, "agent", OpenClawDBName)
}

// scanDB passes over an agent's database when it exists. Its problems are
// reported (reportDB), not returned: the next change or rescan retries.
func (w *Watcher) scanDB(ctx context.Context, agent string) error {
	path := w.dbPath(agent)
	t := w.dbs[path]
	fi, err := os.Stat(path)
	if err != nil {
		if t != nil && errors.Is(err, fs.ErrNotExist) {
			w.closeDB(t)
			delete(w.dbs, path)
		}
		return nil
	}
	if t != nil && t.db != nil && inodeOf(fi) != t.inode {
		w.log.Info("OpenClaw database file was replaced; opening the new one", "agent", agent, "db", path)
		w.closeDB(t)
	}
	if t == nil {
		rel, err := filepath.Rel(w.cfg.StateDir, path)
		if err != nil {
			rel = path
		}
		t = &trackedDB{agent: agent, path: path, rel: filepath.ToSlash(rel), key: recordKey(agent, "sqlite:"+OpenClawDBName)}
		w.dbs[path] = t
		w.log.Info("following OpenClaw's SQLite transcript store", "agent", agent, "db", path)
	}
	// A database's problem is logged by reportDB, once; returning it would
	// log it again on every rescan.
	err = w.passDB(ctx, t)
	w.reportDB(t, err)
	if err != nil && !errors.Is(err, errSchema) {
		w.met.failures.Inc()
	}
	return nil
}

// errSchema marks a database whose tables are not the ones this watcher
// knows: reported once, retried on every scan (an OpenClaw upgrade or
// downgrade may fix it), never a crash or an error loop.
var errSchema = errors.New("unsupported OpenClaw database schema")

// reportDB logs a database's problem once per distinct problem, and its
// recovery.
func (w *Watcher) reportDB(t *trackedDB, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == t.problem {
		return
	}
	switch {
	case msg == "":
		w.log.Info("OpenClaw database readable again", "agent", t.agent, "db", t.path)
	case errors.Is(err, errSchema):
		w.log.Error("OpenClaw database not followed: its schema is not the one this clawmem knows (a newer OpenClaw?); "+
			"hook events still carry the messages", "agent", t.agent, "db", t.path, "err", err)
	default:
		w.log.Warn("OpenClaw database cannot be read now; retrying on the next change or rescan", "agent", t.agent, "db", t.path, "err", err)
	}
	t.problem = msg
	// The DB handle may be what is broken (a file replaced under it).
	if err != nil {
		w.closeDB(t)
	}
}

func (w *Watcher) closeDB(t *trackedDB) {
	if t.db != nil {
		_ = t.db.Close()
		t.db = nil
	}
}

// openDB opens t's database read-only and checks its schema.
func (w *Watcher) openDB(ctx context.Context, t *trackedDB) error {
	// The inode is taken before the open: a replacement in between is
	// found on the next pass, never missed.
	fi, err := os.Stat(t.path)
	if err != nil {
		return fmt.Errorf("open %s: %w", t.rel, err)
	}
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "busy_timeout(2000)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+t.path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("open %s: %w", t.rel, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	cols, err := tableColumns(ctx, db, "transcript_events")
	if err != nil {
		_ = db.Close()
		return fmt.Errorf("read the schema of %s: %w", t.rel, err)
	}
	var missing []string
	for _, c := range transcriptColumns {
		if !slices.Contains(cols, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		_ = db.Close()
		if len(cols) == 0 {
			return fmt.Errorf("%w: %s has no table transcript_events", errSchema, t.rel)
		}
		return fmt.Errorf("%w: transcript_events in %s lacks %s (has %s)", errSchema, t.rel, strings.Join(missing, ", "), strings.Join(cols, ", "))
	}
	t.db, t.hasZstd, t.inode = db, slices.Contains(cols, "event_zstd"), inodeOf(fi)
	return nil
}

func tableColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// dbIdentity names the database's generation: OpenClaw's schema_meta row
// (its creation time), else — a database without that table — the file's
// inode. A read that fails is an error, never a new identity (which would
// read the whole database again).
func dbIdentity(ctx context.Context, db *sql.DB, path string) (string, error) {
	var created int64
	var role string
	err := db.QueryRowContext(ctx, "SELECT role, created_at FROM schema_meta ORDER BY created_at LIMIT 1").Scan(&role, &created)
	switch {
	case err == nil:
		sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", role, created))
		return hex.EncodeToString(sum[:6]), nil
	case errors.Is(err, sql.ErrNoRows) || strings.Contains(err.Error(), "no such table"):
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "inode\x00%d", inodeOf(fi)))
		return hex.EncodeToString(sum[:6]), nil
	default:
		return "", err
	}
}

// passDB publishes the transcript rows added since t's cursor.
func (w *Watcher) passDB(ctx context.Context, t *trackedDB) error {
	if t.db == nil {
		if err := w.openDB(ctx, t); err != nil {
			return err
		}
		rec, rev, err := w.loadDB(ctx, t.key)
		if err != nil {
			w.closeDB(t)
			return err
		}
		t.rec, t.stored, t.rev = rec, rec, rev
		t.rec.Path = t.rel
	}
	id, err := dbIdentity(ctx, t.db, t.path)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.rel, err)
	}
	var maxRow sql.NullInt64
	if err := t.db.QueryRowContext(ctx, "SELECT max(rowid) FROM transcript_events").Scan(&maxRow); err != nil {
		return fmt.Errorf("read %s: %w", t.rel, err)
	}
	switch {
	case t.rec.DBID != "" && t.rec.DBID != id:
		w.log.Info("OpenClaw database was made anew; reading it from the start", "agent", t.agent, "db", t.path)
		t.rec.RowID = 0
	case maxRow.Int64 < t.rec.RowID:
		w.log.Info("OpenClaw database has fewer transcript rows than already read (restored or rewritten); reading it from the start",
			"agent", t.agent, "db", t.path, "rowid", t.rec.RowID, "max", maxRow.Int64)
		t.rec.RowID = 0
	}
	t.rec.DBID = id
	for maxRow.Int64 > t.rec.RowID {
		n, err := w.readRows(ctx, t)
		if cerr := w.commitDB(ctx, t); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if n < dbBatch || ctx.Err() != nil {
			break
		}
	}
	return w.commitDB(ctx, t)
}

// readRows publishes up to dbBatch rows after the cursor and moves it past
// each one published or skipped; it returns how many rows it read.
func (w *Watcher) readRows(ctx context.Context, t *trackedDB) (int, error) {
	zcol := "NULL"
	if t.hasZstd {
		zcol = "event_zstd"
	}
	rows, err := t.db.QueryContext(ctx, "SELECT rowid, session_id, seq, event_json, "+zcol+
		" FROM transcript_events WHERE rowid > ? ORDER BY rowid LIMIT ?", t.rec.RowID, dbBatch)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", t.rel, err)
	}
	type row struct {
		rowid, seq int64
		session    string
		json       sql.NullString
		zstd       []byte
	}
	var batch []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.rowid, &r.session, &r.seq, &r.json, &r.zstd); err != nil {
			_ = rows.Close()
			return 0, fmt.Errorf("read %s: %w", t.rel, err)
		}
		batch = append(batch, r)
	}
	err = rows.Err()
	_ = rows.Close()
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", t.rel, err)
	}
	for _, r := range batch {
		where := fmt.Sprintf("%s session %s seq %d", t.rel, r.session, r.seq)
		l, err := rowLine(r.json, r.zstd)
		switch {
		case err != nil:
			w.met.skipped.WithLabelValues("bad").Inc()
			w.log.Warn("transcript row skipped", "entry", where, "err", err)
		case l.Kind == distill.KindMessage:
			if err := checkSessionID(r.session); err != nil {
				w.met.skipped.WithLabelValues("bad").Inc()
				w.log.Warn("transcript row skipped", "entry", where, "err", err)
				break
			}
			e := schemas.TranscriptEntry{V: schemas.Version, AgentID: t.agent, SessionID: r.session,
				File: "sqlite:" + OpenClawDBName, Offset: r.seq, EntryID: l.EntryID, Role: l.Role, Text: l.Text, Timestamp: l.Timestamp}
			err := w.publishEntry(ctx, e, msgID(t.agent, "sq"+t.rec.DBID, r.rowid), where)
			if errors.Is(err, errEntryTooLarge) {
				w.met.skipped.WithLabelValues("too_large").Inc()
				w.log.Warn("transcript row skipped", "entry", where, "err", err)
			} else if err != nil {
				return 0, err
			}
		}
		t.rec.RowID = r.rowid
	}
	return len(batch), nil
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use.
var zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(distill.MaxLineBytes), zstd.WithDecoderConcurrency(1))

// rowLine parses a transcript row's entry, from event_json or, when that
// is NULL, from the zstd-compressed event_zstd.
func rowLine(js sql.NullString, z []byte) (distill.Line, error) {
	var data []byte
	switch {
	case js.Valid:
		data = []byte(js.String)
	case len(z) > 0:
		out, err := zstdDecoder.DecodeAll(z, nil)
		if err != nil {
			return distill.Line{}, fmt.Errorf("event_zstd does not decompress: %w", err)
		}
		data = out
	default:
		return distill.Line{}, errors.New("row has neither event_json nor event_zstd")
	}
	if len(data) > distill.MaxLineBytes {
		return distill.Line{}, fmt.Errorf("entry of %d bytes is over the %d-byte limit", len(data), distill.MaxLineBytes)
	}
	if !utf8.Valid(data) {
		return distill.Line{}, errors.New("entry is not valid UTF-8")
	}
	return distill.ParseLine(data)
}

// loadDB reads a database's cursor; missing is the zero record at revision 0.
func (w *Watcher) loadDB(ctx context.Context, key string) (dbRecord, uint64, error) {
	return loadRecord[dbRecord](ctx, w, key,
		"unreadable database cursor replaced; the database is read from the start (its rows were published with the same ids)")
}

// commitDB stores t's cursor if it moved, with compare-and-set.
func (w *Watcher) commitDB(ctx context.Context, t *trackedDB) error {
	if t.rev != 0 && t.rec == t.stored {
		return nil
	}
	rev, err := w.putRecord(ctx, t.key, t.rev, t.rec)
	if errors.Is(err, errRecordTaken) {
		w.closeDB(t) // reload the cursor the other writer stored
		return fmt.Errorf("cursor of %s was changed by someone else (is a second watcher following %s?): %w", t.rel, w.cfg.StateDir, err)
	}
	if err != nil {
		return fmt.Errorf("store cursor of %s: %w", t.rel, err)
	}
	t.stored, t.rev = t.rec, rev
	return nil
}

// checkSessionID refuses a session id no subject or log should carry.
func checkSessionID(id string) error {
	switch {
	case id == "":
		return errors.New("row has an empty session_id")
	case len(id) > 256 || !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("row's session_id %q is not a session id", truncateForLog(id))
	}
	return nil
}

func truncateForLog(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "?") + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// sources tells, per agent, where its transcripts are: OpenClaw's SQLite
// database (≥ 2026.7), session JSONL files (older), or nothing yet.
func (w *Watcher) sources(agents []string) []DBStatus {
	jsonl := make(map[string]string)
	for _, t := range w.files {
		jsonl[t.agent] = filepath.Dir(t.path)
	}
	out := make([]DBStatus, 0, len(agents))
	for _, agent := range agents {
		st := DBStatus{Agent: agent, Source: "none", Updated: time.Now().UTC()}
		if t := w.dbs[w.dbPath(agent)]; t != nil {
			st.Source, st.Path, st.RowID, st.Problem = "sqlite", t.path, t.rec.RowID, t.problem
		} else if dir, ok := jsonl[agent]; ok {
			st.Source, st.Path = "jsonl", dir
		}
		out = append(out, st)
	}
	return out
}

// saveStatus stores the sources in the bucket for `clawmem doctor` when
// they changed since the last save.
func (w *Watcher) saveStatus(ctx context.Context) {
	st := w.sources(w.agents)
	key := make([]string, 0, len(st))
	for _, s := range st {
		key = append(key, s.Agent+"="+s.Source+":"+s.Problem)
	}
	sig := strings.Join(key, ",")
	if sig == w.statusSig {
		return
	}
	data, err := json.Marshal(st)
	if err != nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.Timeout)
	defer cancel()
	if _, err := w.kv.Put(cctx, statusKey, data); err != nil {
		w.log.Warn("watcher status not saved", "err", err)
		return
	}
	if w.statusSig == "" {
		var parts []string
		for _, s := range st {
			parts = append(parts, s.Agent+": "+s.Source)
		}
		if len(parts) == 0 {
			parts = append(parts, "no agents yet")
		}
		w.log.Info("OpenClaw transcript sources", "stateDir", w.cfg.StateDir, "agents", strings.Join(parts, ", "))
	}
	w.statusSig = sig
}

// Status reads the watcher's last saved sources from the offsets bucket.
func Status(ctx context.Context, js jetstream.JetStream) ([]DBStatus, error) {
	kv, err := js.KeyValue(ctx, schemas.BucketWatch)
	if err != nil {
		return nil, err
	}
	e, err := kv.Get(ctx, statusKey)
	if err != nil {
		return nil, err
	}
	var st []DBStatus
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("watcher status: %w", err)
	}
	return st, nil
}

func (w *Watcher) recheckPending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.dbRecheck) > 0
}

// recheckDBs passes again over the databases that changed.
func (w *Watcher) recheckDBs(ctx context.Context) error {
	var errs []error
	for agent := range w.dbRecheck {
		if err := w.scanDB(ctx, agent); err != nil {
			errs = append(errs, err)
		}
	}
	clear(w.dbRecheck)
	return errors.Join(errs...)
}
