//go:build lancedb

package lancestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/lancedb/lancedb-go/pkg/contracts"
	"github.com/lancedb/lancedb-go/pkg/lancedb"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/schemas"
)

// Store implements engine.Store on a LanceDB table.
//
// lancedb-go v0.1.2 shapes it: every query returns rows as JSON, filters
// are SQL text (see escapeSQL), vector search ranks by L2 (clawmem
// re-ranks by cosine, see candidates), Update sets scalar columns only,
// and full-text queries are refused, so HasFullText reports false with it.
type Store struct {
	conn   contracts.IConnection
	tbl    contracts.ITable
	schema *arrow.Schema // the table's; writes follow it
	lay    layout
	fts    bool

	// mu makes every write — some are several LanceDB commits — one step
	// for this process's readers, and serialises writers so that the
	// checks a write makes (an id is free, a row exists) still hold when
	// it commits.
	mu     sync.RWMutex
	closed atomic.Bool
}

var _ engine.Store = (*Store)(nil)

// chunkIDs is how many ids one IN (...) filter names.
const chunkIDs = 256

// Open opens (creating if needed) the memories table at uri: a local
// directory or a LanceDB URI such as s3://bucket/prefix.
func Open(ctx context.Context, uri string, o Options) (*Store, error) {
	if err := o.Storage.Validate(); err != nil {
		return nil, fmt.Errorf("storage options: %w", err)
	}
	if !IsURI(uri) {
		if err := os.MkdirAll(uri, 0o700); err != nil {
			return nil, fmt.Errorf("create store dir: %w", err)
		}
	}
	conn, err := connect(ctx, uri, o.Storage)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, conn, o)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

// connect opens a LanceDB connection with the object-store settings.
func connect(ctx context.Context, uri string, o StorageOptions) (contracts.IConnection, error) {
	var opts *contracts.ConnectionOptions
	if o != (StorageOptions{}) {
		for k, v := range o.s3Environment() {
			if err := os.Setenv(k, v); err != nil {
				return nil, fmt.Errorf("set %s: %w", k, err)
			}
		}
		s3 := &contracts.S3Config{}
		for _, f := range []struct {
			dst **string
			v   string
		}{
			{&s3.Endpoint, o.Endpoint}, {&s3.Region, o.Region}, {&s3.AccessKeyID, o.AccessKeyID},
			{&s3.SecretAccessKey, o.SecretAccessKey}, {&s3.SessionToken, o.SessionToken},
		} {
			if f.v != "" {
				*f.dst = &f.v
			}
		}
		storage := &contracts.StorageOptions{S3Config: s3}
		if o.AllowHTTP {
			storage.AllowHTTP = &o.AllowHTTP
		}
		opts = &contracts.ConnectionOptions{StorageOptions: storage}
	}
	return lancedb.Connect(ctx, uri, opts)
}

func open(ctx context.Context, conn contracts.IConnection, o Options) (*Store, error) {
	tbl, err := openOrCreate(ctx, conn, o.Dimensions)
	if err != nil {
		return nil, err
	}
	s := &Store{conn: conn, tbl: tbl}
	if err := s.init(ctx, o); err != nil {
		tbl.Close()
		return nil, err
	}
	return s, nil
}

// openOrCreate opens the memories table, creating it when missing.
func openOrCreate(ctx context.Context, conn contracts.IConnection, dim int) (contracts.ITable, error) {
	names, err := conn.TableNames(ctx)
	if err != nil {
		return nil, err
	}
	if slices.Contains(names, TableName) {
		return conn.OpenTable(ctx, TableName)
	}
	if dim <= 0 {
		return nil, errors.New("the store is new: set embedding.dimensions (or a model with known dimensions)")
	}
	as, err := arrowSchema(proColumns(dim))
	if err != nil {
		return nil, err
	}
	schema, err := lancedb.NewSchema(as)
	if err != nil {
		return nil, err
	}
	tbl, err := conn.CreateTable(ctx, TableName, schema)
	if err != nil {
		// Another process may have created it meanwhile (the plugins
		// allow for the same race).
		if t, oerr := conn.OpenTable(ctx, TableName); oerr == nil {
			return t, nil
		}
		return nil, err
	}
	return tbl, nil
}

