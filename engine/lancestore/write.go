//go:build lancedb

package lancestore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow/go/v17/arrow"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

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
	defer s.gen.Add(1)
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

// Delete implements engine.Store.
func (s *Store) Delete(ctx context.Context, idOrPrefix string, f engine.ScopeFilter) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.gen.Add(1)
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
	if err := engine.CheckPatch(p, f); err != nil {
		return schemas.Memory{}, err
	}
	if p.Invalidate != nil || p.Restore {
		// The LanceDB table has no columns for a fact's life yet; saying so
		// beats a memory that looks superseded and is still recalled.
		return schemas.Memory{}, fmt.Errorf("%w: superseding and archiving need the SQLite store (storage.backend sqlite)", schemas.ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.gen.Add(1)
	id, err := s.resolve(ctx, idOrPrefix, f)
	if err != nil {
		return schemas.Memory{}, err
	}
	m, err := s.get(ctx, id)
	if err != nil {
		return m, err
	}
	old := m
	if err := engine.ApplyPatch(&m, p); err != nil {
		return old, err
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
	defer s.gen.Add(1)
	ids, err := s.matching(ctx, cond, f.Scopes)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	if err := s.tbl.Delete(ctx, cond); err != nil {
		return 0, fmt.Errorf("bulk delete: %w", err)
	}
	return len(ids), nil
}
