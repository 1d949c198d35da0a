// Package storetest is the conformance suite every engine.Store backend
// passes. A backend's test calls Run with a function that opens its store in
// a directory.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

// Opener opens (creating if needed) the backend's store in dir with the
// given vector dimensions.
type Opener func(t *testing.T, dir string, dim int) (engine.Store, error)

// Dim is the vector size the suite uses.
const Dim = 8

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"AddGeneratesIDAndTimestamp", testAdd},
		{"ImportKeepsIDAndTimestamp", testImport},
		{"ImportDuplicateIsAtomic", testImportDuplicate},
		{"Has", testHas},
		{"ResolveAndPrefixes", testResolve},
		{"AmbiguousPrefix", testAmbiguous},
		{"Delete", testDelete},
		{"UpdateInPlace", testUpdate},
		{"BulkDelete", testBulkDelete},
		{"List", testList},
		{"ListFilters", testListFilters},
		{"Stats", testStats},
		{"AddedByDay", testAddedByDay},
		{"VectorSearch", testVectorSearch},
		{"VectorSearchScopeFilterInsideQuery", testVectorScopeFilter},
		{"LegacyEmptyScopeIsGlobal", testLegacyScope},
		{"TextSearch", testTextSearch},
		{"TextSearchSyntaxIsInert", testTextSearchSyntax},
		{"Iterate", testIterate},
		{"ReopenKeepsEverything", testReopen},
		{"DimensionMismatch", testDimensionMismatch},
		{"BadInput", testBadInput},
		{"ScopeIsolation", testScopeIsolation},
		{"Concurrent", testConcurrent},
		{"Closed", testClosed},
		{"History", testHistory},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func mustOpen(t *testing.T, open Opener, dir string) engine.Store {
	t.Helper()
	s, err := open(t, dir, Dim)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func fresh(t *testing.T, open Opener) engine.Store { return mustOpen(t, open, t.TempDir()) }

// Axis returns the unit vector along axis i (mod Dim).
func Axis(i int) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = 1
	return v
}

// Mix returns a unit vector between axes i and j, weight w on i.
func Mix(i, j int, w float64) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = float32(w)
	v[j%Dim] += float32(math.Sqrt(1 - w*w))
	return v
}

func mem(text, scope string, vec []float32) schemas.Memory {
	return schemas.Memory{Text: text, Scope: scope, Vector: vec, Category: schemas.CategoryFact, Importance: 0.7}
}

func add(t *testing.T, s engine.Store, ms ...schemas.Memory) []schemas.Memory {
	t.Helper()
	out, err := s.Add(context.Background(), ms...)
	if err != nil {
		t.Fatalf("add: %v", err)
	}
	return out
}

func id(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

var ctx = context.Background()

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

func count(t *testing.T, s engine.Store) int {
	t.Helper()
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	return st.Total
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

func testHas(t *testing.T, open Opener) {
	s := fresh(t, open)
	m := add(t, s, mem("has me", "agent:a", Axis(0)))[0]
	for _, c := range []struct {
		id   string
		want bool
	}{{m.ID, true}, {strings.ToUpper(m.ID), true}, {id(99), false}, {m.ID[:8], false}, {"' OR 1=1 --", false}} {
		got, err := s.Has(ctx, c.id)
		if err != nil || got != c.want {
			t.Errorf("Has(%q) = %v, %v; want %v", c.id, got, err, c.want)
		}
	}
}

func testResolve(t *testing.T, open Opener) {
	s := fresh(t, open)
	m := add(t, s, mem("resolve me", "agent:a", Axis(0)))[0]
	for _, key := range []string{m.ID, m.ID[:8], m.ID[:13], strings.ToUpper(m.ID[:10]), " " + m.ID[:9] + " "} {
		got, err := s.Resolve(ctx, key, engine.AllScopes())
		if err != nil || got != m.ID {
			t.Errorf("Resolve(%q) = %q, %v", key, got, err)
		}
	}
	for _, key := range []string{"", m.ID[:7], "zzzzzzzz", "' OR 1=1 --", m.ID + "0", "%%%%%%%%", "________", m.ID[:8] + "%"} {
		if _, err := s.Resolve(ctx, key, engine.AllScopes()); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("Resolve(%q): want ErrInvalid, got %v", key, err)
		}
	}
	if _, err := s.Resolve(ctx, id(12345), engine.AllScopes()); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := s.Resolve(ctx, m.ID[:8], engine.InScopes("agent:b")); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("other scope: %v", err)
	}
	if _, err := s.Resolve(ctx, m.ID, engine.ScopeFilter{}); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("zero filter must deny: %v", err)
	}
}