func (s *Store) init(ctx context.Context, o Options) error {
	schema, err := s.tbl.Schema(ctx)
	if err != nil {
		return err
	}
	lay, err := classify(columnsOf(schema))
	switch {
	case err != nil:
		return err
	case lay.plugin == PluginLegacy:
		return ErrLegacyTable
	case !lay.writable:
		return fmt.Errorf("the %s table lacks columns clawmem writes (it has %s): open it with OpenLegacy and copy it instead",
			TableName, schema)
	case o.Dimensions > 0 && o.Dimensions != lay.dim:
		return &engine.DimensionError{Table: lay.dim, Config: o.Dimensions}
	}
	s.schema, s.lay = schema, lay
	if err := s.repair(ctx); err != nil {
		return fmt.Errorf("finish an interrupted update: %w", err)
	}
	s.fts = s.initFullText(ctx)
	return nil
}

// initFullText makes sure the text column has a full-text index and
// reports whether full-text queries work. lancedb-go v0.1.2 refuses every
// one ("Full-text search is not currently supported"), so with it
// retrieval runs vector-only, as memory-lancedb-pro does without an index.
func (s *Store) initFullText(ctx context.Context) bool {
	idx, err := s.tbl.GetAllIndexes(ctx)
	if err != nil {
		return false
	}
	if !slices.ContainsFunc(idx, func(i contracts.IndexInfo) bool { return slices.Contains(i.Columns, "text") }) {
		if err := s.tbl.CreateIndex(ctx, []string{"text"}, contracts.IndexTypeFts); err != nil {
			return false
		}
	}
	_, err = s.tbl.FullTextSearch(ctx, "text", "clawmem")
	return err == nil
}

// Dimensions implements engine.Store.
func (s *Store) Dimensions() int { return s.lay.dim }

// HasFullText implements engine.Store.
func (s *Store) HasFullText() bool { return s.fts }

// Len is the number of rows in the table (0 when it cannot be counted).
func (s *Store) Len() int {
	if s.check() != nil {
		return 0
	}
	n, err := s.tbl.Count(context.Background())
	if err != nil {
		return 0
	}
	return int(n)
}

// Close implements engine.Store.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.tbl.Close(), s.conn.Close())
}

func (s *Store) check() error {
	if s.closed.Load() {
		return engine.ErrClosed
	}
	return nil
}

// rows runs a plain query: every row matching where ("" for all), with
// the columns named (nil for all).
func (s *Store) rows(ctx context.Context, where string, columns []string) ([]map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows, err := s.tbl.Select(ctx, contracts.QueryConfig{Columns: columns, Where: where})
	if err != nil {
		return nil, fmt.Errorf("query memories: %w", err)
	}
	return rows, nil
}

// memories maps rows, leaving out any that is not a memory (the plugin's
// placeholder, the old row of an update in progress).
func (s *Store) memories(rows []map[string]any) ([]schemas.Memory, error) {
	out := make([]schemas.Memory, 0, len(rows))
	for _, r := range rows {
		m, err := rowToMemory(r, s.lay.timeColumn)
		if err != nil {
			return nil, err
		}
		if schemas.IsUUID(m.ID) {
			out = append(out, m)
		}
	}
	return out, nil
}

