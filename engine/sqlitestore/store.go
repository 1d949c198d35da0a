// Package sqlitestore is clawmem's default store: SQLite (pure Go, through
// modernc.org/sqlite) in WAL mode holds every memory durably, an FTS5 table
// gives BM25 search, and all vectors live in an in-memory index loaded at
// open. One process owns a store at a time.
package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
)

// Options configure a store.
type Options struct {
	// Dimensions is the configured vector size. Opening a store that holds
	// vectors of another size fails with *engine.DimensionError. Zero adopts
	// the stored size (an empty store then needs it).
	Dimensions int
	// Index selects exact (default) or approximate vector search.
	Index vecindex.Options
	// Now is the clock used for new memories; nil means time.Now.
	Now func() time.Time
	// NoChangeLog turns the change log off (and empties it): for a store
	// nothing publishes from, a replica's or a throwaway one. A store whose
	// changes feed the memory log must keep it on.
	NoChangeLog bool
	// NoSegment neither reads nor writes the vector segment: every open
	// loads the vectors from the database.
	NoSegment bool
	// MustExist refuses, with ErrNoStore and without creating anything, a
	// directory that holds no store yet: for commands that only read.
	MustExist bool
	// LockWait is how long Open waits for another process's lock on the
	// store to go (a command that opened it for a moment); zero fails at
	// once with engine.ErrLocked. OnLockWait, when set, is called once
	// when the wait begins.
	LockWait   time.Duration
	OnLockWait func(lock string, wait time.Duration)
}

// lockPoll is how often a waiting Open tries the lock again.
const lockPoll = 50 * time.Millisecond

// FileName is the database file inside the store's directory.
const FileName = "memories.db"

// Store implements engine.Store.
type Store struct {
	db   *sql.DB
	lock *os.File
	dir  string
	opts Options
	dim  int
	// vectors says where the open loaded the vectors from, and why.
	vectors VectorSource
	// segment, segVersion and segTrained: the record of the segment the
	// open read (or spilled to) and the index's version and clustering
	// then; a close at the same version, with the same clustering,
	// records the same file again instead of rewriting it.
	segment    segmentRecord
	segVersion uint64
	segTrained bool
	ix         *vecindex.Index
	now        func() time.Time
	fts        bool

	// wmu serialises writers so the database and the index change together
	// and dedup decisions made under it see every earlier write.
	wmu sync.Mutex
	// gmu guards groups, the small integer id of each scope in the index.
	gmu    sync.RWMutex
	groups map[string]uint32

	closed atomic.Bool
	// bg tracks the background index build, which Close waits for, and
	// loops the int8 mode's spiller, which Close stops (stop) first.
	bg, loops sync.WaitGroup
	stop      chan struct{}
	spillMin  int          // see spillDue
	spillErr  atomic.Value // string: the last spill's failure

	dfMu sync.Mutex
	df   map[string]dfEntry
}

var _ engine.Store = (*Store)(nil)

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	text       TEXT    NOT NULL,
	vector     BLOB    NOT NULL,
	category   TEXT    NOT NULL,
	scope      TEXT    NOT NULL,
	importance REAL    NOT NULL,
	timestamp  INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	metadata   TEXT    NOT NULL DEFAULT '{}',
	superseded_by  TEXT    NOT NULL DEFAULT '',
	valid_from     INTEGER NOT NULL DEFAULT 0,
	invalidated_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS memories_by_time ON memories (timestamp DESC, id DESC);
