package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

func testAdd(t *testing.T, open Opener) {
	s := fresh(t, open)
	before := time.Now().Add(-time.Second).UnixMilli()
	got := add(t, s, schemas.Memory{Text: "I prefer dark mode", Vector: Axis(0), Category: schemas.CategoryPreference,
		Scope: "agent:main", Importance: 0.9, Metadata: json.RawMessage(`{"source":"test"}`)})
	m := got[0]
	if !schemas.IsUUID(m.ID) {
		t.Fatalf("id %q is not a UUID", m.ID)
	}
	if m.Timestamp < before || m.Timestamp > time.Now().Add(time.Second).UnixMilli() {
		t.Fatalf("timestamp %d is not now", m.Timestamp)
	}
	back, err := s.Get(ctx, m.ID, engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	if back.Text != m.Text || back.Category != schemas.CategoryPreference || back.Scope != "agent:main" ||
		back.Importance != 0.9 || back.Timestamp != m.Timestamp || len(back.Vector) != Dim || back.Vector[0] != 1 {
		t.Fatalf("got back %+v, stored %+v", back, m)
	}
	var meta map[string]string
	if err := json.Unmarshal(back.Metadata, &meta); err != nil || meta["source"] != "test" {
		t.Fatalf("metadata %s", back.Metadata)
	}
	// Defaults: category other, scope global, metadata {}, importance clamped.
	d := add(t, s, schemas.Memory{Text: "a bare memory", Vector: Axis(1), Importance: 7})[0]
	d, _ = s.Get(ctx, d.ID, engine.AllScopes())
	if d.Category != schemas.CategoryOther || d.Scope != schemas.GlobalScope || string(d.Metadata) != "{}" || d.Importance != 1 {
		t.Fatalf("defaults not applied: %+v", d)
	}
	two := add(t, s, mem("one", "global", Axis(2)), mem("two", "global", Axis(3)))
	if two[0].ID == two[1].ID {
		t.Fatal("batch got one id twice")
	}
}

func testImport(t *testing.T, open Opener) {
	s := fresh(t, open)
	m := mem("imported memory", "custom:work", Axis(0))
	m.ID = strings.ToUpper(id(1))
	m.Timestamp = 1700000000000
	if err := s.Import(ctx, m); err != nil {
		t.Fatal(err)
	}
	back, err := s.Get(ctx, id(1), engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != id(1) || back.Timestamp != 1700000000000 || back.Scope != "custom:work" {
		t.Fatalf("import did not keep id/timestamp/scope: %+v", back)
	}
	// Missing id and timestamp are generated.
	if err := s.Import(ctx, mem("no id", "global", Axis(1))); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s); n != 2 {
		t.Fatalf("count %d", n)
	}
	bad := mem("bad id", "global", Axis(1))
	bad.ID = "not-a-uuid"
	if err := s.Import(ctx, bad); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

func testImportDuplicate(t *testing.T, open Opener) {
	s := fresh(t, open)
	a := mem("first", "global", Axis(0))
	a.ID = id(1)
	if err := s.Import(ctx, a); err != nil {
		t.Fatal(err)
	}
	b := mem("second", "global", Axis(1))
	b.ID = id(2)
	dup := mem("dup", "global", Axis(2))
	dup.ID = id(1)
	err := s.Import(ctx, b, dup)
	if !errors.Is(err, engine.ErrExists) {
		t.Fatalf("want ErrExists, got %v", err)
	}
	if ok, _ := s.Has(ctx, id(2)); ok {
		t.Fatal("a failed batch left a row behind")
	}
	got, _ := s.Get(ctx, id(1), engine.AllScopes())
	if got.Text != "first" {
		t.Fatalf("duplicate import changed the row: %q", got.Text)
	}
	// The index must not have picked up the failed batch either.
	res, err := s.VectorSearch(ctx, Axis(1), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Memory.ID == id(2) {
			t.Fatal("failed batch is searchable")
		}
	}
}

func testDelete(t *testing.T, open Opener) {
	s := fresh(t, open)
	ms := add(t, s, mem("delete me", "agent:a", Axis(0)), mem("keep me", "agent:a", Axis(1)))
	if _, err := s.Delete(ctx, ms[0].ID, engine.InScopes("agent:b")); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("delete from another scope: %v", err)
	}
	got, err := s.Delete(ctx, ms[0].ID[:8], engine.InScopes("agent:a"))
	if err != nil || got != ms[0].ID {
		t.Fatalf("delete by prefix: %q %v", got, err)
	}
	if ok, _ := s.Has(ctx, ms[0].ID); ok {
		t.Fatal("still there")
	}
	res, _ := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	for _, r := range res {
		if r.Memory.ID == ms[0].ID {
			t.Fatal("deleted memory still found by vector search")
		}
	}
	if res, _ := s.TextSearch(ctx, "delete", engine.SearchOptions{Scopes: engine.AllScopes()}); len(res) != 0 {
		t.Fatalf("deleted memory still found by text search: %v", res)
	}
	if _, err := s.Delete(ctx, ms[0].ID, engine.AllScopes()); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func testUpdate(t *testing.T, open Opener) {
	s := fresh(t, open)
	orig := mem("the server runs on port 8080", "agent:a", Axis(0))
	orig.ID = id(7)
	orig.Timestamp = 1600000000000
	if err := s.Import(ctx, orig); err != nil {
		t.Fatal(err)
	}
	text := "the server runs on port 9090"
	cat := schemas.CategoryDecision
	imp := 0.2
	got, err := s.Update(ctx, id(7)[:8], engine.Patch{Text: &text, Vector: Axis(3), Category: &cat, Importance: &imp,
		Metadata: []byte(`{"edited":true}`)}, engine.InScopes("agent:a"))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id(7) || got.Timestamp != 1600000000000 || got.Text != text || got.Category != cat || got.Importance != 0.2 {
		t.Fatalf("update result %+v", got)
	}
	back, _ := s.Get(ctx, id(7), engine.AllScopes())
	if back.Text != text || back.Timestamp != 1600000000000 || back.Vector[3] != 1 || string(back.Metadata) != `{"edited":true}` {
		t.Fatalf("stored after update %+v", back)
	}
	if n := count(t, s); n != 1 {
		t.Fatalf("update changed the row count to %d", n)
	}
	// A backend without full-text search answers no text query; the
	// index checks apply to those that have one.
	if res, _ := s.TextSearch(ctx, "8080", engine.SearchOptions{Scopes: engine.AllScopes()}); len(res) != 0 {
		t.Fatal("old text still indexed")
	}
	if res, _ := s.TextSearch(ctx, "9090", engine.SearchOptions{Scopes: engine.AllScopes()}); s.HasFullText() && len(res) != 1 {
		t.Fatal("new text not indexed")
	}
	res, _ := s.VectorSearch(ctx, Axis(3), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1})
	if len(res) != 1 || res[0].Memory.ID != id(7) || res[0].Score < 0.999 {
		t.Fatalf("new vector not searchable: %+v", res)
	}
	// Text without its vector, bad values and foreign scopes change nothing.
	bad := schemas.Category("nonsense")
	empty := ""
	foreign := "agent:b"
	badScope := "bad scope!"
	for name, p := range map[string]engine.Patch{
		"text without vector": {Text: &text},
		"bad category":        {Category: &bad},
		"empty text":          {Text: &empty, Vector: Axis(1)},
		"nan vector":          {Vector: []float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0}},
		"short vector":        {Vector: []float32{1}},
		"bad scope":           {Scope: &badScope},
		"bad metadata":        {Metadata: []byte(`[1,2]`)},
	} {
		if _, err := s.Update(ctx, id(7), p, engine.AllScopes()); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := s.Update(ctx, id(7), engine.Patch{Scope: &foreign}, engine.InScopes("agent:a")); !errors.Is(err, engine.ErrScopeDenied) {
		t.Errorf("move to foreign scope: %v", err)
	}
	if _, err := s.Update(ctx, id(7), engine.Patch{Importance: &imp}, engine.InScopes("agent:b")); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("update from foreign scope: %v", err)
	}
	after, _ := s.Get(ctx, id(7), engine.AllScopes())
	if after.Text != back.Text || after.Category != back.Category || after.Scope != "agent:a" || after.Vector[3] != 1 {
		t.Fatalf("failed updates changed the row: %+v", after)
	}
	// A scope move is visible to filters and the vector index.
	custom := "custom:work"
	if _, err := s.Update(ctx, id(7), engine.Patch{Scope: &custom}, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	res, _ = s.VectorSearch(ctx, Axis(3), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 1})
	if len(res) != 0 {
		t.Fatal("moved memory still found in its old scope")
	}
	res, _ = s.VectorSearch(ctx, Axis(3), engine.SearchOptions{Scopes: engine.InScopes(custom), Limit: 1})
	if len(res) != 1 {
		t.Fatal("moved memory not found in its new scope")
	}
}

