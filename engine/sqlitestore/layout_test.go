package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// The memories table as stores made it before the vector moved last:
// first without the history columns, which ALTER TABLE added at an open
// later, then with them.
const (
	oldColumns = `CREATE TABLE memories (
	seq        INTEGER PRIMARY KEY,
	id         TEXT    NOT NULL UNIQUE,
	text       TEXT    NOT NULL,
	vector     BLOB    NOT NULL,
	category   TEXT    NOT NULL,
	scope      TEXT    NOT NULL,
	importance REAL    NOT NULL,
	timestamp  INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	metadata   TEXT    NOT NULL DEFAULT '{}'`
	firstMemoriesTable   = oldColumns + "\n)"
	historyMemoriesTable = oldColumns + `,
	superseded_by  TEXT    NOT NULL DEFAULT '',
	valid_from     INTEGER NOT NULL DEFAULT 0,
	invalidated_at INTEGER NOT NULL DEFAULT 0
)`
)

// rawDB opens the database of the closed store in dir without the store.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", fileURI(filepath.Join(dir, FileName), "_pragma=busy_timeout(10000)"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// toOldLayout lays the memories table of the closed store in dir out as
// an older clawmem made it (create, then the statements after), keeping
// every row, its seq, and the table's indexes and triggers, and firing no
// trigger. extra are statements run after the table is made.
func toOldLayout(t *testing.T, dir string, create string, extra ...string) {
	t.Helper()
	ctx := context.Background()
	db := rawDB(t, dir)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var deps []string
	rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_master WHERE tbl_name = 'memories' AND type IN ('index', 'trigger') AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var q string
		if err := rows.Scan(&q); err != nil {
			t.Fatal(err)
		}
		deps = append(deps, q)
	}
	rows.Close()
	cols := `seq, id, text, vector, category, scope, importance, timestamp, updated_at, metadata, superseded_by, valid_from, invalidated_at`
	steps := append([]string{`ALTER TABLE memories RENAME TO memories_new`, create}, extra...)
	steps = append(steps, `INSERT INTO memories (`+cols+`) SELECT `+cols+` FROM memories_new`, `DROP TABLE memories_new`)
	for _, q := range append(steps, deps...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := columnsOf(t, db); got[3] != "vector" {
		t.Fatalf("old layout not made: %v", got)
	}
	db.Close()
}

func columnsOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	cols, err := tableColumns(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// queryAll is every row q returns, each value as the driver gives it.
func queryAll(t *testing.T, db *sql.DB, q string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	n := len(cols)
	var out [][]any
	for rows.Next() {
		row := make([]any, n)
		ptrs := make([]any, n)
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// dbState is what a layout change must keep: every field of every row
// (seq and the vector's bytes too), the change log and its counter, the
// metadata (the segment's record among it), and the indexes and triggers
// on memories.
type dbState struct {
	Rows, Changes, ChangeSeq, Meta, Deps [][]any
}

func stateOf(t *testing.T, db *sql.DB) dbState {
	t.Helper()
	return dbState{
		Rows: queryAll(t, db, `SELECT seq, id, text, category, scope, importance, timestamp, updated_at, metadata,
			superseded_by, valid_from, invalidated_at, vector FROM memories ORDER BY seq`),
		Changes:   queryAll(t, db, `SELECT rev, id, scope, deleted FROM changes ORDER BY rev`),
		ChangeSeq: queryAll(t, db, `SELECT seq FROM sqlite_sequence WHERE name = 'changes'`),
		Meta:      queryAll(t, db, `SELECT key, value FROM meta ORDER BY key`),
		Deps: queryAll(t, db, `SELECT type, name, sql FROM sqlite_master
			WHERE tbl_name = 'memories' AND type IN ('index', 'trigger') ORDER BY type, name`),
	}
}

// textAnswers is the full-text ranking of each query, from the text index
// and from FTS5 (which finds memories by the seq it indexed them under).
func textAnswers(t *testing.T, s *Store, qs []string) []string {
	t.Helper()
	s.WaitText()
	var out []string
	for _, q := range qs {
		for _, rank := range []func(func()){func(fn func()) { fn() }, func(fn func()) { ftsRanked(s, fn) }} {
			rank(func() {
				res, err := s.TextSearch(context.Background(), q, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10, History: true})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, q+": "+describe(res))
			})
		}
	}
	return out
}

// A store made with the vector fourth, its history columns added by ALTER
// TABLE or made with the table, opens with the vector last: every row and
// every field the same (seq too, which the full-text table and the vector
// segment key on: both still answer, the segment is still used), the
// change log as it was, the indexes and triggers back, and a write after
// it logged. The next open leaves the table alone.
func TestOpenMovesTheVectorLast(t *testing.T) {
	for name, old := range map[string][]string{
		"history columns added":   append([]string{firstMemoriesTable}, prefixed(`ALTER TABLE memories ADD COLUMN `, historyColumns)...),
		"history columns created": {historyMemoriesTable},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			const dim = 8
			dir := t.TempDir()
			s, err := Open(ctx, dir, Options{Dimensions: dim})
			if err != nil {
				t.Fatal(err)
			}
			want := columnsOf(t, s.db)
			if want[len(want)-1] != "vector" {
				t.Fatalf("a new store's columns: %v", want)
			}
			wantInfo := queryAll(t, s.db, `SELECT * FROM pragma_table_info('memories') ORDER BY cid`)
			rng := rand.New(rand.NewPCG(3, 4))
			var ms []schemas.Memory
			for i := range 40 {
				m := schemas.Memory{Text: fmt.Sprintf("memory %d about %s", i, strings.Repeat("tea ", 1+i%5)), Vector: randUnit(rng, dim),
					Category: schemas.CategoryFact, Scope: []string{"agent:a", "agent:b", "global"}[i%3], Importance: 0.1 + float64(i)/100}
				if i%4 == 0 {
					m.Metadata = json.RawMessage(fmt.Sprintf(`{"core":true,"n":%d}`, i))
				}
				ms = append(ms, m)
			}
			added, err := s.Add(ctx, ms...)
			if err != nil {
				t.Fatal(err)
			}
			// History, and seqs with gaps: one memory superseded, two deleted.
			if _, err := s.Update(ctx, added[0].ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: added[3].ID, At: 1234}}, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{7, 39} {
				if _, err := s.Delete(ctx, added[i].ID, engine.AllScopes()); err != nil {
					t.Fatal(err)
				}
			}
			s.WaitIndex()
			var qs [][]float32
			for range 10 {
				qs = append(qs, randUnit(rng, dim))
			}
			texts := []string{"tea", "memory about", "memory 12"}
			wantVec, wantText := answers(t, s, qs), textAnswers(t, s, texts)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			toOldLayout(t, dir, old[0], old[1:]...)
			db := rawDB(t, dir)
			before := stateOf(t, db)
			db.Close()
			if len(before.Changes) == 0 || len(before.Deps) != 8 {
				t.Fatalf("the old store has %d changes and %d indexes and triggers", len(before.Changes), len(before.Deps))
			}

			laidOut, layoutErr := int64(-1), errors.New("OnLayout's end not called")
			s, err = Open(ctx, dir, Options{Dimensions: dim, OnLayout: func(n int64) func(time.Duration, error) {
				laidOut = n
				return func(_ time.Duration, err error) { layoutErr = err }
			}})
			if err != nil {
				t.Fatal(err)
			}
			if laidOut != int64(len(before.Rows)) || layoutErr != nil {
				t.Fatalf("OnLayout saw %d rows (the store has %d) and %v", laidOut, len(before.Rows), layoutErr)
			}
			if got := queryAll(t, s.db, `SELECT * FROM pragma_table_info('memories') ORDER BY cid`); !reflect.DeepEqual(got, wantInfo) {
				t.Fatalf("migrated table:\n%v\na new store's:\n%v", got, wantInfo)
			}
			if got := s.Vectors(); got.From != "segment" {
				t.Fatalf("vectors after the migration: %+v", got)
			}
			after := stateOf(t, s.db)
			// The open spent the segment's record, as every open does.
			before.Meta = slices.DeleteFunc(before.Meta, func(kv []any) bool { return kv[0] == segmentKey })
			if !reflect.DeepEqual(after, before) {
				t.Fatalf("the migration changed the store:\nbefore %v\nafter  %v", before, after)
			}
			if got := queryAll(t, s.db, `SELECT name FROM sqlite_master WHERE name LIKE '%memories_old%'`); len(got) != 0 {
				t.Fatalf("left behind: %v", got)
			}
			if !slices.Equal(answers(t, s, qs), wantVec) {
				t.Fatal("vector search answers differ after the migration")
			}
			if got := textAnswers(t, s, texts); !slices.Equal(got, wantText) {
				t.Fatalf("full-text answers differ after the migration:\n%v\nwant\n%v", got, wantText)
			}
			// The id stays unique, and writes are logged.
			if _, err := s.db.ExecContext(ctx, `INSERT INTO memories (id, text, category, scope, importance, timestamp, updated_at, vector)
				SELECT id, text, category, scope, importance, timestamp, updated_at, vector FROM memories LIMIT 1`); err == nil {
				t.Fatal("a second row with an id was accepted")
			}
			more, err := s.Add(ctx, mem("coffee after", randUnit(rng, dim)...))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Delete(ctx, added[1].ID, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			changes := queryAll(t, s.db, `SELECT id, deleted FROM changes WHERE rev > `+fmt.Sprint(before.Changes[len(before.Changes)-1][0]))
			if fmt.Sprint(changes) != fmt.Sprintf("[[%s 0] [%s 1]]", more[0].ID, added[1].ID) {
				t.Fatalf("changes after the migration: %v", changes)
			}
			if got, err := s.Get(ctx, more[0].ID, engine.AllScopes()); err != nil || got.Text != "coffee after" {
				t.Fatalf("a memory written after the migration: %+v %v", got, err)
			}
			var version int
			if err := s.db.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&version); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			// Migrated once: the next open changes no schema.
			s, err = Open(ctx, dir, Options{Dimensions: dim})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var again int
			if err := s.db.QueryRowContext(ctx, `PRAGMA schema_version`).Scan(&again); err != nil {
				t.Fatal(err)
			}
			if again != version || s.Vectors().From != "segment" {
				t.Fatalf("a second open: schema version %d, was %d; vectors %+v", again, version, s.Vectors())
			}
		})
	}
}