CREATE INDEX IF NOT EXISTS memories_by_scope ON memories (scope, timestamp DESC);
`

// historySchema adds a fact's life to a store created before it (columns
// as in schema) and indexes the chain: which memories a memory replaced.
var historyColumns = []string{
	`superseded_by TEXT NOT NULL DEFAULT ''`,
	`valid_from INTEGER NOT NULL DEFAULT 0`,
	`invalidated_at INTEGER NOT NULL DEFAULT 0`,
}

const historyIndex = `CREATE INDEX IF NOT EXISTS memories_by_successor ON memories (superseded_by) WHERE superseded_by != ''`

// coreCond is true for the memories marked core (engine.MarkedCore).
// coreIndex holds only them, so auto-recall lists a scope's few core
// facts without reading its other memories; List's condition must be the
// index's own, word for word, for SQLite to use it.
const (
	coreCond  = `CASE WHEN json_valid(metadata) THEN json_type(metadata, '$.core') END = 'true'`
	coreIndex = `CREATE INDEX IF NOT EXISTS memories_core ON memories (scope, timestamp DESC, id DESC) WHERE ` + coreCond
)

// ftsSchema indexes fts.IndexText(text) under the memory's seq. It is
// contentless: the text lives once, in memories.
const ftsSchema = `CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
	body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts_vocab USING fts5vocab(memories_fts, 'row');`

// maxConns and cacheKiB bound the database's memory: connections, and the
// page cache of each (SQLite's default size, 2 MiB), 16 MiB in all.
const (
	maxConns = 8
	cacheKiB = 2048
)

// Open opens (creating if needed, unless o.MustExist) the store in dir. A
// database file there that clawmem did not make fails with ErrForeign
// before anything is created or written.
func Open(ctx context.Context, dir string, o Options) (*Store, error) {
	ok, err := Exists(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !ok && o.MustExist {
		return nil, fmt.Errorf("%w at %s", ErrNoStore, dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create store dir: %w", err)
	}
	lock, err := waitLock(ctx, filepath.Join(dir, "LOCK"), o)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, dir, o, lock)
	if err != nil {
		unlockDir(lock)
		return nil, err
	}
	return s, nil
}

// waitLock takes the store's lock, waiting up to o.LockWait for a holder
// to let go.
func waitLock(ctx context.Context, path string, o Options) (*os.File, error) {
	lock, err := lockDir(path)
	if err == nil || o.LockWait <= 0 || !errors.Is(err, engine.ErrLocked) {
		return lock, err
	}
	if o.OnLockWait != nil {
		o.OnLockWait(path, o.LockWait)
	}
	deadline := time.NewTimer(o.LockWait)
	defer deadline.Stop()
	tick := time.NewTicker(lockPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, fmt.Errorf("%w (waited %v)", err, o.LockWait)
		case <-tick.C:
		}
		if lock, err = lockDir(path); err == nil || !errors.Is(err, engine.ErrLocked) {
			return lock, err
		}
	}
}

func open(ctx context.Context, dir string, o Options, lock *os.File) (*Store, error) {
	// synchronous(FULL): a committed memory survives power loss, not only a
	// process crash; writers batch, so the fsync per commit is affordable.
	// The page cache is each connection's and lives in the process: set
	// here, not left to a driver's default, it is at most maxConns ×
	// cacheKiB however large the database grows. mmap_size(0): pages are
	// read into that cache, never mapped, so the database file does not
	// count in the process's resident memory.
	dsn := fileURI(filepath.Join(dir, FileName),
		"_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)"+
			fmt.Sprintf("&_pragma=cache_size(-%d)&_pragma=mmap_size(0)", cacheKiB)+"&_txlock=immediate")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(maxConns)
	s := &Store{db: db, lock: lock, dir: dir, opts: o, now: o.Now, groups: map[string]uint32{}, df: map[string]dfEntry{}, stop: make(chan struct{}), spillMin: spillMin}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.init(ctx, o); err != nil {
		close(s.stop)
		s.loops.Wait()
		s.bg.Wait()
		if s.ix != nil {
			s.ix.Close()
		}
		db.Close()
		return nil, err
	}
	if o.Index.Memory == vecindex.Int8 && !o.NoSegment {
		s.loops.Go(s.spiller)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context, o Options) error {
	if _, err := s.db.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	changes := changeSchema
	if o.NoChangeLog {
		changes = noChangeSchema
	}
	if _, err := s.db.ExecContext(ctx, changes); err != nil {
		return fmt.Errorf("create change log: %w", err)
	}
	_, err := s.db.ExecContext(ctx, ftsSchema)
	s.fts = err == nil
	dim, err := s.resolveDimensions(ctx, o.Dimensions)
	if err != nil {
		return err
	}
	s.dim = dim
	// Whatever this open does next, the segment's record is spent: the
	// database is about to change, with the segment or without it.
	record, recorded, err := s.spendSegmentRecord(ctx)
	if err != nil {
		return err
	}
	if !o.NoSegment {
		start := time.Now()
		ok, why, err := s.loadSegment(ctx, record, recorded)
		if err != nil {
			return err
		}
		if ok {
			s.vectors = VectorSource{From: "segment", Took: time.Since(start)}
			s.segVersion, s.segTrained = s.ix.Version(), s.ix.Trained()
			if o.Index.Mode == vecindex.IVF && !s.ix.Trained() {
				s.bg.Go(func() { _ = s.ix.Build() })
			}
			return nil
		}
		s.vectors.Why = why
	}
	start := time.Now()
	s.ix = vecindex.New(dim, o.Index)
	if err := s.load(ctx); err != nil {
		return err
	}
	if o.Index.Memory == vecindex.Int8 && !o.NoSegment && s.ix.Len() > 0 {
		// The vectors must leave the heap: to the segment file, mapped.
		if err := s.spill(ctx); err != nil {
			return fmt.Errorf("int8 memory mode: write the vectors to the segment: %w", err)
		}
	}
	s.vectors.From, s.vectors.Took = "database", time.Since(start)
	// Training an approximate index takes seconds at 100k vectors; searches
	// are exact until it is done, so the store is usable at once.
	s.bg.Go(func() { _ = s.ix.Build() })
	return nil
}

// migrate adds the history columns to a store made before them.
func (s *Store) migrate(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM pragma_table_info('memories')`)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		have[name] = true
	}
	rows.Close()
	for _, col := range historyColumns {
		name, _, _ := strings.Cut(col, " ")
		if have[name] {
			continue
		}
		if _, err := s.db.ExecContext(ctx, `ALTER TABLE memories ADD COLUMN `+col); err != nil {
			return fmt.Errorf("add column %s: %w", name, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, historyIndex); err != nil {
		return fmt.Errorf("create history index: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, coreIndex); err != nil {
		return fmt.Errorf("create core index: %w", err)
	}
	return nil
}

// resolveDimensions checks the configured size against the stored one and
// records it for an empty store.
func (s *Store) resolveDimensions(ctx context.Context, want int) (int, error) {
	var stored string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'dimensions'`).Scan(&stored)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if want <= 0 {
			return 0, errors.New("the store is new: set embedding.dimensions (or a model with known dimensions)")
		}
		_, err := s.db.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('dimensions', ?)`, fmt.Sprint(want))
		return want, err
	case err != nil:
		return 0, fmt.Errorf("read store dimensions: %w", err)
	}
	var have int
	if _, err := fmt.Sscan(stored, &have); err != nil || have <= 0 {
		return 0, fmt.Errorf("store metadata is corrupt: dimensions=%q", stored)
	}
	if want > 0 && want != have {
		return 0, &engine.DimensionError{Table: have, Config: want}
	}
	return have, nil
}