func testBulkDelete(t *testing.T, open Opener) {
	s := fresh(t, open)
	var ms []schemas.Memory
	for i := 0; i < 30; i++ {
		m := mem(fmt.Sprintf("bulk %d", i), []string{"global", "agent:a", "agent:b"}[i%3], Axis(i))
		m.ID = id(i + 1)
		m.Timestamp = int64(1000 + i)
		ms = append(ms, m)
	}
	if err := s.Import(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.AllScopes()}); !errors.Is(err, engine.ErrUnfilteredBulk) {
		t.Fatalf("unfiltered bulk delete: %v", err)
	}
	if n, _ := s.BulkDelete(ctx, engine.BulkFilter{}); n != 0 {
		t.Fatalf("zero filter deleted %d", n)
	}
	if n, err := s.CountBulk(ctx, engine.BulkFilter{Scopes: engine.InScopes("agent:a")}); err != nil || n != 10 {
		t.Fatalf("count agent:a = %d %v", n, err)
	}
	n, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.InScopes("agent:a"), Before: 1015})
	if err != nil || n != 5 {
		t.Fatalf("scope+before deleted %d %v", n, err)
	}
	n, err = s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.AllScopes(), Before: 1003})
	if err != nil || n != 2 { // 1000 global, 1002 agent:b (1001 agent:a already gone)
		t.Fatalf("before-only deleted %d %v", n, err)
	}
	if c := count(t, s); c != 23 {
		t.Fatalf("%d left, want 23", c)
	}
	res, _ := s.VectorSearch(ctx, Axis(1), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 30})
	for _, r := range res {
		if r.Memory.Timestamp < 1015 {
			t.Fatalf("bulk-deleted memory still searchable: %+v", r.Memory)
		}
	}
}
