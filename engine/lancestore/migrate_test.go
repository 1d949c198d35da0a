package lancestore

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// sliceSource is a plugin table held in memory.
type sliceSource struct {
	plugin string
	dim    int
	ms     []schemas.Memory
}

func (s *sliceSource) Plugin() string                     { return s.plugin }
func (s *sliceSource) Dimensions() int                    { return s.dim }
func (s *sliceSource) Count(context.Context) (int, error) { return len(s.ms), nil }
func (s *sliceSource) Close() error                       { return nil }

func (s *sliceSource) Iterate(_ context.Context, fn func(schemas.Memory) error) error {
	for _, m := range s.ms {
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func openSQLite(t *testing.T, dim int) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{Dimensions: dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// legacyRows are memory-lancedb rows as rowToMemory maps them: createdAt
// became the timestamp, the missing scope global.
func legacyRows(t *testing.T) []schemas.Memory {
	t.Helper()
	var ms []schemas.Memory
	for i, row := range []map[string]any{
		{"id": uid(1), "text": "I prefer dark mode", "vector": []any{1.0, 0.0, 0.0, 0.0}, "importance": 0.9, "category": "preference", "createdAt": 1.6e12},
		{"id": uid(2), "text": "my dog is called Rex", "vector": []any{0.0, 1.0, 0.0, 0.0}, "importance": 0.7, "category": "fact", "createdAt": 1.6e12 + 1},
		{"id": "not-a-uuid", "text": "kept out", "vector": []any{0.0, 0.0, 1.0, 0.0}, "importance": 0.7, "category": "fact", "createdAt": 1.6e12},
		{"id": uid(3), "text": "  ", "vector": []any{0.0, 0.0, 1.0, 0.0}, "importance": 0.7, "category": "fact", "createdAt": 1.6e12},
		{"id": uid(4), "text": "short vector", "vector": []any{1.0, 1.0}, "importance": 0.7, "category": "fact", "createdAt": 1.6e12},
	} {
		m, err := rowToMemory(row, "createdAt")
		if err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		ms = append(ms, m)
	}
	return ms
}

func TestCopyKeepsIDsTimestampsAndVectors(t *testing.T) {
	ctx := context.Background()
	src := &sliceSource{plugin: PluginLegacy, dim: 4, ms: legacyRows(t)}
	dst := openSQLite(t, 4)
	rep, err := Copy(ctx, src, dst, CopyOptions{BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Read != 5 || rep.Copied != 2 || rep.Invalid != 3 || rep.Existing != 0 || rep.Reembedded != 0 || len(rep.Problems) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for _, want := range []string{"not a UUID", "text is empty", "2 dimensions"} {
		if !strings.Contains(strings.Join(rep.Problems, "\n"), want) {
			t.Errorf("problems %q do not say %q", rep.Problems, want)
		}
	}
	m, err := dst.Get(ctx, uid(2), engine.InScopes("global"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Timestamp != 1600000000001 || m.Scope != "global" || m.Category != schemas.CategoryFact || m.Vector[1] != 1 {
		t.Fatalf("copied %+v", m)
	}
	// A second run finds everything stored already.
	rep, err = Copy(ctx, src, dst, CopyOptions{})
	if err != nil || rep.Copied != 0 || rep.Existing != 2 {
		t.Fatalf("second run: %+v %v", rep, err)
	}
}

func TestCopyScopeAndDryRun(t *testing.T) {
	ctx := context.Background()
	src := &sliceSource{plugin: PluginLegacy, dim: 4, ms: legacyRows(t)}
	dst := openSQLite(t, 4)
	rep, err := Copy(ctx, src, dst, CopyOptions{Scope: "agent:main", DryRun: true})
	if err != nil || rep.Copied != 2 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if st, _ := dst.Stats(ctx, engine.AllScopes()); st.Total != 0 {
		t.Fatalf("a dry run wrote %d memories", st.Total)
	}
	if _, err := Copy(ctx, src, dst, CopyOptions{Scope: "agent:main"}); err != nil {
		t.Fatal(err)
	}
	if st, _ := dst.Stats(ctx, engine.InScopes("agent:main")); st.Total != 2 {
		t.Fatalf("scope override: %+v", st)
	}
	if _, err := Copy(ctx, src, dst, CopyOptions{Scope: "bad scope!"}); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("bad scope: %v", err)
	}
}

func TestCopyAcrossDimensions(t *testing.T) {
	ctx := context.Background()
	src := &sliceSource{plugin: PluginPro, dim: 4, ms: legacyRows(t)}
	dst := openSQLite(t, 3)
	if _, err := Copy(ctx, src, dst, CopyOptions{}); !errors.Is(err, engine.ErrDimensionMismatch) {
		t.Fatalf("want ErrDimensionMismatch without an embedder, got %v", err)
	}
	calls := 0
	embed := func(_ context.Context, texts []string) ([][]float32, error) {
		calls++
		out := make([][]float32, len(texts))
		for i := range texts {
			out[i] = []float32{0, 0, 1}
		}
		return out, nil
	}
	rep, err := Copy(ctx, src, dst, CopyOptions{Embed: embed})
	if err != nil {
		t.Fatal(err)
	}
	// The short vector is no problem either: every memory is embedded anew.
	if rep.Copied != 3 || rep.Reembedded != 3 || rep.Invalid != 2 || calls != 1 {
		t.Fatalf("report %+v, %d embedding calls", rep, calls)
	}
	m, err := dst.Get(ctx, uid(1), engine.AllScopes())
	if err != nil || m.Vector[2] != 1 || m.Timestamp != 1600000000000 {
		t.Fatalf("re-embedded memory %+v %v", m, err)
	}
	failing := func(context.Context, []string) ([][]float32, error) { return nil, errors.New("endpoint down") }
	dst2 := openSQLite(t, 3)
	if _, err := Copy(ctx, src, dst2, CopyOptions{Embed: failing}); err == nil || !strings.Contains(err.Error(), "endpoint down") {
		t.Fatalf("embedding failure: %v", err)
	}
}
