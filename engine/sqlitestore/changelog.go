package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/schemas"
)

// changeSchema is the change log: triggers record every insert, update
// and delete of a memory in the transaction that makes it, whichever code
// path writes. The memory log's publisher reads it and trims what
// JetStream has stored, so a crash between a commit and its publish
// loses nothing: the rows are still here at the next start.
const changeSchema = `
CREATE TABLE IF NOT EXISTS changes (rev INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, scope TEXT NOT NULL, deleted INTEGER NOT NULL);
CREATE TRIGGER IF NOT EXISTS changes_ins AFTER INSERT ON memories BEGIN INSERT INTO changes (id, scope, deleted) VALUES (NEW.id, NEW.scope, 0); END;
CREATE TRIGGER IF NOT EXISTS changes_upd AFTER UPDATE ON memories BEGIN INSERT INTO changes (id, scope, deleted) VALUES (NEW.id, NEW.scope, 0); END;
CREATE TRIGGER IF NOT EXISTS changes_del AFTER DELETE ON memories BEGIN INSERT INTO changes (id, scope, deleted) VALUES (OLD.id, OLD.scope, 1); END;`

// noChangeSchema turns the change log off (Options.NoChangeLog).
const noChangeSchema = `
DROP TRIGGER IF EXISTS changes_ins; DROP TRIGGER IF EXISTS changes_upd; DROP TRIGGER IF EXISTS changes_del;
CREATE TABLE IF NOT EXISTS changes (rev INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, scope TEXT NOT NULL, deleted INTEGER NOT NULL);
DELETE FROM changes;`

var (
	_ engine.ChangeLogger = (*Store)(nil)
	_ engine.LogApplier   = (*Store)(nil)
)