// load fills the vector index from the table.
func (s *Store) load(ctx context.Context) error {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err != nil {
		return fmt.Errorf("count memories: %w", err)
	}
	s.ix.Reserve(n)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, scope, invalidated_at, vector FROM memories`)
	if err != nil {
		return fmt.Errorf("load vectors: %w", err)
	}
	defer rows.Close()
	vec := make([]float32, s.dim)
	// The driver allocates every blob afresh; collecting that garbage every
	// few MB reuses the same pages instead of letting the heap double, which
	// keeps both the open time and the peak RSS near the index's own size.
	const gcEvery = 32 << 20
	sinceGC := 0
	for rows.Next() {
		var seq, invalidated int64
		var scope string
		var blob sql.RawBytes
		if err := rows.Scan(&seq, &scope, &invalidated, &blob); err != nil {
			return fmt.Errorf("load vectors: %w", err)
		}
		if len(blob) != 4*s.dim {
			return &engine.DimensionError{Table: len(blob) / 4, Config: s.dim}
		}
		decodeInto(vec, blob)
		if err := s.ix.Upsert(seq, s.group(groupKey(scope, invalidated)), vec); err != nil {
			return fmt.Errorf("load vector of row %d: %w", seq, err)
		}
		if sinceGC += len(blob); sinceGC >= gcEvery {
			runtime.GC()
			sinceGC = 0
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load vectors: %w", err)
	}
	return nil
}

// WaitIndex blocks until a background index build started at open is
// done (at once for an exact index). Searches work meanwhile; benchmarks
// and tests that measure the approximate index wait for it.
func (s *Store) WaitIndex() { s.bg.Wait() }

// Dimensions implements engine.Store.
func (s *Store) Dimensions() int { return s.dim }

// HasFullText implements engine.Store.
func (s *Store) HasFullText() bool { return s.fts }

// Len is the number of memories in the store.
func (s *Store) Len() int { return s.ix.Len() }

// Close implements engine.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stop)
	s.loops.Wait()
	s.bg.Wait()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	var err error
	if !s.opts.NoSegment {
		// A failed segment costs the next open time, never correctness.
		_ = s.saveSegment(context.Background())
	}
	s.ix.Close()
	err = s.db.Close()
	if uerr := unlockDir(s.lock); err == nil {
		err = uerr
	}
	return err
}

func (s *Store) check() error {
	if s.closed.Load() {
		return engine.ErrClosed
	}
	return nil
}

// group returns the index group of scope, creating one if needed.
func (s *Store) group(scope string) uint32 {
	s.gmu.RLock()
	g, ok := s.groups[scope]
	s.gmu.RUnlock()
	if ok {
		return g
	}
	s.gmu.Lock()
	defer s.gmu.Unlock()
	if g, ok := s.groups[scope]; ok {
		return g
	}
	g = uint32(len(s.groups))
	s.groups[scope] = g
	return g
}

// historyPrefix marks the index group of a scope's memories that no
// longer hold: they stay in the index (history can be searched) but a
// search without history never sees their groups.
const historyPrefix = "\x00history:"

// groupKey is the index group name of a memory in scope, history or not.
func groupKey(scope string, invalidatedAt int64) string {
	if invalidatedAt != 0 {
		return historyPrefix + scope
	}
	return scope
}

// allowedGroups maps a filter to index groups; ok is false when the filter
// can match nothing in this store.
func (s *Store) allowedGroups(f engine.ScopeFilter, history bool) (g *vecindex.Groups, ok bool) {
	if f.All() && history {
		return nil, true
	}
	s.gmu.RLock()
	defer s.gmu.RUnlock()
	var ids []uint32
	for key, id := range s.groups {
		scope, old := strings.CutPrefix(key, historyPrefix)
		if (!old || history) && f.Allows(scope) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, false
	}
	return vecindex.NewGroups(ids...), true
}

// scopeClause renders f as a SQL condition on column col with its args.
// Scopes are always bound parameters, never spliced into the SQL.
func scopeClause(col string, f engine.ScopeFilter) (string, []any) {
	if f.All() {
		return "1", nil
	}
	scopes := f.Scopes()
	if len(scopes) == 0 {
		return "0", nil
	}
	args := make([]any, len(scopes))
	for i, sc := range scopes {
		args[i] = sc
	}
	return col + " IN (" + placeholders(len(scopes)) + ")", args
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeInto(dst []float32, b []byte) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	decodeInto(v, b)
	return v
}

// prepare normalises and validates m for writing.
func (s *Store) prepare(m *schemas.Memory) error {
	m.Normalize()
	if err := m.Validate(); err != nil {
		return err
	}
	if len(m.Vector) != s.dim {
		return fmt.Errorf("%w: vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(m.Vector), s.dim)
	}
	return nil
}

// Add implements engine.Store.
func (s *Store) Add(ctx context.Context, ms ...schemas.Memory) ([]schemas.Memory, error) {
	out := engine.Stamped(ms, s.now().UnixMilli())
	if err := s.insert(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Import implements engine.Store.
func (s *Store) Import(ctx context.Context, ms ...schemas.Memory) error {
	batch, err := engine.ForImport(ms, s.now().UnixMilli())
	if err != nil {
		return err
	}
	return s.insert(ctx, batch)
}

func (s *Store) insert(ctx context.Context, ms []schemas.Memory) error {
	if err := s.check(); err != nil {
		return err
	}
	for i := range ms {
		if err := s.prepare(&ms[i]); err != nil {
			if len(ms) > 1 {
				return fmt.Errorf("memory %d of %d: %w", i+1, len(ms), err)
			}
			return err
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO memories
		(id, text, vector, category, scope, importance, timestamp, updated_at, metadata, superseded_by, valid_from, invalidated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING RETURNING seq`)
	if err != nil {
		return fmt.Errorf("prepare insert: %w", err)
	}
	defer ins.Close()
	var insFTS *sql.Stmt
	if s.fts {
		if insFTS, err = tx.PrepareContext(ctx, `INSERT INTO memories_fts (rowid, body) VALUES (?, ?)`); err != nil {
			return fmt.Errorf("prepare fts insert: %w", err)
		}
		defer insFTS.Close()
	}
	seqs := make([]int64, len(ms))
	now := s.now().UnixMilli()
	for i, m := range ms {
		err := ins.QueryRowContext(ctx, m.ID, m.Text, encodeVector(m.Vector), string(m.Category), m.Scope,
			m.Importance, m.Timestamp, now, string(m.Metadata), m.SupersededBy, m.ValidFrom, m.InvalidatedAt).Scan(&seqs[i])
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s", engine.ErrExists, m.ID)
		}
		if err != nil {
			return fmt.Errorf("insert memory: %w", err)
		}
		if insFTS != nil {
			if _, err := insFTS.ExecContext(ctx, seqs[i], fts.IndexText(m.Text)); err != nil {
				return fmt.Errorf("index memory text: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for i, m := range ms {
		// Validated above: the length is right and there is no NaN.
		_ = s.ix.Upsert(seqs[i], s.group(groupKey(m.Scope, m.InvalidatedAt)), m.Vector)
	}
	return nil
}

// Has implements engine.Store.
func (s *Store) Has(ctx context.Context, id string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM memories WHERE id = ?`, strings.ToLower(id)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// maxListedMatches bounds how many ids an ambiguity error names.
const maxListedMatches = 10

// resolve finds the seq and id of a memory by full id or prefix. q is the
// database or the transaction to ask.
func (s *Store) resolve(ctx context.Context, q querier, idOrPrefix string, f engine.ScopeFilter) (int64, string, error) {
	key := strings.ToLower(strings.TrimSpace(idOrPrefix))
	if err := schemas.ValidateIDOrPrefix(key); err != nil {
		return 0, "", err
	}
	if f.Denies() {
		return 0, "", fmt.Errorf("%w: %s", engine.ErrNotFound, key)
	}
	cond, args := scopeClause("scope", f)
	var rows *sql.Rows
	var err error
	if schemas.IsUUID(key) {
		rows, err = q.QueryContext(ctx, `SELECT seq, id FROM memories WHERE id = ? AND `+cond, append([]any{key}, args...)...)
	} else {
		// A range on the unique index: no scan, no row limit; '~' sorts
		// after every character an id can hold.
		rows, err = q.QueryContext(ctx, `SELECT seq, id FROM memories WHERE id >= ? AND id < ? AND `+cond+
			` ORDER BY id LIMIT ?`, append(append([]any{key, key + "~"}, args...), maxListedMatches+1)...)
	}
	if err != nil {
		return 0, "", fmt.Errorf("look up %s: %w", key, err)
	}
	defer rows.Close()
	var seqs []int64
	var ids []string
	for rows.Next() {
		var seq int64
		var id string
		if err := rows.Scan(&seq, &id); err != nil {
			return 0, "", err
		}
		seqs = append(seqs, seq)
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return 0, "", err
	}
	switch len(ids) {
	case 0:
		return 0, "", fmt.Errorf("%w: %s", engine.ErrNotFound, key)
	case 1:
		return seqs[0], ids[0], nil
	}
	if len(ids) > maxListedMatches {
		ids = append(ids[:maxListedMatches], "…")
	}
	return 0, "", &engine.AmbiguousError{Prefix: key, Matches: ids}
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Resolve implements engine.Store.
func (s *Store) Resolve(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	_, id, err := s.resolve(ctx, s.db, idOrPrefix, f)
	return id, err
}

const memoryColumns = `seq, id, text, vector, category, scope, importance, timestamp, metadata, superseded_by, valid_from, invalidated_at`
const listColumns = `seq, id, text, NULL, category, scope, importance, timestamp, metadata, superseded_by, valid_from, invalidated_at`

type scanner interface{ Scan(dest ...any) error }

// scanMemory reads a row of memoryColumns or listColumns, then extra.
func scanMemory(sc scanner, extra ...any) (int64, schemas.Memory, error) {
	var (
		seq  int64
		m    schemas.Memory
		vec  []byte
		cat  string
		meta string
	)
	dest := append([]any{&seq, &m.ID, &m.Text, &vec, &cat, &m.Scope, &m.Importance, &m.Timestamp, &meta,
		&m.SupersededBy, &m.ValidFrom, &m.InvalidatedAt}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return 0, m, err
	}
	m.Category = schemas.Category(cat)
	if vec != nil {
		m.Vector = decodeVector(vec)
	}
	m.Metadata = json.RawMessage(meta)
	return seq, m, nil
}

// Get implements engine.Store.
func (s *Store) Get(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (schemas.Memory, error) {
	if err := s.check(); err != nil {
		return schemas.Memory{}, err
	}
	seq, _, err := s.resolve(ctx, s.db, idOrPrefix, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	return s.getSeq(ctx, s.db, seq)
}

func (s *Store) getSeq(ctx context.Context, q querier, seq int64) (schemas.Memory, error) {
	_, m, err := scanMemory(q.QueryRowContext(ctx, `SELECT `+memoryColumns+` FROM memories WHERE seq = ?`, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return m, engine.ErrNotFound
	}
	return m, err
}

// Delete implements engine.Store.
func (s *Store) Delete(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	seq, id, err := s.resolve(ctx, tx, idOrPrefix, f)
	if err != nil {
		return "", err
	}
	if err := s.deleteSeqs(ctx, tx, []int64{seq}); err != nil {
		return "", err
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	s.ix.Remove(seq)
	return id, nil
}

func (s *Store) deleteSeqs(ctx context.Context, tx *sql.Tx, seqs []int64) error {
	del, err := tx.PrepareContext(ctx, `DELETE FROM memories WHERE seq = ?`)
	if err != nil {
		return err
	}
	defer del.Close()
	var delFTS *sql.Stmt
	if s.fts {
		if delFTS, err = tx.PrepareContext(ctx, `DELETE FROM memories_fts WHERE rowid = ?`); err != nil {
			return err
		}
		defer delFTS.Close()
	}
	for _, seq := range seqs {
		if _, err := del.ExecContext(ctx, seq); err != nil {
			return fmt.Errorf("delete memory: %w", err)
		}
		if delFTS != nil {
			if _, err := delFTS.ExecContext(ctx, seq); err != nil {
				return fmt.Errorf("unindex memory: %w", err)
			}
		}
	}
	return nil
}

// Update implements engine.Store.
func (s *Store) Update(ctx context.Context, idOrPrefix string, p engine.Patch, f engine.ScopeFilter) (schemas.Memory, error) {
	if err := s.check(); err != nil {
		return schemas.Memory{}, err
	}
	if p.Text != nil && p.Vector == nil {
		return schemas.Memory{}, fmt.Errorf("%w: a new text needs its new vector", schemas.ErrInvalid)
	}
	if p.Scope != nil && !f.Allows(*p.Scope) {
		return schemas.Memory{}, fmt.Errorf("%w: cannot move a memory to %q", engine.ErrScopeDenied, *p.Scope)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return schemas.Memory{}, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	seq, _, err := s.resolve(ctx, tx, idOrPrefix, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	m, err := s.getSeq(ctx, tx, seq)
	if err != nil {
		return m, err
	}
	old := m
	if p.Text != nil {
		m.Text = *p.Text
	}
	if p.Vector != nil {
		m.Vector = p.Vector
	}
	if p.Category != nil {
		m.Category = *p.Category
	}
	if p.Scope != nil {
		m.Scope = *p.Scope
	}
	if p.Importance != nil {
		m.Importance = *p.Importance
	}
	if p.Metadata != nil {
		m.Metadata = p.Metadata
	}
	if err := engine.ApplyLife(&m, p); err != nil {
		return old, err
	}
	if err := s.prepare(&m); err != nil {
		return old, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE memories SET text = ?, vector = ?, category = ?, scope = ?,
		importance = ?, metadata = ?, updated_at = ?, superseded_by = ?, invalidated_at = ? WHERE seq = ?`,
		m.Text, encodeVector(m.Vector), string(m.Category), m.Scope, m.Importance, string(m.Metadata),
		s.now().UnixMilli(), m.SupersededBy, m.InvalidatedAt, seq); err != nil {
		return old, fmt.Errorf("update memory: %w", err)
	}
	if s.fts && m.Text != old.Text {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memories_fts WHERE rowid = ?`, seq); err != nil {
			return old, fmt.Errorf("unindex memory: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories_fts (rowid, body) VALUES (?, ?)`, seq, fts.IndexText(m.Text)); err != nil {
			return old, fmt.Errorf("index memory: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return old, fmt.Errorf("commit: %w", err)
	}
	// The index holds vectors and groups: a change of neither (importance,
	// category, text without a new vector) leaves it, and its segment, be.
	if p.Vector != nil || groupKey(m.Scope, m.InvalidatedAt) != groupKey(old.Scope, old.InvalidatedAt) {
		_ = s.ix.Upsert(seq, s.group(groupKey(m.Scope, m.InvalidatedAt)), m.Vector)
	}
	return m, nil
}

// bulkWhere renders a BulkFilter as a SQL condition; ok is false when it
// matches nothing.
func bulkWhere(f engine.BulkFilter) (string, []any, error) {
	if f.Scopes.All() && f.Before <= 0 {
		return "", nil, engine.ErrUnfilteredBulk
	}
	cond, args := scopeClause("scope", f.Scopes)
	if f.Before > 0 {
		cond += " AND timestamp < ?"
		args = append(args, f.Before)
	}
	return cond, args, nil
}

// CountBulk implements engine.Store.
func (s *Store) CountBulk(ctx context.Context, f engine.BulkFilter) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	cond, args, err := bulkWhere(f)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.db.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE `+cond, args...).Scan(&n)
	return n, err
}

// BulkDelete implements engine.Store.
func (s *Store) BulkDelete(ctx context.Context, f engine.BulkFilter) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	cond, args, err := bulkWhere(f)
	if err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT seq FROM memories WHERE `+cond, args...)
	if err != nil {
		return 0, err
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			rows.Close()
			return 0, err
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := s.deleteSeqs(ctx, tx, seqs); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	for _, seq := range seqs {
		s.ix.Remove(seq)
	}
	return len(seqs), nil
}

