package sqlitestore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// seqOf is the row number of the memory id.
func seqOf(t *testing.T, s *Store, id string) int64 {
	t.Helper()
	var seq int64
	if err := s.db.QueryRow(`SELECT seq FROM memories WHERE id = ?`, id).Scan(&seq); err != nil {
		t.Fatalf("seq of %s: %v", id, err)
	}
	return seq
}

// readTexts reads seqs twice, the second time from the row cache where
// the first kept them, and returns the texts by seq ("-" for a row not
// answered), failing if the two reads differ.
func readTexts(t *testing.T, s *Store, scopes engine.ScopeFilter, seqs ...int64) []string {
	t.Helper()
	var texts [2][]string
	for i := range texts {
		rows, err := s.ReadRanked(context.Background(), seqs, engine.SearchOptions{Scopes: scopes})
		if err != nil {
			t.Fatal(err)
		}
		for _, seq := range seqs {
			m, ok := rows[seq]
			if !ok {
				texts[i] = append(texts[i], "-")
				continue
			}
			if len(m.Vector) != 2 {
				t.Fatalf("row %d has no vector: %+v", seq, m)
			}
			texts[i] = append(texts[i], m.Text)
		}
	}
	if strings.Join(texts[0], "|") != strings.Join(texts[1], "|") {
		t.Fatalf("read %q, then from the cache %q", texts[0], texts[1])
	}
	return texts[1]
}

// TestRowCacheFollowsWrites: after every kind of write (update, a scope
// moved, delete, bulk delete, a replica's log, import), a search reads
// the row as the write left it, from the database and again from the
// cache.
func TestRowCacheFollowsWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	added, err := s.Add(ctx, mem("tea", 1, 0), mem("coffee", 0, 1), mem("water", 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	tea, coffee, water := seqOf(t, s, added[0].ID), seqOf(t, s, added[1].ID), seqOf(t, s, added[2].ID)
	all := engine.AllScopes()
	want := func(scopes engine.ScopeFilter, texts ...string) {
		t.Helper()
		if got := readTexts(t, s, scopes, tea, coffee, water); strings.Join(got, "|") != strings.Join(texts, "|") {
			t.Fatalf("read %q, want %q", got, texts)
		}
	}
	want(all, "tea", "coffee", "water")
	if n := len(s.rows.rows); n != 3 {
		t.Fatalf("the cache holds %d rows, want 3", n)
	}
	if asked, hits := s.RowCacheStats(); asked != 6 || hits != 3 {
		t.Fatalf("asked for %d rows, %d held, want 6 and 3", asked, hits)
	}

	text, scope := "green tea", "agent:a"
	if _, err := s.Update(ctx, added[0].ID, engine.Patch{Text: &text, Vector: []float32{1, 0.1}}, all); err != nil {
		t.Fatal(err)
	}
	want(all, "green tea", "coffee", "water")
	if _, err := s.Update(ctx, added[0].ID, engine.Patch{Scope: &scope}, all); err != nil {
		t.Fatal(err)
	}
	want(engine.InScopes("global"), "-", "coffee", "water")
	want(all, "green tea", "coffee", "water")

	if _, err := s.Delete(ctx, added[1].ID, all); err != nil {
		t.Fatal(err)
	}
	want(all, "green tea", "-", "water")

	changed := added[2]
	changed.Text = "sparkling water"
	if err := s.ApplyLog(ctx, 7, []schemas.Memory{changed}, nil); err != nil {
		t.Fatal(err)
	}
	want(all, "green tea", "-", "sparkling water")
	if err := s.ApplyLog(ctx, 8, nil, []string{added[2].ID}); err != nil {
		t.Fatal(err)
	}
	want(all, "green tea", "-", "-")

	if n, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.InScopes("agent:a")}); err != nil || n != 1 {
		t.Fatalf("bulk delete: %d %v", n, err)
	}
	want(all, "-", "-", "-")

	imp := mem("juice", 0.5, 0.5)
	imp.ID = "0b6a6f3e-0000-4000-8000-000000000002"
	if err := s.Import(ctx, imp); err != nil {
		t.Fatal(err)
	}
	if got := readTexts(t, s, all, seqOf(t, s, imp.ID)); got[0] != "juice" {
		t.Fatalf("imported: %q", got)
	}
}

