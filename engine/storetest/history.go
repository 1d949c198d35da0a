package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// testHistory: a superseded memory leaves recall, list, stats and
// neighbours, stays readable by id, is found again with History, survives
// a reopen, and comes back with Restore. A store that keeps no history
// (one that is no engine.Historian) refuses Invalidate instead.
func testHistory(t *testing.T, open Opener) {
	dir := t.TempDir()
	s := mustOpen(t, open, dir)
	ms := add(t, s, mem("I live in Paris", "agent:a", Axis(0)), mem("I moved to Berlin", "agent:a", Mix(0, 1, 0.9)))
	old, cur := ms[0], ms[1]
	at := time.Now().UnixMilli()
	_, err := s.Update(ctx, old.ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: cur.ID, At: at}}, engine.InScopes("agent:a"))
	if _, ok := s.(engine.Historian); !ok {
		if !errors.Is(err, schemas.ErrInvalid) {
			t.Fatalf("a store without history accepted Invalidate: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("invalidate: %v", err)
	}
	check := func(s engine.Store, when string) {
		t.Helper()
		got, err := s.Get(ctx, old.ID, engine.AllScopes())
		if err != nil || got.SupersededBy != cur.ID || got.InvalidatedAt != at || got.Current() {
			t.Fatalf("%s: superseded memory %+v, %v", when, got, err)
		}
		for _, history := range []bool{false, true} {
			hits, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 5, History: history})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range hits {
				found = found || h.Memory.ID == old.ID
			}
			if found != history {
				t.Errorf("%s: vector search (history %v) found the superseded memory: %v", when, history, found)
			}
			all, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5, History: history})
			if err != nil {
				t.Fatal(err)
			}
			found = false
			for _, h := range all {
				found = found || h.Memory.ID == old.ID
			}
			if found != history {
				t.Errorf("%s: vector search over all scopes (history %v) found it: %v", when, history, found)
			}
			if s.HasFullText() {
				hits, err := s.TextSearch(ctx, "Paris", engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 5, History: history})
				if err != nil {
					t.Fatal(err)
				}
				if (len(hits) == 1) != history {
					t.Errorf("%s: text search (history %v): %d hits", when, history, len(hits))
				}
			}
			page, err := s.List(ctx, engine.ListOptions{Scopes: engine.AllScopes(), History: history})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 2}[history]; len(page) != want {
				t.Errorf("%s: list (history %v) has %d memories, want %d", when, history, len(page), want)
			}
		}
		st, err := s.Stats(ctx, engine.AllScopes())
		if err != nil || st.Total != 1 || st.History != 1 || st.ByScope["agent:a"] != 1 {
			t.Errorf("%s: stats %+v, %v; want 1 current and 1 in history", when, st, err)
		}
		prev, err := s.(engine.Historian).Predecessors(ctx, cur.ID, engine.InScopes("agent:a"))
		if err != nil || len(prev) != 1 || prev[0].ID != old.ID {
			t.Errorf("%s: predecessors %+v, %v", when, prev, err)
		}
		if prev, _ := s.(engine.Historian).Predecessors(ctx, cur.ID, engine.InScopes("agent:b")); len(prev) != 0 {
			t.Errorf("%s: predecessors leak across scopes: %+v", when, prev)
		}
		if nb, ok := s.(engine.Neighborer); ok {
			around, err := nb.Neighbors(ctx, []engine.TimePoint{{Scope: "agent:a", At: cur.Timestamp}}, 5, 60_000)
			if err != nil || len(around) != 1 {
				t.Fatal(around, err)
			}
			for _, m := range around[0] {
				if m.ID == old.ID {
					t.Errorf("%s: neighbours include the superseded memory", when)
				}
			}
		}
	}
	check(s, "after invalidate")
	// A memory is superseded once; never by itself.
	if _, err := s.Update(ctx, old.ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: cur.ID, At: at}}, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("second invalidate: %v", err)
	}
	if _, err := s.Update(ctx, cur.ID, engine.Patch{Invalidate: &engine.Invalidation{SupersededBy: cur.ID, At: at}}, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("self-supersede: %v", err)
	}
	if _, err := s.Update(ctx, cur.ID, engine.Patch{Restore: true}, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
		t.Errorf("restore of a current memory: %v", err)
	}
	// Every row goes into exports and backups, history included.
	n := 0
	if err := s.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(schemas.Memory) error { n++; return nil }); err != nil || n != 2 {
		t.Errorf("iterate visited %d, %v; want both", n, err)
	}
	s.Close()
	s = mustOpen(t, open, dir)
	check(s, "after reopen")
	back, err := s.Update(ctx, old.ID, engine.Patch{Restore: true}, engine.InScopes("agent:a"))
	if err != nil || !back.Current() || back.SupersededBy != "" {
		t.Fatalf("restore: %+v, %v", back, err)
	}
	if hits, _ := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 1}); len(hits) != 1 || hits[0].Memory.ID != old.ID {
		t.Errorf("restored memory not found again: %+v", hits)
	}
	// Import keeps a row's life.
	h := schemas.Memory{ID: id(77), Text: "I lived in Lyon", Scope: "agent:a", Vector: Axis(2), Category: schemas.CategoryFact,
		Importance: 0.7, Timestamp: 1_700_000_000_000, SupersededBy: old.ID, ValidFrom: 1_600_000_000_000, InvalidatedAt: 1_700_000_100_000}
	if err := s.Import(ctx, h); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, h.ID, engine.AllScopes())
	if err != nil || got.SupersededBy != old.ID || got.ValidFrom != h.ValidFrom || got.InvalidatedAt != h.InvalidatedAt {
		t.Errorf("imported history row %+v, %v", got, err)
	}
	if hits, _ := s.VectorSearch(ctx, Axis(2), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5}); len(hits) > 0 && hits[0].Memory.ID == h.ID {
		t.Errorf("an imported history row is searched as current")
	}
}
