package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// tableColumns is the memories table's columns, in their order.
func tableColumns(ctx context.Context, db *sql.DB) ([]string, error) {
	var cols []string
	err := eachString(ctx, db, `SELECT name FROM pragma_table_info('memories') ORDER BY cid`, func(c string) { cols = append(cols, c) })
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return cols, nil
}

// vectorLast lays out again a memories table that has the vector before
// other columns, as every store made before memoriesTable put it last has
// (with the history columns made with the table or added later), so that
// reading a row's other columns no longer walks the vector's overflow
// pages. The table is copied whole into memoriesTable's layout: at a
// million memories of 1,024 dimensions that rewrites gigabytes, once, and
// the old table's pages stay in the file, free, for later writes to reuse.
//
// It is one transaction: a crash or a failure leaves the old table as it
// was. Every row keeps its seq, the rowid the full-text table and the
// vector segment know it by, so neither needs rebuilding, and the copy is
// into a table without the change log's triggers, so the log is as it
// was. The table's indexes and triggers are made again as they were.
func (s *Store) vectorLast(ctx context.Context) (err error) {
	cols, err := tableColumns(ctx, s.db)
	if err != nil {
		return err
	}
	if len(cols) == 0 || cols[len(cols)-1] == "vector" {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("lay out memories: %w", err)
	}
	defer tx.Rollback()
	// What depends on the table goes with it: its indexes (but the one its
	// UNIQUE constraint makes, which has no sql and comes back with the
	// table) and its triggers, made again once the rows are in.
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_master
		WHERE tbl_name = 'memories' AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY type, name`)
	if err != nil {
		return fmt.Errorf("lay out memories: read its indexes and triggers: %w", err)
	}
	var deps [][2]string // name, sql
	for rows.Next() {
		var d [2]string
		if err := rows.Scan(&d[0], &d[1]); err != nil {
			rows.Close()
			return fmt.Errorf("lay out memories: %w", err)
		}
		deps = append(deps, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("lay out memories: %w", err)
	}
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err != nil {
		return fmt.Errorf("lay out memories: %w", err)
	}
	if s.opts.OnLayout != nil {
		t0, done := time.Now(), s.opts.OnLayout(n)
		defer func() { done(time.Since(t0), err) }()
	}
	exec := func(what, q string) (sql.Result, error) {
		res, err := tx.ExecContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("lay out memories: %s: %w", what, err)
		}
		return res, nil
	}
	// Renamed, the old table takes its triggers along, so the copy fires
	// none; dropped, it takes them and its indexes away, freeing their
	// names for the new table's.
	if _, err := exec("rename the old table", `ALTER TABLE memories RENAME TO memories_old`); err != nil {
		return err
	}
	if _, err := exec("create the new table", memoriesTable); err != nil {
		return err
	}
	list := strings.Join(cols, ", ")
	res, err := exec("copy the rows", `INSERT INTO memories (`+list+`) SELECT `+list+` FROM memories_old ORDER BY seq`)
	if err != nil {
		return err
	}
	if copied, err := res.RowsAffected(); err != nil || copied != n {
		return fmt.Errorf("lay out memories: copied %d of %d rows (%v)", copied, n, err)
	}
	if _, err := exec("drop the old table", `DROP TABLE memories_old`); err != nil {
		return err
	}
	for _, d := range deps {
		if _, err := exec("recreate "+d[0], d[1]); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("lay out memories: commit: %w", err)
	}
	// The write-ahead log holds the whole new table now: give that disk
	// space back at once rather than at close.
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("lay out memories: checkpoint: %w", err)
	}
	return nil
}
