package sqlitestore

import (
	"context"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// TestWriteGenerationIsPerScope: a write changes the generations of the
// scopes it touches and of every scope, never another scope's, on every
// write path: the engine's and a replica's ApplyLog.
func TestWriteGenerationIsPerScope(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 2, NoChangeLog: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scopes := []string{"agent:a", "agent:b", "agent:c", schemas.GlobalScope}
	// check runs op and wants exactly the scopes in touched to change (and
	// the generation of every scope, always).
	check := func(what string, op func() error, touched ...string) {
		t.Helper()
		before := map[string]uint64{}
		for _, sc := range scopes {
			before[sc] = s.WriteGeneration(engine.InScopes(sc))
		}
		all := s.WriteGeneration(engine.AllScopes())
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if s.WriteGeneration(engine.AllScopes()) == all {
			t.Errorf("%s: the generation of every scope did not change", what)
		}
		for _, sc := range scopes {
			want := false
			for _, w := range touched {
				want = want || w == sc
			}
			if got := s.WriteGeneration(engine.InScopes(sc)) != before[sc]; got != want {
				t.Errorf("%s: %s changed %v, want %v", what, sc, got, want)
			}
		}
	}
	inScope := func(text, scope string) schemas.Memory {
		m := mem(text, 1, 0)
		m.Scope = scope
		return m
	}

	var tea schemas.Memory
	check("add", func() error {
		ms, err := s.Add(ctx, inScope("tea", "agent:a"))
		if err == nil {
			tea = ms[0]
		}
		return err
	}, "agent:a")
	to := "agent:b"
	check("move", func() error {
		_, err := s.Update(ctx, tea.ID, engine.Patch{Scope: &to}, engine.AllScopes())
		return err
	}, "agent:a", "agent:b")
	check("delete by prefix", func() error {
		_, err := s.Delete(ctx, tea.ID[:8], engine.AllScopes())
		return err
	}, "agent:b")
	check("bulk delete", func() error {
		if _, err := s.Add(ctx, inScope("coffee", "agent:c"), inScope("water", schemas.GlobalScope)); err != nil {
			return err
		}
		_, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.AllScopes(), Before: s.now().UnixMilli() + 1})
		return err
	}, "agent:c", schemas.GlobalScope)

	// A replica sees writes only through ApplyLog: a new memory, one that
	// moved (its old scope changes too) and one deleted.
	juice := inScope("juice", "agent:a")
	juice.ID = "0b6a6f3e-0000-4000-8000-000000000001"
	check("log: put", func() error { return s.ApplyLog(ctx, 1, []schemas.Memory{juice}, nil) }, "agent:a")
	moved := juice
	moved.Scope = "agent:c"
	check("log: move", func() error { return s.ApplyLog(ctx, 2, []schemas.Memory{moved}, nil) }, "agent:a", "agent:c")
	check("log: delete", func() error { return s.ApplyLog(ctx, 3, nil, []string{juice.ID}) }, "agent:c")
	check("log: delete of a memory not here", func() error { return s.ApplyLog(ctx, 4, nil, []string{juice.ID}) })

	// A filter's generation is its scopes': it changes with either.
	ab := engine.InScopes("agent:a", "agent:b")
	before := s.WriteGeneration(ab)
	if _, err := s.Add(ctx, inScope("milk", "agent:b")); err != nil {
		t.Fatal(err)
	}
	if s.WriteGeneration(ab) == before {
		t.Error("a write to agent:b left the generation of agent:a and agent:b as it was")
	}
}
