package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/schemas"
)

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
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
	s.rows.begin()
	defer s.rows.end()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	scopes := make([]string, len(ms))
	for i, m := range ms {
		s.indexPut(seqs[i], m)
		scopes[i] = m.Scope
	}
	s.gens.wrote(scopes...)
	return nil
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
	scope, err := scopeOfSeq(ctx, tx, seq)
	if err != nil {
		return "", err
	}
	if err := s.deleteSeqs(ctx, tx, []int64{seq}); err != nil {
		return "", err
	}
	s.rows.begin()
	defer s.rows.end()
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	s.unindex(seq)
	s.gens.wrote(scope)
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
	if err := engine.CheckPatch(p, f); err != nil {
		return schemas.Memory{}, err
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
	if err := engine.ApplyPatch(&m, p); err != nil {
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
	s.rows.begin()
	defer s.rows.end()
	if err := tx.Commit(); err != nil {
		return old, fmt.Errorf("commit: %w", err)
	}
	// The vector index holds vectors and groups: a change of neither
	// (importance, category, text without a new vector) leaves it, and its
	// segment, be.
	s.indexUpdate(seq, old, m, p.Vector != nil)
	s.gens.wrote(old.Scope, m.Scope)
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
	rows, err := tx.QueryContext(ctx, `SELECT seq, scope FROM memories WHERE `+cond, args...)
	if err != nil {
		return 0, err
	}
	var seqs []int64
	var scopes []string
	for rows.Next() {
		var seq int64
		var scope string
		if err := rows.Scan(&seq, &scope); err != nil {
			rows.Close()
			return 0, err
		}
		seqs, scopes = append(seqs, seq), append(scopes, scope)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if err := s.deleteSeqs(ctx, tx, seqs); err != nil {
		return 0, err
	}
	s.rows.begin()
	defer s.rows.end()
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("commit: %w", err)
	}
	for _, seq := range seqs {
		s.unindex(seq)
	}
	s.gens.wrote(scopes...)
	return len(seqs), nil
}
