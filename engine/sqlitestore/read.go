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
	"slices"
	"strings"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

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

// Neighbors implements engine.Neighborer, in one statement for every
// point: a recall's three lookups cost a third less together than apart.
func (s *Store) Neighbors(ctx context.Context, at []engine.TimePoint, n int, window int64) ([][]schemas.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	out := make([][]schemas.Memory, len(at))
	for lo := 0; lo < len(at); lo += maxNeighborPoints {
		if err := s.neighbors(ctx, at[lo:min(lo+maxNeighborPoints, len(at))], n, window, out[lo:]); err != nil {
			return nil, fmt.Errorf("neighbors: %w", err)
		}
	}
	return out, nil
}

// neighbors answers up to maxNeighborPoints points into out. The
// statement finds the rows; they are read as search results are, mostly
// from the row cache: a recall's hits' neighbours are often other
// recalls' results, and reading each row's columns cost as much as
// finding it.
func (s *Store) neighbors(ctx context.Context, at []engine.TimePoint, n int, window int64, out [][]schemas.Memory) error {
	st, err := s.prepared(ctx, neighborStatements[len(at)])
	if err != nil {
		return err
	}
	args := make([]any, 0, 8*len(at))
	for _, p := range at {
		args = append(args, p.Scope, p.At, p.At-window, n, p.Scope, p.At, p.At+window, n)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var seqs []int64
	var of []int
	for rows.Next() {
		var seq int64
		var point int
		if err := rows.Scan(&seq, &point); err != nil {
			return err
		}
		seqs, of = append(seqs, seq), append(of, point)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(seqs) == 0 {
		return nil
	}
	found, err := s.readRows(ctx, seqs)
	if err != nil {
		return err
	}
	for i, seq := range seqs {
		// A row a write removed, ended or moved since the statement is
		// left out.
		if m, ok := found[seq]; ok && m.InvalidatedAt == 0 && m.Scope == at[of[i]].Scope {
			out[of[i]] = append(out[of[i]], m)
		}
	}
	return nil
}

// maxNeighborPoints is the most points one statement looks around (the
// configuration allows a recall 20); more go in several.
const maxNeighborPoints = 20

// neighborStatements[k] finds both sides of k points in one statement:
// for each point, the earlier ones, nearest first, then the later ones,
// each row with the point's number. SQLite returns a UNION ALL's arms in
// order, and TestNeighbors holds it.
var neighborStatements = func() [maxNeighborPoints + 1]string {
	const (
		before = `SELECT * FROM (SELECT seq, %d FROM memories WHERE scope = ? AND invalidated_at = 0 AND timestamp < ? AND timestamp >= ?
	ORDER BY timestamp DESC LIMIT ?)`
		after = `SELECT * FROM (SELECT seq, %d FROM memories WHERE scope = ? AND invalidated_at = 0 AND timestamp > ? AND timestamp <= ?
	ORDER BY timestamp ASC LIMIT ?)`
	)
	var out [maxNeighborPoints + 1]string
	var arms []string
	for k := 1; k <= maxNeighborPoints; k++ {
		arms = append(arms, fmt.Sprintf(before, k-1), fmt.Sprintf(after, k-1))
		out[k] = strings.Join(arms, "\nUNION ALL\n")
	}
	return out
}()

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