func testAmbiguous(t *testing.T, open Opener) {
	s := fresh(t, open)
	var ms []schemas.Memory
	for i := 1; i <= 3; i++ {
		m := mem(fmt.Sprintf("twin %d", i), "global", Axis(i))
		m.ID = fmt.Sprintf("abcdef01-0000-4000-8000-%012d", i)
		ms = append(ms, m)
	}
	other := mem("other", "agent:x", Axis(0))
	other.ID = "abcdef02-0000-4000-8000-000000000001"
	ms = append(ms, other)
	if err := s.Import(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(ctx, "abcdef01", engine.AllScopes())
	var amb *engine.AmbiguousError
	if !errors.As(err, &amb) || !errors.Is(err, engine.ErrAmbiguous) {
		t.Fatalf("want AmbiguousError, got %v", err)
	}
	if len(amb.Matches) != 3 || !strings.Contains(err.Error(), ms[0].ID) || !strings.Contains(err.Error(), ms[2].ID) {
		t.Fatalf("error must name the matches: %v", err)
	}
	if _, err := s.Delete(ctx, "abcdef01", engine.AllScopes()); !errors.Is(err, engine.ErrAmbiguous) {
		t.Fatalf("delete by ambiguous prefix: %v", err)
	}
	if n := count(t, s); n != 4 {
		t.Fatalf("ambiguous delete removed something: %d left", n)
	}
	got, err := s.Resolve(ctx, "abcdef01-0000-4000-8000-000000000002", engine.AllScopes())
	if err != nil || got != ms[1].ID {
		t.Fatalf("longer prefix: %q %v", got, err)
	}
	// Scope narrows a prefix: "abcdef0" plus one more char matches across,
	// but only one memory is visible to agent:x.
	got, err = s.Resolve(ctx, "abcdef02", engine.InScopes("agent:x"))
	if err != nil || got != other.ID {
		t.Fatalf("scoped prefix: %q %v", got, err)
	}
	// Many matches: no row limit on the lookup, and the error stays short.
	var many []schemas.Memory
	for i := 0; i < 40; i++ {
		m := mem(fmt.Sprintf("many %d", i), "global", Axis(i))
		m.ID = fmt.Sprintf("fedcba98-%04d-4000-8000-000000000000", i)
		many = append(many, m)
	}
	if err := s.Import(ctx, many...); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(ctx, "fedcba98", engine.AllScopes())
	if !errors.As(err, &amb) || len(err.Error()) > 1000 {
		t.Fatalf("many matches: %v", err)
	}
	got, err = s.Resolve(ctx, "fedcba98-0039", engine.AllScopes())
	if err != nil || got != many[39].ID {
		t.Fatalf("last of many: %q %v", got, err)
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

func testList(t *testing.T, open Opener) {
	s := fresh(t, open)
	var ms []schemas.Memory
	for i := 0; i < 45; i++ {
		m := mem(fmt.Sprintf("list %02d", i), []string{"global", "agent:a"}[i%2], Axis(i))
		m.ID = id(i + 1)
		m.Timestamp = int64(5000 + i)
		if i%5 == 0 {
			m.Category = schemas.CategoryPreference
		}
		ms = append(ms, m)
	}
	if err := s.Import(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	page, err := s.List(ctx, engine.ListOptions{Scopes: engine.AllScopes()})
	if err != nil || len(page) != 20 {
		t.Fatalf("default page: %d %v", len(page), err)
	}
	for i, m := range page {
		if m.Text != fmt.Sprintf("list %02d", 44-i) || m.Vector != nil {
			t.Fatalf("row %d: %+v (want newest first, no vectors)", i, m)
		}
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.AllScopes(), Limit: 10, Offset: 40})
	if len(page) != 5 || page[4].Text != "list 00" {
		t.Fatalf("last page: %d", len(page))
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.InScopes("agent:a"), Limit: 100})
	if len(page) != 22 {
		t.Fatalf("scope filter: %d", len(page))
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.AllScopes(), Category: schemas.CategoryPreference, Limit: 100})
	if len(page) != 9 {
		t.Fatalf("category filter: %d", len(page))
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.InScopes("global"), Category: schemas.CategoryPreference, Limit: 100})
	if len(page) != 5 {
		t.Fatalf("scope+category filter: %d", len(page))
	}
	if page, _ := s.List(ctx, engine.ListOptions{}); len(page) != 0 {
		t.Fatal("zero filter listed rows")
	}
	if _, err := s.List(ctx, engine.ListOptions{Scopes: engine.AllScopes(), Category: "' OR 1=1 --"}); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("bad category: %v", err)
	}
}

