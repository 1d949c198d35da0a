// Package sqlitestore is clawmem's default store: SQLite (pure Go, through
// modernc.org/sqlite) in WAL mode holds every memory durably, an FTS5 table
// gives BM25 search, and all vectors live in an in-memory index loaded at
// open. One process owns a store at a time.
package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/textindex"
	"github.com/clawmem/clawmem/engine/vecindex"
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
	// OnLayout, when set, is called when Open begins to lay out the
	// memories table of a store made before the vector came last
	// (vectorLast), with its row count; the function it returns is called
	// when that ends, with its error. A failure leaves the old layout,
	// which works, only slower: the store opens all the same.
	OnLayout func(rows int64) (done func(took time.Duration, err error))
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
	// text is the full-text index searches rank with, nil until loadText
	// has built it (FTS5 ranks meanwhile); textLoaded is done then.
	text       atomic.Pointer[textindex.Index]
	textLoaded sync.WaitGroup

	// wmu serialises writers so the database and the index change together
	// and dedup decisions made under it see every earlier write.
	wmu sync.Mutex
	// gens counts completed writes by scope (WriteGeneration).
	gens generations
	// rows keeps the rows searches read (readRows).
	rows rowCache
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

	// stmts are the search path's prepared statements (prepared).
	stmtMu sync.Mutex // held to prepare one
	stmts  sync.Map   // SQL → *sql.Stmt
}

var _ engine.Store = (*Store)(nil)

// memoriesTable is the memories table. The vector comes last: at 1,024
// dimensions it is 4 KiB, more than a page holds, so SQLite keeps the
// start of each row in its B-tree page and the rest on overflow pages. A
// column after the vector would be read by walking that overflow chain,
// which listing and recall (listColumns: every column but the vector,
// which the index in memory holds) did for every row while the vector came
// fourth; last, it leaves every other column in the row's local part.
// Stores made with the vector fourth are laid out again at open
// (vectorLast).
const memoriesTable = `CREATE TABLE IF NOT EXISTS memories (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	text       TEXT    NOT NULL,
	category   TEXT    NOT NULL,
	scope      TEXT    NOT NULL,
	importance REAL    NOT NULL,
	timestamp  INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	metadata   TEXT    NOT NULL DEFAULT '{}',
	superseded_by  TEXT    NOT NULL DEFAULT '',
	valid_from     INTEGER NOT NULL DEFAULT 0,
	invalidated_at INTEGER NOT NULL DEFAULT 0,
	vector     BLOB    NOT NULL
);`

const schema = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
` + memoriesTable + `
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
// mmapBytes is how much of the file reads go through a shared read-only
// mapping instead (SQLite's own ceiling, SQLITE_MAX_MMAP_SIZE).
const (
	maxConns  = 8
	cacheKiB  = 2048
	mmapBytes = 0x7fff0000
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
	// cacheKiB however large the database grows. Reads of the file's first
	// mmapBytes go through a read-only mapping (writes still go through
	// the WAL): a recall reads some sixty rows scattered over the file,
	// and reading each page into a connection's cache with a system call
	// and a copy was a quarter of a recall's CPU at 100,000 memories. The
	// pages a recall touches count in resident memory as file pages
	// (RssFile), clean ones the kernel takes back when it needs them.
	dsn := fileURI(filepath.Join(dir, FileName),
		"_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(ON)"+
			fmt.Sprintf("&_pragma=cache_size(-%d)&_pragma=mmap_size(%d)", cacheKiB, mmapBytes)+"&_txlock=immediate")
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.SetMaxOpenConns(maxConns)
	// Keep them all: database/sql keeps two idle connections by default
	// and closes the rest as they come back, so under concurrent recalls
	// connections were opened and closed all the time, each starting with
	// an empty page cache and its statements unprepared.
	db.SetMaxIdleConns(maxConns)
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
	// The int8 memory mode keeps RAM to the IVF codes; its posting lists
	// would be several times their size, so FTS5 ranks there.
	if s.fts && o.Index.Memory != vecindex.Int8 {
		if err := s.startText(); err != nil {
			s.Close()
			return nil, err
		}
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

// migrate adds the history columns to a store made before them and moves
// the vector last in a store made with it fourth.
func (s *Store) migrate(ctx context.Context) error {
	cols, err := tableColumns(ctx, s.db)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, name := range cols {
		have[name] = true
	}
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
	// The layout is only faster: a store whose copy fails (a full disk,
	// which it needs about three times the table for) opens as it was.
	_ = s.vectorLast(ctx)
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
	s.stmts.Range(func(_, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
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