// A read that a write overlapped keeps nothing; while a write is under
// way every read goes to the database; rows handed out are the caller's;
// the cache holds at most rowCacheRows rows.
func TestRowCacheKeeps(t *testing.T) {
	var c rowCache
	row := func(text string) map[int64]schemas.Memory {
		return map[int64]schemas.Memory{1: {Text: text, Vector: []float32{1}, Metadata: []byte(`{"a":1}`)}}
	}
	found := map[int64]schemas.Memory{}
	missing, w := c.get([]int64{1}, found)
	c.drop(2)
	c.keep(w, row("old"))
	if len(missing) != 1 || len(c.rows) != 0 {
		t.Fatalf("missing %v; a read overlapped by a drop kept %v", missing, c.rows)
	}
	_, w = c.get([]int64{1}, found)
	c.begin()
	c.keep(w, row("old"))
	if len(c.rows) != 0 {
		t.Fatalf("a read overlapped by a write's begin kept %v", c.rows)
	}
	c.drop(1)
	c.end()
	_, w = c.get([]int64{1}, found)
	c.keep(w, row("new"))
	if c.rows[1].Text != "new" || c.rows[1].Vector != nil {
		t.Fatalf("kept %+v, want the row without its vector", c.rows[1])
	}
	c.begin()
	if missing, _ := c.get([]int64{1}, found); len(missing) != 1 || len(found) != 0 {
		t.Fatalf("during a write the cache answered: missing %v, found %v", missing, found)
	}
	c.end()
	if missing, _ := c.get([]int64{1}, found); len(missing) != 0 || found[1].Text != "new" {
		t.Fatalf("missing %v, found %v", missing, found)
	}
	found[1].Metadata[2] = 'X'
	again := map[int64]schemas.Memory{}
	c.get([]int64{1}, again)
	if string(again[1].Metadata) != `{"a":1}` {
		t.Fatalf("a caller's change reached the cache: %s", again[1].Metadata)
	}

	_, w = c.get(nil, nil)
	many := map[int64]schemas.Memory{}
	for i := range rowCacheRows + 100 {
		many[int64(i+10)] = schemas.Memory{Text: strconv.Itoa(i)}
	}
	c.keep(w, many)
	if len(c.rows) != rowCacheRows {
		t.Fatalf("the cache holds %d rows, want %d", len(c.rows), rowCacheRows)
	}
}

// TestRowCacheUnderConcurrentWrites: readers searching while a writer
// changes a row's text never see it go back to an older text, and see
// the last one once the writer is done.
func TestRowCacheUnderConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	added, err := s.Add(ctx, mem("v0", 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	seq := seqOf(t, s, added[0].ID)
	version := func(m schemas.Memory) int {
		n, err := strconv.Atoi(strings.TrimPrefix(m.Text, "v"))
		if err != nil {
			t.Errorf("text %q", m.Text)
		}
		return n
	}
	const writes = 150
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				rows, err := s.ReadRanked(ctx, []int64{seq}, engine.SearchOptions{Scopes: engine.AllScopes()})
				if err != nil {
					t.Error(err)
					return
				}
				if v := version(rows[seq]); v < last {
					t.Errorf("read v%d after v%d", v, last)
					return
				} else {
					last = v
				}
			}
		})
	}
	for i := 1; i <= writes; i++ {
		text := fmt.Sprintf("v%d", i)
		if _, err := s.Update(ctx, added[0].ID, engine.Patch{Text: &text, Vector: []float32{1, float32(i)}}, engine.AllScopes()); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if got := readTexts(t, s, engine.AllScopes(), seq); got[0] != fmt.Sprintf("v%d", writes) {
		t.Fatalf("after the writes: %q", got)
	}
}
