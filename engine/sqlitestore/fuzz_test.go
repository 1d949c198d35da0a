package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/schemas"
)

func fuzzStore(f *testing.F) *Store {
	s, err := Open(context.Background(), f.TempDir(), Options{Dimensions: storetest.Dim})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	var ms []schemas.Memory
	for i := 0; i < 20; i++ {
		ms = append(ms, schemas.Memory{
			ID:     fmt.Sprintf("abcdef%02d-0000-4000-8000-%012d", i%3, i),
			Text:   fmt.Sprintf("memory number %d about docker and 乌龙茶", i),
			Scope:  []string{"global", "agent:a"}[i%2],
			Vector: storetest.Axis(i),
		})
	}
	if err := s.Import(context.Background(), ms...); err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzResolve feeds arbitrary keys to the prefix resolver: it must answer
// with an id that really starts with the key, not found, ambiguous or
// invalid input — never a panic, a SQL error or a wrong row.
func FuzzResolve(f *testing.F) {
	s := fuzzStore(f)
	for _, k := range []string{"abcdef00", "abcdef01-0000", "abcdef0", "' OR 1=1 --", "abcdef00~", "%", "ABCDEF02", "abcdef00-0000-4000-8000-000000000000"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id, err := s.Resolve(context.Background(), key, engine.InScopes("agent:a"))
		switch {
		case err == nil:
			if !strings.HasPrefix(id, strings.ToLower(strings.TrimSpace(key))) {
				t.Fatalf("key %q resolved to %q", key, id)
			}
		case errors.Is(err, schemas.ErrInvalid), errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrAmbiguous):
		default:
			t.Fatalf("key %q: unexpected error %v", key, err)
		}
	})
}

// FuzzTextSearch feeds arbitrary queries to full-text search: FTS5 syntax
// must never reach the engine, so no query is an error.
func FuzzTextSearch(f *testing.F) {
	s := fuzzStore(f)
	for _, q := range []string{"docker", `"`, "NEAR(a b)", "乌龙茶", "a*", "(((", "' OR 1=1 --", "\xff", "col:x", "-x", "^x"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		res, err := s.TextSearch(context.Background(), q, engine.SearchOptions{Scopes: engine.InScopes("global"), Limit: 5})
		if err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
		for _, r := range res {
			if r.Memory.Scope != "global" {
				t.Fatalf("query %q leaked %q", q, r.Memory.Scope)
			}
		}
	})
}
