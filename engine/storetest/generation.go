package storetest

import (
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// testWriteGeneration: every kind of write changes the generation of the
// scopes it touches (both of them for a move) and of every scope, and
// reads change nothing. Whether a write leaves other scopes' generations
// alone is the backend's choice, so it is not asserted here.
func testWriteGeneration(t *testing.T, open Opener) {
	s := fresh(t, open)
	a, b, all := engine.InScopes("agent:a"), engine.InScopes("agent:b"), engine.AllScopes()
	filters := []engine.ScopeFilter{a, b, all, engine.InScopes("agent:a", "agent:b")}
	snapshot := func() []uint64 {
		out := make([]uint64, len(filters))
		for i, f := range filters {
			out[i] = s.WriteGeneration(f)
		}
		return out
	}
	// changed runs op and reports which of filters' generations it changed.
	changed := func(what string, op func() error) []bool {
		t.Helper()
		before := snapshot()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		after := snapshot()
		out := make([]bool, len(filters))
		for i := range filters {
			out[i] = after[i] != before[i]
		}
		return out
	}
	want := func(what string, got []bool, inA, inB bool) {
		t.Helper()
		// agent:a, agent:b, every scope, the two together.
		if (inA && !got[0]) || (inB && !got[1]) || !got[2] || !got[3] {
			t.Errorf("%s changed the generations %v (agent:a, agent:b, all, both); want a change for agent:a %v, agent:b %v, all and both",
				what, got, inA, inB)
		}
	}

	var m schemas.Memory
	want("add", changed("add", func() error {
		ms, err := s.Add(ctx, mem("the first memory", "agent:a", Axis(0)))
		if err == nil {
			m = ms[0]
		}
		return err
	}), true, false)
	imp := mem("an imported memory", "agent:b", Axis(1))
	imp.ID = id(1)
	want("import", changed("import", func() error { return s.Import(ctx, imp) }), false, true)
	importance := 0.2
	want("update", changed("update", func() error {
		_, err := s.Update(ctx, m.ID, engine.Patch{Importance: &importance}, all)
		return err
	}), true, false)
	to := "agent:b"
	want("move", changed("move", func() error {
		_, err := s.Update(ctx, m.ID, engine.Patch{Scope: &to}, all)
		return err
	}), true, true)
	want("delete", changed("delete", func() error {
		_, err := s.Delete(ctx, imp.ID, all)
		return err
	}), false, true)
	want("bulk delete", changed("bulk delete", func() error {
		_, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: b})
		return err
	}), false, true)

	if _, err := s.Add(ctx, mem("a memory to read", "agent:a", Axis(2))); err != nil {
		t.Fatal(err)
	}
	got := changed("reads", func() error {
		if _, err := s.List(ctx, engine.ListOptions{Scopes: all}); err != nil {
			return err
		}
		if _, err := s.Stats(ctx, all); err != nil {
			return err
		}
		_, err := s.VectorSearch(ctx, Axis(2), engine.SearchOptions{Scopes: a})
		return err
	})
	for i, c := range got {
		if c {
			t.Errorf("reads changed the generation of %v", filters[i])
		}
	}
}
