//go:build lancedb

package lancestore

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/lancedb/lancedb-go/pkg/lancedb"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/schemas"
)

// These tests link LanceDB's native library; see the README's "LanceDB
// backend" section for the CGO flags.

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, dir string, dim int) (engine.Store, error) {
		return Open(context.Background(), dir, Options{Dimensions: dim})
	})
}

// writeTable creates the memories table in dir with cols, as a plugin's
// JavaScript writer would, and writes ms into it.
func writeTable(t *testing.T, dir string, cols []column, ms []schemas.Memory) {
	t.Helper()
	ctx := context.Background()
	conn, err := lancedb.Connect(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	as, err := arrowSchema(cols)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := lancedb.NewSchema(as)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := conn.CreateTable(ctx, TableName, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Close()
	rec, err := record(as, ms)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := tbl.AddRecords(ctx, []arrow.Record{rec}, nil); err != nil {
		t.Fatal(err)
	}
}

func pluginRows() []schemas.Memory {
	return []schemas.Memory{
		{ID: uid(1), Text: "I prefer dark mode", Vector: []float32{1, 0, 0, 0}, Category: schemas.CategoryPreference,
			Importance: 0.9, Timestamp: 1600000000000, Metadata: []byte("{}")},
		{ID: "__schema__", Text: "", Vector: []float32{0, 0, 0, 0}, Category: schemas.CategoryOther, Metadata: []byte("{}")},
		{ID: uid(2), Text: "my dog is called Rex", Vector: []float32{0, 1, 0, 0}, Category: schemas.CategoryFact,
			Importance: 0.7, Timestamp: 1600000000001, Metadata: []byte(`{"source":"manual"}`)},
	}
}

func TestMemoryLanceDBTableIsCopiedNotOpened(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeTable(t, dir, legacyColumns, pluginRows())
	if _, err := Open(ctx, dir, Options{Dimensions: 4}); !errors.Is(err, ErrLegacyTable) {
		t.Fatalf("Open of a memory-lancedb table: want ErrLegacyTable, got %v", err)
	}
	src, err := OpenLegacy(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if n, err := src.Count(ctx); src.Plugin() != PluginLegacy || src.Dimensions() != 4 || n != 3 || err != nil {
		t.Fatalf("source %s, %d dims, %d rows, %v", src.Plugin(), src.Dimensions(), n, err)
	}
	dst := openSQLite(t, 4)
	rep, err := Copy(ctx, src, dst, CopyOptions{})
	if err != nil || rep.Read != 2 || rep.Copied != 2 {
		t.Fatalf("copy: %+v %v", rep, err)
	}
	m, err := dst.Get(ctx, uid(1), engine.InScopes("global"))
	if err != nil || m.Timestamp != 1600000000000 || m.Importance != 0.9 || m.Vector[0] != 1 || m.Category != schemas.CategoryPreference {
		t.Fatalf("copied %+v %v", m, err)
	}
}

func TestMemoryLanceDBProTableOpensAsAStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeTable(t, dir, proColumns(4), pluginRows()) // scope "": the plugin's older rows
	src, err := OpenLegacy(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if src.Plugin() != PluginPro {
		t.Fatalf("plugin %s", src.Plugin())
	}
	src.Close()
	s, err := Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, err := s.Get(ctx, uid(2)[:8], engine.InScopes("global"))
	if err != nil || m.Scope != "global" || m.Timestamp != 1600000000001 || string(m.Metadata) != `{"source":"manual"}` {
		t.Fatalf("plugin row %+v %v", m, err)
	}
	if st, err := s.Stats(ctx, engine.AllScopes()); err != nil || st.Total != 2 {
		t.Fatalf("the placeholder row counts: %+v %v", st, err)
	}
	if _, err := Open(ctx, dir, Options{Dimensions: 8}); !errors.Is(err, engine.ErrDimensionMismatch) {
		t.Fatalf("dimension check: %v", err)
	}
}

// TestUpdateCommits: a scalar change is one in-place commit; a new text
// is the three commits of a replacement.
func TestUpdateCommits(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Add(ctx, schemas.Memory{Text: "port 8080", Vector: []float32{1, 0, 0, 0}, Scope: "agent:a"})
	if err != nil {
		t.Fatal(err)
	}
	v0, _ := s.tbl.Version(ctx)
	imp, scope := 0.2, "custom:it's-fine"
	if _, err := s.Update(ctx, ms[0].ID, engine.Patch{Importance: &imp}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if v1, _ := s.tbl.Version(ctx); v1 != v0+1 {
		t.Fatalf("in-place update made %d commits", v1-v0)
	}
	if _, err := s.Update(ctx, ms[0].ID, engine.Patch{Scope: &scope}, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("a scope with a quote is refused before SQL: %v", err)
	}
	text := "port 9090"
	v1, _ := s.tbl.Version(ctx)
	if _, err := s.Update(ctx, ms[0].ID, engine.Patch{Text: &text, Vector: []float32{0, 1, 0, 0}}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if v2, _ := s.tbl.Version(ctx); v2 != v1+3 {
		t.Fatalf("replacement made %d commits", v2-v1)
	}
	if n := s.Len(); n != 1 {
		t.Fatalf("%d rows after the replacement", n)
	}
	got, err := s.Get(ctx, ms[0].ID, engine.InScopes("agent:a"))
	if err != nil || got.Text != text || got.Importance != 0.2 || got.Timestamp != ms[0].Timestamp {
		t.Fatalf("after updates %+v %v", got, err)
	}
}

// TestInterruptedReplacementIsFinishedAtOpen leaves the two states a crash
// inside replace can leave, and reopens.
func TestInterruptedReplacementIsFinishedAtOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := s.Add(ctx,
		schemas.Memory{Text: "renamed, then crashed", Vector: []float32{1, 0, 0, 0}},
		schemas.Memory{Text: "rewritten, then crashed", Vector: []float32{0, 1, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := ms[0], ms[1]
	if err := s.rename(ctx, a.ID, a.ID+tombSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, a.ID, engine.AllScopes()); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a renamed row is readable: %v", err)
	}
	if err := s.rename(ctx, b.ID, b.ID+tombSuffix); err != nil {
		t.Fatal(err)
	}
	b.Text = "the new text"
	if err := s.write(ctx, []schemas.Memory{b}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(ctx, engine.AllScopes()); st.Total != 1 {
		t.Fatalf("stats count the old rows: %+v", st)
	}
	s.Close()
	s, err = Open(ctx, dir, Options{Dimensions: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Get(ctx, a.ID, engine.AllScopes()); err != nil || got.Text != a.Text {
		t.Fatalf("renamed row not restored: %+v %v", got, err)
	}
	if got, err := s.Get(ctx, b.ID, engine.AllScopes()); err != nil || got.Text != "the new text" {
		t.Fatalf("rewritten row: %+v %v", got, err)
	}
	if n := s.Len(); n != 2 {
		t.Fatalf("%d rows left, want 2", n)
	}
}