func prefixed(prefix string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = prefix + s
	}
	return out
}

// A layout change that fails leaves the old table as it was (a column the
// new layout does not have is not dropped with its values), and the store
// opens in the old layout, reporting the failure through OnLayout.
func TestFailedMigrationKeepsTheOldTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, mem("tea", 1, 0), mem("coffee", 0, 1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	toOldLayout(t, dir, historyMemoriesTable, `ALTER TABLE memories ADD COLUMN extra TEXT NOT NULL DEFAULT 'kept'`)
	db := rawDB(t, dir)
	before, beforeCols := stateOf(t, db), columnsOf(t, db)
	db.Close()
	var (
		rows   int64 = -1
		failed error
	)
	o := Options{Dimensions: 2, OnLayout: func(n int64) func(time.Duration, error) {
		rows = n
		return func(_ time.Duration, err error) { failed = err }
	}}
	s, err = Open(ctx, dir, o)
	if err != nil {
		t.Fatalf("a store whose layout fails does not open: %v", err)
	}
	if rows != 2 || failed == nil || !strings.Contains(failed.Error(), "lay out memories") {
		t.Fatalf("OnLayout saw %d rows and %v", rows, failed)
	}
	// The old layout serves as before.
	if hits, err := s.VectorSearch(ctx, []float32{1, 0}, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1}); err != nil || len(hits) != 1 || hits[0].Memory.Text != "tea" {
		t.Fatalf("search in the old layout: %v %v", hits, err)
	}
	s.Close()
	db = rawDB(t, dir)
	if after, cols := stateOf(t, db), columnsOf(t, db); !reflect.DeepEqual(after, before) || !slices.Equal(cols, beforeCols) {
		t.Fatalf("a failed migration changed the store:\nbefore %v %v\nafter  %v %v", beforeCols, before, cols, after)
	}
	if got := queryAll(t, db, `SELECT extra FROM memories`); len(got) != 2 || got[0][0] != "kept" {
		t.Fatalf("the unknown column: %v", got)
	}
}