// List's time range, text filter and cursor: pages taken after each
// page's last memory cover everything once, in order, and agree with the
// offset pages; the filters compose with scope and category.
func testListFilters(t *testing.T, open Opener) {
	s := fresh(t, open)
	var ms []schemas.Memory
	for i := range 50 {
		text := fmt.Sprintf("row %02d about tea", i)
		if i%3 == 0 {
			text = fmt.Sprintf("row %02d about Coffee_50%%", i)
		}
		m := mem(text, []string{"global", "agent:a"}[i%2], Axis(i))
		m.ID = id(i + 1)
		m.Timestamp = int64(10_000 + 100*(i/2)) // pairs share a timestamp: the id breaks the tie
		switch i % 10 {
		case 1:
			m.Metadata = json.RawMessage(`{"source":"distill","sessionId":"s-1"}`)
		case 2:
			m.Metadata = json.RawMessage(`{"source":"auto-capture","sessionKey":"s-1"}`)
		case 3:
			m.Metadata = json.RawMessage(`{"sessionId":7}`)
		case 4:
			m.Metadata = json.RawMessage(`{"core":true}`)
		case 5:
			m.Metadata = json.RawMessage(`{"core":"true","sessionKey":"s-2"}`)
		case 7:
			m.Metadata = json.RawMessage(`{"core":1}`)
		}
		ms = append(ms, m)
	}
	if err := s.Import(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	all := engine.AllScopes()
	whole, err := s.List(ctx, engine.ListOptions{Scopes: all, Limit: 100})
	if err != nil || len(whole) != 50 {
		t.Fatalf("whole list: %d %v", len(whole), err)
	}
	var walked []string
	var after *engine.ListKey
	for pages := 0; ; pages++ {
		page, err := s.List(ctx, engine.ListOptions{Scopes: all, Limit: 7, After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page {
			walked = append(walked, m.ID)
		}
		if len(page) < 7 {
			break
		}
		last := page[len(page)-1]
		after = &engine.ListKey{Timestamp: last.Timestamp, ID: last.ID}
		if pages > 10 {
			t.Fatal("the cursor does not advance")
		}
	}
	if len(walked) != len(whole) {
		t.Fatalf("cursor pages gave %d memories, the list %d", len(walked), len(whole))
	}
	for i, m := range whole {
		if walked[i] != m.ID {
			t.Fatalf("cursor pages differ from the list at %d: %s, %s", i, walked[i], m.ID)
		}
	}
	// Time range: since inclusive, until exclusive.
	page, _ := s.List(ctx, engine.ListOptions{Scopes: all, Limit: 100, Since: 10_200, Until: 10_500})
	if len(page) != 6 || page[0].Timestamp != 10_400 || page[5].Timestamp != 10_200 {
		t.Fatalf("time range: %d rows %v", len(page), page)
	}
	// Text: a substring, any case; LIKE's wildcards are literal. Session:
	// named by either key; other metadata, or none, is not. Core: marked
	// core true, not "true" or 1.
	for _, tc := range []struct {
		name string
		o    engine.ListOptions
		want int
	}{
		{"text COFFEE", engine.ListOptions{Text: "COFFEE"}, 17},
		{"text with wildcards", engine.ListOptions{Text: "_50%"}, 17},
		{"text %", engine.ListOptions{Text: "%"}, 17},
		{"text t_a, not a wildcard", engine.ListOptions{Text: "t_a"}, 0},
		{"session s-1", engine.ListOptions{Session: "s-1"}, 10},
		{"session 7, not the number", engine.ListOptions{Session: "7"}, 0},
		{"core", engine.ListOptions{Core: true}, 5},
		{"core and text", engine.ListOptions{Core: true, Text: "coffee"}, 1},
	} {
		tc.o.Scopes, tc.o.Limit = all, 100
		if page, err := s.List(ctx, tc.o); err != nil || len(page) != tc.want {
			t.Fatalf("%s: %d rows, want %d (%v)", tc.name, len(page), tc.want, err)
		}
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.InScopes("agent:a"), Limit: 100, Text: "tea", Since: 11_000})
	for _, m := range page {
		if m.Scope != "agent:a" || m.Timestamp < 11_000 || !strings.Contains(m.Text, "tea") {
			t.Fatalf("combined filters let %+v through", m)
		}
	}
	if len(page) == 0 {
		t.Fatal("combined filters found nothing")
	}
	// The core memories are all in global: none of them is agent:a's.
	if page, err := s.List(ctx, engine.ListOptions{Scopes: engine.InScopes("agent:a", "agent:b"), Limit: 100, Core: true}); err != nil || len(page) != 0 {
		t.Fatalf("core in agent:a: %d rows (%v)", len(page), err)
	}
	page, _ = s.List(ctx, engine.ListOptions{Scopes: engine.InScopes("global", "agent:a"), Limit: 2, Core: true})
	if len(page) != 2 || page[0].ID != id(45) || page[1].ID != id(35) {
		t.Fatalf("newest two core memories: %v", page)
	}
}

// AddedByDay counts by UTC day from a bound on, within the filter.
func testAddedByDay(t *testing.T, open Opener) {
	s := fresh(t, open)
	day := int64(24 * 3600 * 1000)
	base := int64(1_767_225_600_000) // 2026-01-01T00:00:00Z
	var ms []schemas.Memory
	for i, at := range []int64{base - 1, base, base + day - 1, base + day, base + 2*day + 5} {
		m := mem(fmt.Sprintf("day %d", i), []string{"global", "agent:a"}[i%2], Axis(i))
		m.ID, m.Timestamp = id(i+1), at
		ms = append(ms, m)
	}
	if err := s.Import(ctx, ms...); err != nil {
		t.Fatal(err)
	}
	got, err := s.AddedByDay(ctx, engine.AllScopes(), base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"2026-01-01": 2, "2026-01-02": 1, "2026-01-03": 1}
	if !maps.Equal(got, want) {
		t.Fatalf("by day %v, want %v", got, want)
	}
	if got, _ := s.AddedByDay(ctx, engine.InScopes("agent:a"), 0); !maps.Equal(got, map[string]int{"2026-01-01": 1, "2026-01-02": 1}) {
		t.Fatalf("agent:a by day %v", got)
	}
	if got, _ := s.AddedByDay(ctx, engine.ScopeFilter{}, 0); len(got) != 0 {
		t.Fatalf("zero filter by day %v", got)
	}
}

func testStats(t *testing.T, open Opener) {
	s := fresh(t, open)
	add(t, s, mem("a1", "agent:a", Axis(0)), mem("a2", "agent:a", Axis(1)), mem("g1", "global", Axis(2)))
	p := mem("pref", "global", Axis(3))
	p.Category = schemas.CategoryPreference
	add(t, s, p)
	st, err := s.Stats(ctx, engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	if st.Total != 4 || st.ByScope["agent:a"] != 2 || st.ByScope["global"] != 2 || st.ByCategory["fact"] != 3 || st.ByCategory["preference"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	st, _ = s.Stats(ctx, engine.InScopes("agent:a"))
	if st.Total != 2 || len(st.ByScope) != 1 {
		t.Fatalf("scoped stats %+v", st)
	}
	st, _ = s.Stats(ctx, engine.ScopeFilter{})
	if st.Total != 0 {
		t.Fatalf("zero filter stats %+v", st)
	}
}

func testVectorSearch(t *testing.T, open Opener) {
	s := fresh(t, open)
	ms := add(t, s,
		mem("same", "global", Axis(0)),
		mem("orthogonal", "global", Axis(1)),
		mem("opposite", "global", []float32{-1, 0, 0, 0, 0, 0, 0, 0}),
		mem("close", "global", Mix(0, 2, 0.9)),
	)
	res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		text  string
		score float64
	}{{"same", 1}, {"close", 1 / (1 + 0.1)}, {"orthogonal", 0.5}, {"opposite", 1.0 / 3}}
	if len(res) != len(want) {
		t.Fatalf("got %d results", len(res))
	}
	for i, w := range want {
		if res[i].Memory.Text != w.text || math.Abs(res[i].Score-w.score) > 1e-5 {
			t.Errorf("result %d = %q %.6f, want %q %.6f", i, res[i].Memory.Text, res[i].Score, w.text, w.score)
		}
		if len(res[i].Memory.Vector) != Dim {
			t.Errorf("result %d has no vector", i)
		}
	}
	// Cosine ignores length.
	res, _ = s.VectorSearch(ctx, []float32{5, 0, 0, 0, 0, 0, 0, 0}, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1})
	if len(res) != 1 || res[0].Memory.ID != ms[0].ID || math.Abs(res[0].Score-1) > 1e-5 {
		t.Fatalf("scaled query: %+v", res)
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10, MinScore: 0.6})
	if len(res) != 2 {
		t.Fatalf("minScore 0.6 kept %d", len(res))
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.AllScopes()})
	if len(res) != 4 {
		t.Fatalf("default limit kept %d", len(res))
	}
	// A zero query vector matches nothing better than anything else but must not fail.
	if _, err := s.VectorSearch(ctx, make([]float32, Dim), engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil {
		t.Fatalf("zero query: %v", err)
	}
}

func testVectorScopeFilter(t *testing.T, open Opener) {
	s := fresh(t, open)
	// 50 memories of agent:b sit right on the query; 3 of agent:a further
	// away. A filter applied after a top-k would find none of agent:a's.
	var ms []schemas.Memory
	for i := 0; i < 50; i++ {
		ms = append(ms, mem(fmt.Sprintf("b %d", i), "agent:b", Mix(0, 1, 0.999)))
	}
	for i := 0; i < 3; i++ {
		ms = append(ms, mem(fmt.Sprintf("a %d", i), "agent:a", Mix(0, 2+i, 0.5)))
	}
	add(t, s, ms...)
	res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a"), Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 {
		t.Fatalf("scope filter outside the query: got %d of agent:a's 3", len(res))
	}
	for _, r := range res {
		if r.Memory.Scope != "agent:a" {
			t.Fatalf("leaked %+v", r.Memory)
		}
	}
	for _, f := range []engine.ScopeFilter{{}, engine.InScopes(), engine.InScopes("agent:zzz"), engine.InScopes("' OR 1=1 --")} {
		res, err := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: f, Limit: 5})
		if err != nil || len(res) != 0 {
			t.Errorf("filter %v: %d results, %v", f, len(res), err)
		}
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a", "agent:b"), Limit: 60})
	if len(res) != 53 {
		t.Fatalf("two scopes: %d", len(res))
	}
}

