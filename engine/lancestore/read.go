//go:build lancedb

package lancestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

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
