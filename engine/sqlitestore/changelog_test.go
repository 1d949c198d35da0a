package sqlitestore

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func mem(text string, v ...float32) schemas.Memory {
	return schemas.Memory{Text: text, Vector: v, Category: schemas.CategoryFact, Scope: "global", Importance: 0.7}
}

// Every write path lands in the change log in its own transaction, and a
// replica applying the changes ends with the same memories.
func TestChangeLogFeedsAReplica(t *testing.T) {
	ctx := context.Background()
	src, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	added, err := src.Add(ctx, mem("tea", 1, 0), mem("coffee", 0, 1), mem("water", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	text := "green tea"
	if _, err := src.Update(ctx, added[0].ID, engine.Patch{Text: &text, Vector: []float32{1, 0.1}}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Delete(ctx, added[1].ID, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	imp := mem("juice", 0.5, 0.5)
	imp.ID = "0b6a6f3e-0000-4000-8000-000000000001"
	if err := src.Import(ctx, imp); err != nil {
		t.Fatal(err)
	}
	if n, err := src.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.InScopes("global"), Before: 1}); err != nil || n != 0 {
		t.Fatalf("bulk delete: %d %v", n, err)
	}

	changes, err := src.Changes(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	// One entry per memory, its last change: tea (updated), coffee
	// (deleted), water, juice.
	if len(changes) != 4 {
		t.Fatalf("changes: %+v", changes)
	}
	replica, err := Open(ctx, t.TempDir(), Options{Dimensions: 2, NoChangeLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	var puts []schemas.Memory
	var dels []string
	for _, c := range changes {
		if c.Deleted {
			dels = append(dels, c.ID)
		} else {
			puts = append(puts, c.Memory)
		}
	}
	if err := replica.ApplyLog(ctx, 42, puts, dels); err != nil {
		t.Fatal(err)
	}
	// Applying again changes nothing: the log is at least once.
	if err := replica.ApplyLog(ctx, 42, puts, dels); err != nil {
		t.Fatal(err)
	}
	if seq, err := replica.LogSeq(ctx); err != nil || seq != 42 {
		t.Fatalf("log seq %d %v", seq, err)
	}
	texts := func(s *Store) []string {
		var out []string
		_ = s.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(m schemas.Memory) error {
			out = append(out, m.ID+" "+m.Text)
			return nil
		})
		slices.Sort(out)
		return out
	}
	if a, b := texts(src), texts(replica); !slices.Equal(a, b) || len(a) != 3 {
		t.Fatalf("source %v, replica %v", a, b)
	}
	hits, err := replica.VectorSearch(ctx, []float32{1, 0.1}, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Memory.Text != "green tea" {
		t.Fatalf("replica search: %+v %v", hits, err)
	}
	if ft, err := replica.TextSearch(ctx, "green", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1}); err != nil || len(ft) != 1 {
		t.Fatalf("replica text search: %+v %v", ft, err)
	}
	// A store with its change log on (a rebuild that becomes a writer's
	// store) does not log what the log brought either.
	logging, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer logging.Close()
	if err := logging.ApplyLog(ctx, 42, puts, dels); err != nil {
		t.Fatal(err)
	}
	if c, _ := logging.Changes(ctx, 0, 10); len(c) != 0 {
		t.Fatalf("applying the log logged: %+v", c)
	}
	// The replica logs nothing of its own; the source trims what was sent.
	if c, _ := replica.Changes(ctx, 0, 10); len(c) != 0 {
		t.Fatalf("replica change log: %+v", c)
	}
	if err := src.TrimChanges(ctx, changes[len(changes)-1].Rev, 7); err != nil {
		t.Fatal(err)
	}
	if c, _ := src.Changes(ctx, 0, 10); len(c) != 0 {
		t.Fatalf("after trim: %+v", c)
	}
	if seq, err := src.LogSeq(ctx); err != nil || seq != 7 {
		t.Fatalf("log seq recorded with the trim: %d %v", seq, err)
	}
	// A bad memory in a batch applies nothing of it.
	bad := mem("wrong size", 1, 2, 3)
	bad.ID = "0b6a6f3e-0000-4000-8000-000000000002"
	if err := replica.ApplyLog(ctx, 43, []schemas.Memory{mem("fine", 1, 0), bad}, []string{added[2].ID}); err == nil {
		t.Fatal("a vector of another size was applied")
	}
	if seq, _ := replica.LogSeq(ctx); seq != 42 || len(texts(replica)) != 3 {
		t.Fatalf("after a refused batch: seq %d, %v", seq, texts(replica))
	}
}

// The queries a console page and a recall run for every memory they show
// use an index, not a scan of every row: a memory's predecessors (the
// partial index on superseded_by, which SQLite uses only when the query
// says the id is not empty), and a list page after a cursor.
func TestQueriesUseIndexes(t *testing.T) {
	s, err := Open(context.Background(), t.TempDir(), Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := func(q string, args ...any) string {
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			b.WriteString(detail + "; ")
		}
		return b.String()
	}
	if p := plan(`SELECT id FROM memories WHERE superseded_by = ? AND superseded_by != '' AND 1 ORDER BY invalidated_at DESC, seq DESC`, "x"); !strings.Contains(p, "memories_by_successor") {
		t.Fatalf("predecessors: %s", p)
	}
	if p := plan(`SELECT id FROM memories WHERE 1 AND invalidated_at = 0 AND timestamp <= ? AND (timestamp < ? OR id < ?) ORDER BY timestamp DESC, id DESC LIMIT 50`, 5, 5, "x"); !strings.Contains(p, "memories_by_time") || strings.Contains(p, "TEMP B-TREE") {
		t.Fatalf("a page after a cursor: %s", p)
	}
}