// prepare normalises and validates m for writing.
func (s *Store) prepare(m *schemas.Memory) error {
	m.Normalize()
	if err := m.Validate(); err != nil {
		return err
	}
	if len(m.Vector) != s.lay.dim {
		return fmt.Errorf("%w: vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(m.Vector), s.lay.dim)
	}
	return nil
}

// Add implements engine.Store.
func (s *Store) Add(ctx context.Context, ms ...schemas.Memory) ([]schemas.Memory, error) {
	out := engine.Stamped(ms, time.Now().UnixMilli())
	if err := s.insert(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Import implements engine.Store.
func (s *Store) Import(ctx context.Context, ms ...schemas.Memory) error {
	batch, err := engine.ForImport(ms, time.Now().UnixMilli())
	if err != nil {
		return err
	}
	for _, m := range batch {
		if !m.Current() {
			return fmt.Errorf("%w: memory %s is history (superseded or archived), which needs the SQLite store", schemas.ErrInvalid, m.ID)
		}
	}
	return s.insert(ctx, batch)
}

// insert writes ms in one commit, after checking that none of their ids
// is taken.
func (s *Store) insert(ctx context.Context, ms []schemas.Memory) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(ms) == 0 {
		return nil
	}
	ids := make([]string, len(ms))
	seen := make(map[string]bool, len(ms))
	for i := range ms {
		if err := s.prepare(&ms[i]); err != nil {
			if len(ms) > 1 {
				return fmt.Errorf("memory %d of %d: %w", i+1, len(ms), err)
			}
			return err
		}
		if seen[ms[i].ID] {
			return fmt.Errorf("%w: %s", engine.ErrExists, ms[i].ID)
		}
		seen[ms[i].ID] = true
		ids[i] = ms[i].ID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for chunk := range slices.Chunk(ids, chunkIDs) {
		cond, err := idIn(chunk)
		if err != nil {
			return err
		}
		taken, err := s.rows(ctx, cond, []string{"id"})
		if err != nil {
			return err
		}
		if len(taken) > 0 {
			return fmt.Errorf("%w: %v", engine.ErrExists, taken[0]["id"])
		}
	}
	return s.write(ctx, ms)
}

// write appends ms to the table: one commit, all or nothing.
func (s *Store) write(ctx context.Context, ms []schemas.Memory) error {
	rec, err := record(s.schema, ms)
	if err != nil {
		return err
	}
	defer rec.Release()
	if err := s.tbl.AddRecords(ctx, []arrow.Record{rec}, nil); err != nil {
		return fmt.Errorf("write memories: %w", err)
	}
	return nil
}

// Has implements engine.Store.
func (s *Store) Has(ctx context.Context, id string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	id = strings.ToLower(id)
	if !schemas.IsUUID(id) {
		return false, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.has(ctx, id)
}

func (s *Store) has(ctx context.Context, id string) (bool, error) {
	cond, err := idIs(id)
	if err != nil {
		return false, err
	}
	rows, err := s.rows(ctx, cond, []string{"id"})
	return len(rows) > 0, err
}

// maxListedMatches bounds how many ids an ambiguity error names.
const maxListedMatches = 10

// resolve finds the id of a memory by full id or prefix. The caller holds
// mu.
func (s *Store) resolve(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	key := strings.ToLower(strings.TrimSpace(idOrPrefix))
	if err := schemas.ValidateIDOrPrefix(key); err != nil {
		return "", err
	}
	sc, ok := scopeCond(f)
	if !ok {
		return "", fmt.Errorf("%w: %s", engine.ErrNotFound, key)
	}
	var idc string
	var err error
	if schemas.IsUUID(key) {
		idc, err = idIs(key)
	} else {
		idc, err = idPrefix(key)
	}
	if err != nil {
		return "", err
	}
	rows, err := s.rows(ctx, and(idc, sc), []string{"id", "scope"})
	if err != nil {
		return "", fmt.Errorf("look up %s: %w", key, err)
	}
	var ids []string
	for _, r := range rows {
		id, _ := r["id"].(string)
		scope, _ := r["scope"].(string)
		if schemas.IsUUID(id) && f.Allows(scope) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w: %s", engine.ErrNotFound, key)
	case 1:
		return ids[0], nil
	}
	if len(ids) > maxListedMatches {
		ids = append(ids[:maxListedMatches], "…")
	}
	return "", &engine.AmbiguousError{Prefix: key, Matches: ids}
}

// Resolve implements engine.Store.
func (s *Store) Resolve(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.resolve(ctx, idOrPrefix, f)
}

// get reads one memory with its vector. The caller holds mu.
func (s *Store) get(ctx context.Context, id string) (schemas.Memory, error) {
	cond, err := idIs(id)
	if err != nil {
		return schemas.Memory{}, err
	}
	rows, err := s.rows(ctx, cond, nil)
	if err != nil {
		return schemas.Memory{}, err
	}
	ms, err := s.memories(rows)
	if err != nil {
		return schemas.Memory{}, err
	}
	if len(ms) == 0 {
		return schemas.Memory{}, fmt.Errorf("%w: %s", engine.ErrNotFound, id)
	}
	return ms[0], nil
}

// Get implements engine.Store.
func (s *Store) Get(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (schemas.Memory, error) {
	if err := s.check(); err != nil {
		return schemas.Memory{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	id, err := s.resolve(ctx, idOrPrefix, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	return s.get(ctx, id)
}

// Delete implements engine.Store.
func (s *Store) Delete(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.resolve(ctx, idOrPrefix, f)
	if err != nil {
		return "", err
	}
	cond, err := idIs(id)
	if err != nil {
		return "", err
	}
	if err := s.tbl.Delete(ctx, cond); err != nil {
		return "", fmt.Errorf("delete memory: %w", err)
	}
	return id, nil
}

// Update implements engine.Store. A change of category, scope or
// importance is one in-place LanceDB update. A new text, vector or
// metadata is written as a new row replacing the old one (see replace):
// lancedb-go's Update takes only scalar SQL values, which vectors are not,
// and free text is kept out of SQL altogether.
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
	if p.Invalidate != nil || p.Restore {
		// The LanceDB table has no columns for a fact's life yet; saying so
		// beats a memory that looks superseded and is still recalled.
		return schemas.Memory{}, fmt.Errorf("%w: superseding and archiving need the SQLite store (storage.backend sqlite)", schemas.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := s.resolve(ctx, idOrPrefix, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	m, err := s.get(ctx, id)
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
	if err := s.prepare(&m); err != nil {
		return old, err
	}
	if p.Text == nil && p.Vector == nil && p.Metadata == nil {
		err = s.updateInPlace(ctx, old, m)
	} else {
		err = s.replace(ctx, old, m)
	}
	if err != nil {
		return old, err
	}
	return m, nil
}

// updateInPlace sets the changed scalar columns of one row in one commit.
// lancedb-go quotes a string value itself, so it gets escapeSQL's body.
func (s *Store) updateInPlace(ctx context.Context, old, m schemas.Memory) error {
	set := map[string]any{}
	for _, c := range []struct {
		col      string
		old, new string
	}{{"category", string(old.Category), string(m.Category)}, {"scope", old.Scope, m.Scope}} {
		if c.new == c.old {
			continue
		}
		body, err := escapeSQL(c.new)
		if err != nil {
			return err
		}
		set[c.col] = body
	}
	if m.Importance != old.Importance {
		set["importance"] = floatValue(m.Importance)
	}
	if len(set) == 0 {
		return nil
	}
	cond, err := idIs(m.ID)
	if err != nil {
		return err
	}
	if err := s.tbl.Update(ctx, cond, set); err != nil {
		return fmt.Errorf("update memory: %w", err)
	}
	return nil
}

// replace writes m in place of old (same id) in three commits, each of
// which leaves a state Open can finish: the old row is renamed to
// id~replaced (no read returns it), m is added, the old row is deleted.
// A crash after the rename leaves the old row to restore, a crash after
// the add one to delete (see repair). This process's readers see none of
// it: the caller holds mu.
func (s *Store) replace(ctx context.Context, old, m schemas.Memory) error {
	tomb := old.ID + tombSuffix
	if err := s.rename(ctx, old.ID, tomb); err != nil {
		return fmt.Errorf("update memory: %w", err)
	}
	if err := s.write(ctx, []schemas.Memory{m}); err != nil {
		if rerr := s.rename(ctx, tomb, old.ID); rerr != nil {
			return errors.Join(err, fmt.Errorf("restore the old row (the next open restores it): %w", rerr))
		}
		return err
	}
	cond, err := idIs(tomb)
	if err != nil {
		return err
	}
	// The update is done; a failure here leaves an unreadable row that
	// the next open deletes.
	_ = s.tbl.Delete(ctx, cond)
	return nil
}

// rename changes the id of the row with id from.
func (s *Store) rename(ctx context.Context, from, to string) error {
	cond, err := idIs(from)
	if err != nil {
		return err
	}
	body, err := escapeSQL(to)
	if err != nil {
		return err
	}
	return s.tbl.Update(ctx, cond, map[string]any{"id": body})
}

// repair finishes replacements a crash interrupted: an old row whose
// memory was rewritten is deleted, one whose memory was not is restored.
func (s *Store) repair(ctx context.Context) error {
	pattern, err := literal("%" + tombSuffix)
	if err != nil {
		return err
	}
	rows, err := s.rows(ctx, "id LIKE "+pattern, []string{"id"})
	if err != nil {
		return err
	}
	for _, r := range rows {
		tomb, _ := r["id"].(string)
		id := strings.TrimSuffix(tomb, tombSuffix)
		if !schemas.IsUUID(id) {
			continue
		}
		rewritten, err := s.has(ctx, id)
		if err != nil {
			return err
		}
		if !rewritten {
			if err := s.rename(ctx, tomb, id); err != nil {
				return err
			}
			continue
		}
		cond, err := idIs(tomb)
		if err != nil {
			return err
		}
		if err := s.tbl.Delete(ctx, cond); err != nil {
			return err
		}
	}
	return nil
}

// matching returns the ids of the memories matching cond that f allows.
// The caller holds mu.
func (s *Store) matching(ctx context.Context, cond string, f engine.ScopeFilter) ([]string, error) {
	rows, err := s.rows(ctx, cond, []string{"id", "scope"})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range rows {
		id, _ := r["id"].(string)
		scope, _ := r["scope"].(string)
		if schemas.IsUUID(id) && f.Allows(scope) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// CountBulk implements engine.Store.
func (s *Store) CountBulk(ctx context.Context, f engine.BulkFilter) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	cond, ok, err := bulkCond(f, s.lay.floatTime)
	if err != nil || !ok {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids, err := s.matching(ctx, cond, f.Scopes)
	return len(ids), err
}

// BulkDelete implements engine.Store: one delete of every matching row,
// counted first under the same lock.
func (s *Store) BulkDelete(ctx context.Context, f engine.BulkFilter) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	cond, ok, err := bulkCond(f, s.lay.floatTime)
	if err != nil || !ok {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, err := s.matching(ctx, cond, f.Scopes)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	if err := s.tbl.Delete(ctx, cond); err != nil {
		return 0, fmt.Errorf("bulk delete: %w", err)
	}
	return len(ids), nil
}

// List implements engine.Store. LanceDB queries have no ORDER BY, so the
// ids and times of the matching rows are read and sorted, and only the
// page is read in full.
func (s *Store) List(ctx context.Context, o engine.ListOptions) ([]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cond, ok, err := listCond(o)
	if err != nil || !ok {
		return nil, err
	}
	if o.Limit <= 0 {
		o.Limit = engine.DefaultListLimit
	}
	o.Offset = max(o.Offset, 0)
	s.mu.RLock()
	defer s.mu.RUnlock()
	columns := []string{"id", "scope", "timestamp"}
	if o.Text != "" {
		columns = append(columns, "text")
	}
	if o.Session != "" || o.Core {
		columns = append(columns, "metadata")
	}
	rows, err := s.rows(ctx, cond, columns)
	if err != nil {
		return nil, err
	}
	type key struct {
		id string
		ts float64
	}
	text := strings.ToLower(o.Text)
	keys := make([]key, 0, len(rows))
	for _, r := range rows {
		id, _ := r["id"].(string)
		scope, _ := r["scope"].(string)
		ts, _ := r["timestamp"].(float64)
		if !schemas.IsUUID(id) || !o.Scopes.Allows(scope) || !listKeeps(o, int64(ts), id) {
			continue
		}
		if t, _ := r["text"].(string); text != "" && !strings.Contains(strings.ToLower(t), text) {
			continue
		}
		if md, _ := r["metadata"].(string); o.Session != "" && !engine.NamesSession(json.RawMessage(md), o.Session) ||
			o.Core && !engine.MarkedCore(json.RawMessage(md)) {
			continue
		}
		keys = append(keys, key{id, ts})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(b.ts, a.ts); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	if o.Offset >= len(keys) {
		return nil, nil
	}
	keys = keys[o.Offset:min(len(keys), o.Offset+o.Limit)]
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = k.id
	}
	page, err := s.byIDs(ctx, ids, readColumns)
	if err != nil {
		return nil, err
	}
	out := make([]schemas.Memory, 0, len(ids))
	for _, id := range ids {
		if m, ok := page[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// AddedByDay implements engine.Store.
func (s *Store) AddedByDay(ctx context.Context, f engine.ScopeFilter, since int64) (map[string]int, error) {
	out := map[string]int{}
	if err := s.check(); err != nil {
		return out, err
	}
	cond, ok := scopeCond(f)
	if !ok {
		return out, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	rows, err := s.rows(ctx, cond, []string{"id", "scope", "timestamp"})
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		id, _ := r["id"].(string)
		scope, _ := r["scope"].(string)
		ts, _ := r["timestamp"].(float64)
		if schemas.IsUUID(id) && f.Allows(scope) && int64(ts) >= since {
			out[time.UnixMilli(int64(ts)).UTC().Format(time.DateOnly)]++
		}
	}
	return out, nil
}

// listKeeps applies List's time bounds and its After key to one row.
func listKeeps(o engine.ListOptions, ts int64, id string) bool {
	switch {
	case o.Since != 0 && ts < o.Since, o.Until != 0 && ts >= o.Until:
		return false
	case o.After != nil:
		return ts < o.After.Timestamp || (ts == o.After.Timestamp && id < o.After.ID)
	}
	return true
}

// byIDs reads the memories with these ids. The caller holds mu.
func (s *Store) byIDs(ctx context.Context, ids []string, columns []string) (map[string]schemas.Memory, error) {
	out := make(map[string]schemas.Memory, len(ids))
	for chunk := range slices.Chunk(ids, chunkIDs) {
		cond, err := idIn(chunk)
		if err != nil {
			return nil, err
		}
		rows, err := s.rows(ctx, cond, columns)
		if err != nil {
			return nil, err
		}
		ms, err := s.memories(rows)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			out[m.ID] = m
		}
	}
	return out, nil
}

// Stats implements engine.Store.
func (s *Store) Stats(ctx context.Context, f engine.ScopeFilter) (engine.Stats, error) {
	st := engine.Stats{ByScope: map[string]int{}, ByCategory: map[string]int{}}
	if err := s.check(); err != nil {
		return st, err
	}
	cond, ok := scopeCond(f)
	if !ok {
		return st, nil
	}
	s.mu.RLock()
	rows, err := s.rows(ctx, cond, []string{"id", "scope", "category"})
	s.mu.RUnlock()
	if err != nil {
		return st, err
	}
	ms, err := s.memories(rows)
	if err != nil {
		return st, err
	}
	for _, m := range ms {
		if !f.Allows(m.Scope) {
			continue
		}
		st.Total++
		st.ByScope[m.Scope]++
		st.ByCategory[string(m.Category)]++
	}
	return st, nil
}

// VectorSearch implements engine.Store: LanceDB's nearest rows by L2 to
// the unit query, with the scope filter applied before the search,
// re-ranked by exact cosine.
func (s *Store) VectorSearch(ctx context.Context, vec []float32, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(vec) != s.lay.dim {
		return nil, fmt.Errorf("%w: query vector has %d dimensions, the store has %d", schemas.ErrInvalid, len(vec), s.lay.dim)
	}
	if err := schemas.ValidateVector(vec); err != nil {
		return nil, err
	}
	cond, ok := scopeCond(o.Scopes)
	if !ok {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	rows, err := s.tbl.VectorSearchWithFilter(ctx, "vector", unit(vec), candidates(o.Limit, cond != ""), cond)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	ms, err := s.memories(rows)
	if err != nil {
		return nil, err
	}
	return rankVector(ms, vec, o), nil
}

// TextSearch implements engine.Store: BM25 over LanceDB's full-text index
// when the library can query it, else nothing (HasFullText is false).
func (s *Store) TextSearch(ctx context.Context, query string, o engine.SearchOptions) ([]engine.SearchResult, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cond, ok := scopeCond(o.Scopes)
	if !s.fts || !ok {
		return nil, nil
	}
	// The query becomes a bag of words: no syntax reaches the index.
	terms := fts.QueryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	if o.Limit <= 0 {
		o.Limit = defaultLimit
	}
	s.mu.RLock()
	rows, err := s.tbl.FullTextSearchWithFilter(ctx, "text", strings.Join(terms, " "), cond)
	s.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("full-text search: %w", err)
	}
	out := make([]engine.SearchResult, 0, len(rows))
	for _, r := range rows {
		m, err := rowToMemory(r, s.lay.timeColumn)
		if err != nil {
			return nil, err
		}
		raw, _ := r["_score"].(float64)
		score := engine.NormalizeBM25(raw)
		if !schemas.IsUUID(m.ID) || !o.Scopes.Allows(m.Scope) || score < o.MinScore {
			continue
		}
		out = append(out, engine.SearchResult{Memory: m, Score: score, Raw: raw})
	}
	sortResults(out)
	return out[:min(len(out), o.Limit)], nil
}

// Iterate implements engine.Store. The ids are read first and the rows a
// chunk at a time; fn runs without the lock held, so it may write.
func (s *Store) Iterate(ctx context.Context, o engine.IterateOptions, fn func(schemas.Memory) error) error {
	if err := s.check(); err != nil {
		return err
	}
	cond, ok := scopeCond(o.Scopes)
	if !ok {
		return nil
	}
	s.mu.RLock()
	ids, err := s.matching(ctx, cond, o.Scopes)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	columns := readColumns
	if o.WithVectors {
		columns = nil
	}
	for chunk := range slices.Chunk(ids, chunkIDs) {
		s.mu.RLock()
		ms, err := s.byIDs(ctx, chunk, columns)
		s.mu.RUnlock()
		if err != nil {
			return err
		}
		for _, id := range chunk {
			m, ok := ms[id]
			if !ok || !o.Scopes.Allows(m.Scope) {
				continue
			}
			if err := fn(m); err != nil {
				return err
			}
		}
	}
	return nil
}