// Changes implements engine.ChangeLogger: the changes after rev, oldest
// first, each memory once (its last change in the batch) with its state
// now. A memory changed and then deleted comes as deleted.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]engine.Change, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT rev, id, scope, deleted FROM changes WHERE rev > ? ORDER BY rev LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	var all []engine.Change
	for rows.Next() {
		var c engine.Change
		if err := rows.Scan(&c.Rev, &c.ID, &c.Scope, &c.Deleted); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	last := map[string]int{}
	for i, c := range all {
		last[c.ID] = i
	}
	var out []engine.Change
	var ids []any
	for i, c := range all {
		if last[c.ID] != i {
			continue
		}
		out = append(out, c)
		if !c.Deleted {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	now := map[string]schemas.Memory{}
	q := `SELECT ` + memoryColumns + ` FROM memories WHERE id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
	mrows, err := s.db.QueryContext(ctx, q, ids...)
	if err != nil {
		return nil, fmt.Errorf("read changed memories: %w", err)
	}
	defer mrows.Close()
	for mrows.Next() {
		_, m, err := scanMemory(mrows)
		if err != nil {
			return nil, err
		}
		now[m.ID] = m
	}
	if err := mrows.Err(); err != nil {
		return nil, err
	}
	for i, c := range out {
		if m, ok := now[c.ID]; ok && !c.Deleted {
			out[i].Memory, out[i].Scope = m, m.Scope
		} else {
			out[i].Deleted = true // deleted since: its delete row is in a later batch
		}
	}
	return out, nil
}

// TrimChanges implements engine.ChangeLogger.
func (s *Store) TrimChanges(ctx context.Context, upTo int64, logSeq uint64) error {
	if err := s.check(); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE rev <= ?`, upTo); err != nil {
		return err
	}
	if logSeq > 0 {
		if err := setLogSeq(ctx, tx, logSeq); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// LogAll implements engine.ChangeLogger.
func (s *Store) LogAll(ctx context.Context) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	res, err := s.db.ExecContext(ctx, `INSERT INTO changes (id, scope, deleted) SELECT id, scope, 0 FROM memories ORDER BY seq`)
	if err != nil {
		return 0, fmt.Errorf("log every memory: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// logSeqKey is the meta key of the last memory log sequence applied.
const logSeqKey = "log_seq"

// LogSeq implements engine.LogApplier.
func (s *Store) LogSeq(ctx context.Context) (uint64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, logSeqKey).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(v, 10, 64)
}

// ApplyLog implements engine.LogApplier: puts replace a memory whole (or
// add it), deletes remove one if it is here, and the log sequence moves to
// seq, all in one transaction.
func (s *Store) ApplyLog(ctx context.Context, seq uint64, puts []schemas.Memory, deletes []string) error {
	if err := s.check(); err != nil {
		return err
	}
	for i := range puts {
		if !schemas.IsUUID(puts[i].ID) {
			return fmt.Errorf("%w: memory id %q", schemas.ErrInvalid, puts[i].ID)
		}
		if err := s.prepare(&puts[i]); err != nil {
			return fmt.Errorf("memory %s: %w", puts[i].ID, err)
		}
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	// What the log brings is the log's already: the triggers' rows for it
	// go with the transaction, so a rebuilt store that becomes a writer's
	// does not publish every memory again.
	var logged int64
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(rev), 0) FROM changes`).Scan(&logged); err != nil {
		return err
	}
	// The scopes the entries change, for WriteGeneration: a deleted
	// memory's, and a put memory's before and after (a put may move it).
	var removed []int64
	var scopes []string
	for _, id := range deletes {
		var seq int64
		var scope string
		err := tx.QueryRowContext(ctx, `SELECT seq, scope FROM memories WHERE id = ?`, id).Scan(&seq, &scope)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		removed, scopes = append(removed, seq), append(scopes, scope)
	}
	if err := s.deleteSeqs(ctx, tx, removed); err != nil {
		return err
	}
	put := make([]int64, len(puts))
	for i, m := range puts {
		var was string
		err := tx.QueryRowContext(ctx, `SELECT scope FROM memories WHERE id = ?`, m.ID).Scan(&was)
		switch {
		case err == nil:
			scopes = append(scopes, was)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if put[i], err = s.putTx(ctx, tx, m); err != nil {
			return err
		}
		scopes = append(scopes, m.Scope)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE rev > ?`, logged); err != nil {
		return err
	}
	if err := setLogSeq(ctx, tx, seq); err != nil {
		return err
	}
	s.rows.begin()
	defer s.rows.end()
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	for _, seq := range removed {
		s.unindex(seq)
	}
	for i, m := range puts {
		s.indexPut(put[i], m)
	}
	s.gens.wrote(scopes...)
	return nil
}

// setLogSeq records in tx how far the store has the memory log. The
// sequence only moves forward: a writer records what it published, a
// follower what it applied, and the later of the two stands.
func setLogSeq(ctx context.Context, tx *sql.Tx, seq uint64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value
		WHERE CAST(excluded.value AS INTEGER) > CAST(meta.value AS INTEGER)`, logSeqKey, strconv.FormatUint(seq, 10))
	return err
}

// putTx writes m whole under its id, keeping the row's seq when it exists.
func (s *Store) putTx(ctx context.Context, tx *sql.Tx, m schemas.Memory) (int64, error) {
	var seq int64
	err := tx.QueryRowContext(ctx, `INSERT INTO memories
		(id, text, vector, category, scope, importance, timestamp, updated_at, metadata, superseded_by, valid_from, invalidated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT(id) DO UPDATE SET text = excluded.text, vector = excluded.vector, category = excluded.category,
			scope = excluded.scope, importance = excluded.importance, timestamp = excluded.timestamp,
			updated_at = excluded.updated_at, metadata = excluded.metadata, superseded_by = excluded.superseded_by,
			valid_from = excluded.valid_from, invalidated_at = excluded.invalidated_at
		RETURNING seq`,
		m.ID, m.Text, encodeVector(m.Vector), string(m.Category), m.Scope, m.Importance, m.Timestamp, s.now().UnixMilli(),
		string(m.Metadata), m.SupersededBy, m.ValidFrom, m.InvalidatedAt).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("put memory %s: %w", m.ID, err)
	}
	if s.fts {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memories_fts WHERE rowid = ?`, seq); err != nil {
			return 0, fmt.Errorf("unindex memory: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories_fts (rowid, body) VALUES (?, ?)`, seq, fts.IndexText(m.Text)); err != nil {
			return 0, fmt.Errorf("index memory: %w", err)
		}
	}
	return seq, nil
}
