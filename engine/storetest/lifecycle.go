package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func testReopen(t *testing.T, open Opener) {
	dir := t.TempDir()
	s, err := open(t, dir, Dim)
	if err != nil {
		t.Fatal(err)
	}
	ms := add(t, s, mem("survives a restart", "agent:a", Axis(4)), mem("deleted before restart", "global", Axis(5)))
	if _, err := s.Delete(ctx, ms[1].ID, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := mustOpen(t, open, dir)
	if s2.Dimensions() != Dim {
		t.Fatalf("dimensions %d", s2.Dimensions())
	}
	res, err := s2.VectorSearch(ctx, Axis(4), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 5})
	if err != nil || len(res) != 1 || res[0].Memory.ID != ms[0].ID {
		t.Fatalf("after reopen: %+v %v", res, err)
	}
	if res, _ := s2.TextSearch(ctx, "survives", engine.SearchOptions{Scopes: engine.AllScopes()}); s2.HasFullText() && len(res) != 1 {
		t.Fatal("text index lost on reopen")
	}
	if n := count(t, s2); n != 1 {
		t.Fatalf("count after reopen %d", n)
	}
}

func testDimensionMismatch(t *testing.T, open Opener) {
	dir := t.TempDir()
	s, err := open(t, dir, Dim)
	if err != nil {
		t.Fatal(err)
	}
	add(t, s, mem("eight dims", "global", Axis(0)))
	s.Close()
	_, err = open(t, dir, 16)
	var de *engine.DimensionError
	if !errors.As(err, &de) || !errors.Is(err, engine.ErrDimensionMismatch) {
		t.Fatalf("want DimensionError, got %v", err)
	}
	if !strings.Contains(err.Error(), "vector dimension mismatch: table=8, config=16") || !strings.Contains(err.Error(), "embedding.dimensions") {
		t.Fatalf("message must say what and what to do: %v", err)
	}
	s2 := mustOpen(t, open, dir) // the store is untouched
	if n := count(t, s2); n != 1 {
		t.Fatalf("count %d", n)
	}
}

func testBadInput(t *testing.T, open Opener) {
	s := fresh(t, open)
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	bad := map[string]schemas.Memory{
		"empty text":        mem("", "global", Axis(0)),
		"blank text":        mem(" \n\t", "global", Axis(0)),
		"1 MB text":         mem(strings.Repeat("x", 1<<20), "global", Axis(0)),
		"invalid UTF-8":     mem("bad \xff\xfe text", "global", Axis(0)),
		"NUL byte":          mem("nul\x00byte", "global", Axis(0)),
		"NaN vector":        mem("nan vector", "global", []float32{nan, 0, 0, 0, 0, 0, 0, 0}),
		"Inf vector":        mem("inf vector", "global", []float32{inf, 0, 0, 0, 0, 0, 0, 0}),
		"short vector":      mem("short", "global", []float32{1, 2}),
		"no vector":         mem("none", "global", nil),
		"SQL scope":         mem("sql scope", "' OR 1=1 --", Axis(0)),
		"long scope":        mem("long scope", strings.Repeat("a", 101), Axis(0)),
		"bad category":      {Text: "cat", Scope: "global", Vector: Axis(0), Category: "' OR 1=1 --"},
		"metadata not obj":  {Text: "meta", Scope: "global", Vector: Axis(0), Metadata: json.RawMessage(`"str"`)},
		"metadata not json": {Text: "meta", Scope: "global", Vector: Axis(0), Metadata: json.RawMessage(`{bad`)},
	}
	for name, m := range bad {
		if _, err := s.Add(ctx, m); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%s: want ErrInvalid, got %v", name, err)
		}
	}
	// One bad memory fails the whole batch.
	if _, err := s.Add(ctx, mem("good", "global", Axis(0)), mem("", "global", Axis(0))); err == nil {
		t.Error("batch with a bad memory was accepted")
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("bad input stored %d rows", n)
	}
	ok := add(t, s, mem("SQL-looking text is just text: '); DROP TABLE memories; --", "global", Axis(0)))[0]
	if got, err := s.Get(ctx, ok.ID, engine.AllScopes()); err != nil || !strings.Contains(got.Text, "DROP TABLE") {
		t.Fatalf("sql text: %v", err)
	}
	for _, q := range [][]float32{nil, {1}, {nan, 0, 0, 0, 0, 0, 0, 0}, make([]float32, Dim+1)} {
		if _, err := s.VectorSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes()}); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("query %v: want ErrInvalid, got %v", q, err)
		}
	}
	for _, key := range []string{"' OR 1=1 --", "%", "_", "abc", strings.Repeat("a", 1000), "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8"} {
		if _, err := s.Get(ctx, key, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("Get(%q): want ErrInvalid, got %v", key, err)
		}
		if _, err := s.Delete(ctx, key, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("Delete(%q): want ErrInvalid, got %v", key, err)
		}
	}
	if n := count(t, s); n != 1 {
		t.Fatalf("store changed: %d rows", n)
	}
}

func testScopeIsolation(t *testing.T, open Opener) {
	s := fresh(t, open)
	secret := add(t, s, mem("agent b's secret plan", "agent:b", Axis(0)))[0]
	add(t, s, mem("agent a's own note", "agent:a", Axis(1)))
	a := engine.InScopes("global", "agent:a")
	text := "stolen"
	imp := 0.1
	if _, err := s.Get(ctx, secret.ID, a); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("get: %v", err)
	}
	if _, err := s.Get(ctx, secret.ID[:8], a); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("get by prefix: %v", err)
	}
	if _, err := s.Update(ctx, secret.ID[:8], engine.Patch{Text: &text, Vector: Axis(1), Importance: &imp}, a); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("update: %v", err)
	}
	if _, err := s.Delete(ctx, secret.ID[:8], a); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("delete: %v", err)
	}
	if n, _ := s.BulkDelete(ctx, engine.BulkFilter{Scopes: a, Before: math.MaxInt64}); n != 1 {
		t.Errorf("bulk delete removed %d (want only agent a's 1)", n)
	}
	if res, _ := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: a, Limit: 10}); len(res) != 0 {
		t.Errorf("vector search leaked %v", texts(res))
	}
	if res, _ := s.TextSearch(ctx, "secret plan", engine.SearchOptions{Scopes: a, Limit: 10}); len(res) != 0 {
		t.Errorf("text search leaked %v", texts(res))
	}
	if l, _ := s.List(ctx, engine.ListOptions{Scopes: a, Limit: 100}); len(l) != 0 {
		t.Errorf("list leaked %d", len(l))
	}
	got, err := s.Get(ctx, secret.ID, engine.AllScopes())
	if err != nil || got.Text != secret.Text || got.Importance != secret.Importance {
		t.Fatalf("secret changed: %+v %v", got, err)
	}
}

func testConcurrent(t *testing.T, open Opener) {
	s := fresh(t, open)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 4; w++ {
		wg.Add(2)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := s.Add(ctx, mem(fmt.Sprintf("writer %d item %d", w, i), "global", Mix(w, i, 0.6))); err != nil {
					errs <- err
					return
				}
			}
		}(w)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if _, err := s.VectorSearch(ctx, Axis(i), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5}); err != nil {
					errs <- err
					return
				}
				if _, err := s.TextSearch(ctx, "writer item", engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := count(t, s); n != 100 {
		t.Fatalf("count %d", n)
	}
}

func testClosed(t *testing.T, open Opener) {
	s, err := open(t, t.TempDir(), Dim)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := s.Add(ctx, mem("after close", "global", Axis(0))); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("add after close: %v", err)
	}
	if _, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes()}); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
}