func testLegacyScope(t *testing.T, open Opener) {
	s := fresh(t, open)
	m := mem("legacy row without scope", "", Axis(0))
	m.ID = id(3)
	if err := s.Import(ctx, m); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id(3), engine.InScopes(schemas.GlobalScope))
	if err != nil || got.Scope != schemas.GlobalScope {
		t.Fatalf("legacy row: %+v %v", got, err)
	}
	res, _ := s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("global")})
	if len(res) != 1 {
		t.Fatal("legacy row not found under global")
	}
	res, _ = s.VectorSearch(ctx, Axis(0), engine.SearchOptions{Scopes: engine.InScopes("agent:a")})
	if len(res) != 0 {
		t.Fatal("legacy row leaked into agent:a")
	}
}

func testTextSearch(t *testing.T, open Opener) {
	s := fresh(t, open)
	if !s.HasFullText() {
		t.Skip("backend reports no full-text support")
	}
	add(t, s,
		mem("We deploy everything with Docker compose on the build server", "global", Axis(0)),
		mem("我最喜欢喝乌龙茶", "global", Axis(1)),
		mem("Set JINA_API_KEY in the systemd unit", "agent:a", Axis(2)),
		mem("私はコーヒーが好きです", "global", Axis(3)),
		mem("제 비밀번호 힌트는 고양이 이름입니다", "global", Axis(4)),
		mem("Die Besprechung ist immer am Montag", "global", Axis(5)),
	)
	cases := []struct {
		query, want string
		scopes      engine.ScopeFilter
	}{
		{"Docker", "Docker compose", engine.AllScopes()},
		{"docker", "Docker compose", engine.AllScopes()},
		{"乌龙茶", "乌龙茶", engine.AllScopes()},
		{"喝茶", "", engine.AllScopes()}, // shares no bigram with 我最喜欢喝乌龙茶
		{"JINA_API_KEY", "JINA_API_KEY", engine.InScopes("agent:a")},
		{"JINA_API_KEY", "", engine.InScopes("global")},
		{"コーヒー", "コーヒー", engine.AllScopes()},
		{"고양이", "고양이", engine.AllScopes()},
		{"montag", "Montag", engine.AllScopes()},
	}
	for _, c := range cases {
		res, err := s.TextSearch(ctx, c.query, engine.SearchOptions{Scopes: c.scopes, Limit: 5})
		if err != nil {
			t.Errorf("%q: %v", c.query, err)
			continue
		}
		if c.want == "" {
			if len(res) != 0 {
				t.Errorf("%q (scopes %v) matched %v, want nothing", c.query, c.scopes, texts(res))
			}
			continue
		}
		if len(res) == 0 || !strings.Contains(res[0].Memory.Text, c.want) {
			t.Errorf("%q: got %v, want a hit containing %q", c.query, texts(res), c.want)
			continue
		}
		if res[0].Score <= 0.5 || res[0].Score >= 1 || len(res[0].Memory.Vector) != Dim {
			t.Errorf("%q: score %v (want normalised into (0.5,1)), vector len %d", c.query, res[0].Score, len(res[0].Memory.Vector))
		}
	}
	// More matching words rank higher.
	add(t, s, mem("Docker", "global", Axis(6)))
	res, _ := s.TextSearch(ctx, "docker compose build server", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	if len(res) < 2 || !strings.Contains(res[0].Memory.Text, "compose") || res[0].Score < res[1].Score {
		t.Fatalf("ranking: %v", texts(res))
	}
}

func texts(rs []engine.SearchResult) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Memory.Text
	}
	return out
}

