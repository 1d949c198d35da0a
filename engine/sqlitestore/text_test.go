package sqlitestore

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/schemas"
	"github.com/google/uuid"
)

// ftsRanked runs fn with the store ranking through FTS5, as it does while
// the full-text index loads.
func ftsRanked(s *Store, fn func()) {
	x := s.text.Swap(nil)
	defer s.text.Store(x)
	fn()
}

// openTextStore opens a store in a test's directory, closed at its end.
func openTextStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{Dimensions: storetest.Dim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var textScopes = []string{"agent:a", "agent:b", "agent:c", schemas.GlobalScope}

// zipfText is a memory's text over a Zipf vocabulary, so some terms are in
// most memories and most in few.
func zipfText(r *rand.Rand, z *rand.Zipf) string {
	words := make([]string, 3+r.IntN(20))
	for i := range words {
		words[i] = fmt.Sprintf("w%d", z.Uint64())
		if r.IntN(9) == 0 {
			words[i] = strings.ToUpper(words[i])
		}
	}
	return strings.Join(words, " ")
}

// The in-memory index answers exactly what FTS5 answered, through every
// kind of write: adds, text and scope updates, invalidation, deletes, bulk
// deletes and the memory log a follower applies.
func TestTextIndexRanksAsFTS5(t *testing.T) {
	ctx := context.Background()
	s := openTextStore(t)
	if s.text.Load() == nil {
		t.Fatal("a small store opened without its full-text index")
	}
	r := rand.New(rand.NewPCG(7, 8))
	z := rand.NewZipf(r, 1.1, 2, 1499)
	var ms []schemas.Memory
	for i := range 1200 {
		ms = append(ms, schemas.Memory{Text: zipfText(r, z), Vector: storetest.Axis(i), Scope: textScopes[r.IntN(len(textScopes))],
			Timestamp: int64(i)})
	}
	added, err := s.Add(ctx, ms...)
	if err != nil {
		t.Fatal(err)
	}
	gone := map[string]bool{} // deleted or invalidated: no longer updated
	for i := 0; i < 300; i++ {
		id := added[r.IntN(len(added))].ID
		if gone[id] {
			continue
		}
		var p engine.Patch
		switch r.IntN(4) {
		case 0:
			text := zipfText(r, z)
			p.Text, p.Vector = &text, storetest.Axis(4000+i)
		case 1:
			scope := textScopes[r.IntN(len(textScopes))]
			p.Scope = &scope
		case 2:
			p.Invalidate = &engine.Invalidation{At: time.Now().UnixMilli()}
			gone[id] = true
		case 3:
			gone[id] = true
			if _, err := s.Delete(ctx, id, engine.AllScopes()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.Update(ctx, id, p, engine.AllScopes()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.BulkDelete(ctx, engine.BulkFilter{Scopes: engine.InScopes("agent:c"), Before: 300}); err != nil {
		t.Fatal(err)
	}
	var puts []schemas.Memory
	for i := range 50 {
		puts = append(puts, schemas.Memory{ID: uuid.NewString(), Text: zipfText(r, z), Vector: storetest.Axis(3000 + i),
			Scope: "agent:b", Category: schemas.CategoryFact, Importance: 0.5, Timestamp: int64(3000 + i)})
	}
	if err := s.ApplyLog(ctx, 1, puts, []string{added[0].ID, added[1].ID}); err != nil {
		t.Fatal(err)
	}

	filters := []engine.ScopeFilter{engine.AllScopes(), engine.InScopes("agent:a"), engine.InScopes("agent:b", schemas.GlobalScope),
		engine.InScopes("agent:nobody")}
	compared := 0
	for q := range 200 {
		query := fmt.Sprintf("w%d w%d", z.Uint64(), z.Uint64())
		if q%3 == 0 {
			query += fmt.Sprintf(" W%d", 1+r.IntN(50))
		}
		o := engine.SearchOptions{Scopes: filters[q%len(filters)], Limit: 1 + r.IntN(20), History: q%5 == 0}
		got, err := s.TextSearch(ctx, query, o)
		if err != nil {
			t.Fatal(err)
		}
		var want []engine.SearchResult
		ftsRanked(s, func() { want, err = s.TextSearch(ctx, query, o) })
		if err != nil {
			t.Fatal(err)
		}
		if !sameRanking(got, want) {
			t.Fatalf("query %q %+v:\n index %s\n FTS5  %s", query, o, describe(got), describe(want))
		}
		compared += len(want)
	}
	if compared < 600 {
		t.Fatalf("only %d results compared: the queries found too little to test", compared)
	}
}

// sameRanking: the same scores in the same order, and the same memories
// except where equal scores tie at the cut (either engine may keep any of
// them).
func sameRanking(a, b []engine.SearchResult) bool {
	if len(a) != len(b) {
		return false
	}
	last := 0.0
	if len(b) > 0 {
		last = b[len(b)-1].Raw
	}
	ids := map[string]bool{}
	for i := range a {
		if math.Abs(a[i].Raw-b[i].Raw) > 1e-9*math.Max(1, b[i].Raw) || math.Abs(a[i].Score-b[i].Score) > 1e-9 {
			return false
		}
		if b[i].Raw > last+1e-9 {
			ids[b[i].Memory.ID] = true
		}
	}
	for _, r := range a {
		delete(ids, r.Memory.ID)
	}
	return len(ids) == 0
}

func describe(rs []engine.SearchResult) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s:%.6f ", r.Memory.ID[:8], r.Raw)
	}
	return b.String()
}

// A query term that is a phrase ("text-embedding-3-small") is matched by
// FTS5, which knows token positions.
func TestPhraseQueriesRankWithFTS5(t *testing.T) {
	ctx := context.Background()
	s := openTextStore(t)
	if _, err := s.Add(ctx,
		schemas.Memory{Text: "we embed with text-embedding-3-small", Vector: storetest.Axis(0)},
		schemas.Memory{Text: "small text about embedding models", Vector: storetest.Axis(1)}); err != nil {
		t.Fatal(err)
	}
	res, err := s.TextSearch(ctx, "text-embedding-3-small", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !strings.Contains(res[0].Memory.Text, "text-embedding-3-small") {
		t.Fatalf("phrase query: %s", describe(res))
	}
}

// A large store builds its full-text index after the open; searches rank
// with FTS5 until then, and writes made meanwhile are in the index when it
// is published.
func TestTextIndexLoadsInTheBackground(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{Dimensions: storetest.Dim})
	if err != nil {
		t.Fatal(err)
	}
	var ms []schemas.Memory
	for i := range 400 {
		ms = append(ms, schemas.Memory{Text: fmt.Sprintf("note %d about kayaks", i), Vector: storetest.Axis(i)})
	}
	added, err := s.Add(ctx, ms...)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	defer func(n int) { textSyncMax = n }(textSyncMax)
	textSyncMax = 100
	s, err = Open(ctx, dir, Options{Dimensions: storetest.Dim})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// These race the load: each lands before it (and is read by it) or
	// after (and is applied to the published index).
	if _, err := s.Delete(ctx, added[0].ID, engine.AllScopes()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, schemas.Memory{Text: "kayaks kayaks kayaks", Vector: storetest.Axis(500)}); err != nil {
		t.Fatal(err)
	}
	all := engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 1000}
	before, err := s.TextSearch(ctx, "kayaks", all)
	if err != nil {
		t.Fatal(err)
	}
	s.WaitText()
	x := s.text.Load()
	if x == nil || x.Len() != 400 {
		t.Fatalf("after the load the index holds %v documents, want 400", x)
	}
	after, err := s.TextSearch(ctx, "kayaks", all)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) != 400 || !sameRanking(after, before) || !strings.HasPrefix(after[0].Memory.Text, "kayaks kayaks") {
		t.Fatalf("before the load %d results, after %d; best %q", len(before), len(after), after[0].Memory.Text)
	}
}

// Search results carry their vectors (the retriever's cosines need them),
// read from the index rather than the row: the same direction as stored.
func TestSearchResultsCarryVectors(t *testing.T) {
	ctx := context.Background()
	s := openTextStore(t)
	stored := map[string][]float32{}
	for i := range 5 {
		v := storetest.Axis(i)
		v[(i+1)%len(v)] = 3 // not unit length: the index normalises
		added, err := s.Add(ctx, schemas.Memory{Text: fmt.Sprintf("harbour walk %d", i), Vector: v, Scope: "agent:a"})
		if err != nil {
			t.Fatal(err)
		}
		stored[added[0].ID] = v
	}
	check := func(what string, ms []schemas.Memory) {
		t.Helper()
		if len(ms) == 0 {
			t.Fatalf("%s found nothing", what)
		}
		for _, m := range ms {
			if c := vecindex.Cosine(m.Vector, stored[m.ID]); len(m.Vector) != storetest.Dim || c < 0.9999 {
				t.Fatalf("%s: %s has vector %v (cosine %.4f with the stored one)", what, m.ID, m.Vector, c)
			}
		}
	}
	o := engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5}
	memories := func(rs []engine.SearchResult, err error) []schemas.Memory {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var ms []schemas.Memory
		for _, r := range rs {
			ms = append(ms, r.Memory)
		}
		return ms
	}
	found := memories(s.TextSearch(ctx, "harbour", o))
	check("text search", found)
	check("vector search", memories(s.VectorSearch(ctx, storetest.Axis(2), o)))
	nb, err := s.Neighbors(ctx, []engine.TimePoint{{Scope: "agent:a", At: found[0].Timestamp}}, 5, 3_600_000)
	if err != nil || len(nb) != 1 {
		t.Fatal(nb, err)
	}
	check("neighbours", nb[0])
}

// The int8 memory mode keeps RAM to the vector codes: it builds no
// posting lists, and full-text search ranks with FTS5.
func TestInt8ModeRanksWithFTS5(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{Dimensions: storetest.Dim, Index: vecindex.Options{Memory: vecindex.Int8}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Add(ctx, schemas.Memory{Text: "the harbour ferry leaves at nine", Vector: storetest.Axis(0)}); err != nil {
		t.Fatal(err)
	}
	if s.text.Load() != nil {
		t.Fatal("an int8 store built an in-memory full-text index")
	}
	res, err := s.TextSearch(ctx, "ferry", engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 5})
	if err != nil || len(res) != 1 {
		t.Fatalf("search: %v, %d results", err, len(res))
	}
}