// List implements engine.Store.
func (s *Store) List(ctx context.Context, o engine.ListOptions) ([]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if o.Scopes.Denies() {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = engine.DefaultListLimit
	}
	if o.Offset < 0 {
		o.Offset = 0
	}
	cond, args := "1", []any(nil)
	if !o.History {
		cond += " AND invalidated_at = 0"
	}
	if o.Category != "" {
		if !o.Category.Valid() {
			return nil, fmt.Errorf("%w: category %q", schemas.ErrInvalid, o.Category)
		}
		cond += " AND category = ?"
		args = append(args, string(o.Category))
	}
	if o.Since != 0 {
		cond += " AND timestamp >= ?"
		args = append(args, o.Since)
	}
	if o.Until != 0 {
		cond += " AND timestamp < ?"
		args = append(args, o.Until)
	}
	if o.Text != "" {
		// LIKE ignores ASCII case; lower() on both sides extends that
		// to the rest of Unicode as far as SQLite's lower does.
		cond += ` AND lower(text) LIKE ? ESCAPE '\'`
		args = append(args, "%"+likeEscape(strings.ToLower(o.Text))+"%")
	}
	if o.Session != "" {
		cond += ` AND CASE WHEN json_valid(metadata) THEN ? IN (json_extract(metadata, '$.sessionId'), json_extract(metadata, '$.sessionKey')) END`
		args = append(args, o.Session)
	}
	if o.Core {
		cond += " AND " + coreCond
	}
	if o.After != nil {
		// The bare timestamp bound lets the time index start at the
		// cursor instead of skipping every row before it.
		cond += " AND timestamp <= ? AND (timestamp < ? OR id < ?)"
		args = append(args, o.After.Timestamp, o.After.Timestamp, o.After.ID)
	}
	scopes := o.Scopes.Scopes()
	if o.Scopes.All() || len(scopes) == 1 || len(scopes) > maxMergedScopes {
		sc, sargs := scopeClause("scope", o.Scopes)
		return s.queryMemories(ctx, "list", `SELECT `+listColumns+` FROM memories WHERE `+sc+` AND `+cond+
			` ORDER BY timestamp DESC, id DESC LIMIT ? OFFSET ?`, slices.Concat(sargs, args, []any{o.Limit, o.Offset})...)
	}
	// A few scopes (an agent's own and global): each is read in time
	// order from its own index, up to the page's end, and the lists are
	// merged. One query over all of them would read every row of them and
	// sort: 150 ms at 100,000 memories, where this takes a few.
	var all []schemas.Memory
	for _, sc := range scopes {
		ms, err := s.queryMemories(ctx, "list", `SELECT `+listColumns+` FROM memories WHERE scope = ? AND `+cond+
			` ORDER BY timestamp DESC, id DESC LIMIT ?`, slices.Concat([]any{sc}, args, []any{o.Offset + o.Limit})...)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	slices.SortFunc(all, func(a, b schemas.Memory) int {
		return cmp.Or(cmp.Compare(b.Timestamp, a.Timestamp), cmp.Compare(b.ID, a.ID))
	})
	if o.Offset >= len(all) {
		return nil, nil
	}
	return all[o.Offset:min(len(all), o.Offset+o.Limit)], nil
}

// maxMergedScopes is the most scopes List reads one at a time and merges.
const maxMergedScopes = 16

// likeEscape escapes LIKE's wildcards (and its escape character) in s.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// queryMemories runs q (selecting memoryColumns or listColumns) and scans
// every row; what names the query in errors.
func (s *Store) queryMemories(ctx context.Context, what, q string, args ...any) ([]schemas.Memory, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []schemas.Memory
	for rows.Next() {
		_, m, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// AddedByDay implements engine.Store.
func (s *Store) AddedByDay(ctx context.Context, f engine.ScopeFilter, since int64) (map[string]int, error) {
	out := map[string]int{}
	if err := s.check(); err != nil {
		return out, err
	}
	cond, args := scopeClause("scope", f)
	rows, err := s.db.QueryContext(ctx, `SELECT date(timestamp / 1000, 'unixepoch'), count(*) FROM memories WHERE `+cond+
		` AND timestamp >= ? GROUP BY 1`, append(args, since)...)
	if err != nil {
		return out, fmt.Errorf("added by day: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var day string
		var n int
		if err := rows.Scan(&day, &n); err != nil {
			return out, err
		}
		out[day] = n
	}
	return out, rows.Err()
}

// Stats implements engine.Store.
func (s *Store) Stats(ctx context.Context, f engine.ScopeFilter) (engine.Stats, error) {
	st := engine.Stats{ByScope: map[string]int{}, ByCategory: map[string]int{}}
	if err := s.check(); err != nil {
		return st, err
	}
	cond, args := scopeClause("scope", f)
	rows, err := s.db.QueryContext(ctx, `SELECT scope, category, invalidated_at != 0, count(*) FROM memories WHERE `+cond+
		` GROUP BY scope, category, invalidated_at != 0`, args...)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var scope, cat string
		var n int
		var history bool
		if err := rows.Scan(&scope, &cat, &history, &n); err != nil {
			return st, err
		}
		if history {
			st.History += n
			continue
		}
		st.Total += n
		st.ByScope[scope] += n
		st.ByCategory[cat] += n
	}
	return st, rows.Err()
}

// defaultLimit is the result count of a search that names none, as in the
// seed's tools.
const defaultLimit = 5

// VectorSearch implements engine.Store.
func (s *Store) VectorSearch(ctx context.Context, vec []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(vec) != s.dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(vec), s.dim)
	}
	if err := schemas.ValidateVector(vec); err != nil {
		return nil, err
	}
	groups, ok := s.allowedGroups(o.Scopes, o.History)
	if !ok {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	// A minimum vector score is a minimum cosine, which the index uses to
	// skip hopeless candidates; a hair below it, so rounding never drops a
	// hit the score check keeps.
	minSim := float32(math.Inf(-1))
	if o.MinScore > 0 {
		minSim = float32(engine.CosineForScore(o.MinScore)) - 1e-5
	}
	hits := s.ix.SearchAbove(vec, o.Limit, groups, o.Probes, minSim)
	seqs := make([]int64, 0, len(hits))
	sims := make(map[int64]float64, len(hits))
	for _, h := range hits {
		if engine.VectorScore(float64(h.Sim)) < o.MinScore {
			continue
		}
		seqs = append(seqs, h.Key)
		sims[h.Key] = float64(h.Sim)
	}
	return s.fetch(ctx, seqs, o, func(seq int64) (float64, float64) {
		return engine.VectorScore(sims[seq]), sims[seq]
	})
}

// fetch loads the rows seqs in that order, dropping any the options do not
// allow (a second check behind the index's own: scope, history) or that
// vanished meanwhile.
func (s *Store) fetch(ctx context.Context, seqs []int64, o engine.SearchOptions, score func(int64) (float64, float64)) ([]engine.SearchResult, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	args := make([]any, len(seqs))
	for i, seq := range seqs {
		args[i] = seq
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+memoryColumns+` FROM memories WHERE seq IN (`+placeholders(len(seqs))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("fetch results: %w", err)
	}
	defer rows.Close()
	found := make(map[int64]schemas.Memory, len(seqs))
	for rows.Next() {
		seq, m, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		found[seq] = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]engine.SearchResult, 0, len(seqs))
	for _, seq := range seqs {
		m, ok := found[seq]
		if !ok || !o.Scopes.Allows(m.Scope) || (!o.History && !m.Current()) {
			continue
		}
		sc, raw := score(seq)
		out = append(out, engine.SearchResult{Memory: m, Score: sc, Raw: raw})
	}
	return out, nil
}

// TextSearch implements engine.Store.
func (s *Store) TextSearch(ctx context.Context, query string, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if !s.fts || o.Scopes.Denies() {
		return nil, nil
	}
	terms, err := s.selectiveTerms(ctx, fts.QueryTerms(query))
	if err != nil {
		return nil, err
	}
	match := fts.MatchTerms(terms)
	if match == "" {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	cond, args := scopeClause("m.scope", o.Scopes)
	if !o.History {
		cond += " AND m.invalidated_at = 0"
	}
	// FTS5's bm25() is lower-is-better; its negation is the usual raw score.
	q := `SELECT ` + memoryColumns + `, -bm25(memories_fts) FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
		WHERE memories_fts MATCH ? AND ` + cond + ` ORDER BY bm25(memories_fts) LIMIT ?`
	rows, err := s.db.QueryContext(ctx, q, append(append([]any{match}, args...), o.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("full-text search: %w", err)
	}
	defer rows.Close()
	var out []engine.SearchResult
	for rows.Next() {
		var r engine.SearchResult
		var err error
		if _, r.Memory, err = scanMemory(rows, &r.Raw); err != nil {
			return nil, err
		}
		r.Score = engine.NormalizeBM25(r.Raw)
		if r.Score < o.MinScore || !o.Scopes.Allows(r.Memory.Scope) {
			continue
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Terms found in more than maxDocShare of all memories (and in more than
// minCommonDocs) are left out of BM25 queries. Their IDF is near zero, so
// they barely move the ranking, but FTS5 scores every row holding any query
// term: "the" alone would make a query cost a scan of the whole store.
const (
	maxDocShare   = 0.02
	minCommonDocs = 2000
)

// selectiveTerms drops terms too common to be worth their cost, keeping
// terms the vocabulary does not know (phrases, diacritics) as they are.
func (s *Store) selectiveTerms(ctx context.Context, terms []string) ([]string, error) {
	limit := max(minCommonDocs, int(maxDocShare*float64(s.ix.Len())))
	if s.ix.Len() <= limit {
		return terms, nil
	}
	out := terms[:0:0]
	for _, t := range terms {
		docs, err := s.docFreq(ctx, t)
		if err != nil {
			return nil, err
		}
		if docs <= limit {
			out = append(out, t)
		}
	}
	return out, nil
}

// dfCacheSize bounds the document-frequency cache.
const dfCacheSize = 10000

type dfEntry struct {
	docs, atLen int
}

// docFreq is how many memories hold term (0 when the vocabulary does not
// know it). Counting reads the term's whole posting list, so answers are
// cached until the store's size moves by 5%: frequencies drift slowly.
func (s *Store) docFreq(ctx context.Context, term string) (int, error) {
	n := s.ix.Len()
	s.dfMu.Lock()
	e, ok := s.df[term]
	s.dfMu.Unlock()
	if ok && math.Abs(float64(n-e.atLen)) <= 0.05*float64(n) {
		return e.docs, nil
	}
	var docs int
	err := s.db.QueryRowContext(ctx, `SELECT doc FROM memories_fts_vocab WHERE term = ?`, term).Scan(&docs)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("full-text vocabulary: %w", err)
	}
	s.dfMu.Lock()
	if len(s.df) >= dfCacheSize {
		clear(s.df)
	}
	s.df[term] = dfEntry{docs: docs, atLen: n}
	s.dfMu.Unlock()
	return docs, nil
}

// Iterate implements engine.Store.
func (s *Store) Iterate(ctx context.Context, o engine.IterateOptions, fn func(schemas.Memory) error) error {
	if err := s.check(); err != nil {
		return err
	}
	cols := listColumns
	if o.WithVectors {
		cols = memoryColumns
	}
	cond, args := scopeClause("scope", o.Scopes)
	rows, err := s.db.QueryContext(ctx, `SELECT `+cols+` FROM memories WHERE `+cond+` ORDER BY seq`, args...)
	if err != nil {
		return fmt.Errorf("iterate: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		_, m, err := scanMemory(rows)
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Neighbors implements engine.Neighborer: the memories of scope just
// before and just after timestamp ts (up to n on each side, within window
// milliseconds), with their vectors, nearest first on each side.
func (s *Store) Neighbors(ctx context.Context, scope string, ts int64, n int, window int64) ([]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var out []schemas.Memory
	for _, side := range []struct {
		q     string
		bound int64
	}{
		{`SELECT ` + memoryColumns + ` FROM memories WHERE scope = ? AND invalidated_at = 0 AND timestamp < ? AND timestamp >= ? ORDER BY timestamp DESC LIMIT ?`, ts - window},
		{`SELECT ` + memoryColumns + ` FROM memories WHERE scope = ? AND invalidated_at = 0 AND timestamp > ? AND timestamp <= ? ORDER BY timestamp ASC LIMIT ?`, ts + window},
	} {
		ms, err := s.queryMemories(ctx, "neighbors", side.q, scope, ts, side.bound, n)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// Predecessors implements engine.Historian: the memories id replaced, most
// recently ended first.
func (s *Store) Predecessors(ctx context.Context, id string, f engine.ScopeFilter) ([]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cond, args := scopeClause("scope", f)
	// superseded_by != '' lets SQLite use the partial index on it: it
	// cannot tell that the bound id is not empty, and without it a show
	// read every row (76 ms at 100,000 memories, 0.1 ms with).
	return s.queryMemories(ctx, "predecessors", `SELECT `+listColumns+` FROM memories WHERE superseded_by = ? AND superseded_by != '' AND `+cond+
		` ORDER BY invalidated_at DESC, seq DESC`, append([]any{id}, args...)...)
}