func testTextSearchSyntax(t *testing.T, open Opener) {
	s := fresh(t, open)
	add(t, s, mem(`He said "NEAR" is a keyword (really) and * is a star`, "global", Axis(0)))
	for _, q := range []string{`"`, `*`, `NEAR`, `NEAR(a b)`, `(((`, `)`, `' OR 1=1 --`, `a AND`, `OR`, `NOT x`,
		`"unbalanced`, `col:value`, `^start`, `a + b`, "", "   ", "\xff\xfe", strings.Repeat("word ", 20000), "🙂🙂"} {
		if _, err := s.TextSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes()}); err != nil {
			t.Errorf("query %.40q: %v", q, err)
		}
	}
	res, err := s.TextSearch(ctx, `NEAR(keyword`, engine.SearchOptions{Scopes: engine.AllScopes()})
	if err != nil || (s.HasFullText() && len(res) != 1) {
		t.Fatalf("syntax words must be plain words: %v %v", texts(res), err)
	}
}

func testIterate(t *testing.T, open Opener) {
	s := fresh(t, open)
	var ms []schemas.Memory
	for i := 0; i < 25; i++ {
		ms = append(ms, mem(fmt.Sprintf("iter %d", i), []string{"global", "agent:a"}[i%2], Axis(i)))
	}
	add(t, s, ms...)
	seen := map[string]bool{}
	err := s.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: true}, func(m schemas.Memory) error {
		if len(m.Vector) != Dim {
			return fmt.Errorf("%s has no vector", m.Text)
		}
		seen[m.Text] = true
		return nil
	})
	if err != nil || len(seen) != 25 {
		t.Fatalf("iterate all: %d %v", len(seen), err)
	}
	n := 0
	err = s.Iterate(ctx, engine.IterateOptions{Scopes: engine.InScopes("agent:a")}, func(m schemas.Memory) error {
		if m.Vector != nil || m.Scope != "agent:a" {
			return fmt.Errorf("unexpected %+v", m)
		}
		n++
		return nil
	})
	if err != nil || n != 12 {
		t.Fatalf("iterate scope: %d %v", n, err)
	}
	stop := errors.New("stop")
	n = 0
	err = s.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes()}, func(schemas.Memory) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("stop: %d %v", n, err)
	}
}

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
			got, err := nb.Neighbors(ctx, "agent:a", cur.Timestamp, 5, 60_000)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range got {
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
