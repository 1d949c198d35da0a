package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/schemas"
)

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
