package sqlitestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/storetest"
	"github.com/clawmem/clawmem/schemas"
)

// HybridSearch answers exactly what VectorSearch and TextSearch answer
// apart, under every scope filter, with and without history, limits and
// minimum scores, and for queries the in-memory index ranks and ones that
// go to FTS5 (a phrase term, or no index).
func TestHybridSearchAnswersAsApart(t *testing.T) {
	ctx := context.Background()
	s := openTextStore(t)
	r := rand.New(rand.NewPCG(11, 12))
	z := rand.NewZipf(r, 1.1, 2, 300)
	vec := func() []float32 {
		v := make([]float32, storetest.Dim)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	var ms []schemas.Memory
	for i := range 800 {
		ms = append(ms, schemas.Memory{Text: zipfText(r, z), Vector: vec(), Scope: textScopes[r.IntN(len(textScopes))],
			Timestamp: int64(i)})
	}
	added, err := s.Add(ctx, ms...)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range r.Perm(len(added))[:100] { // history: invalidated memories, found only with History
		id := added[j].ID
		if _, err := s.Update(ctx, id, engine.Patch{Invalidate: &engine.Invalidation{At: time.Now().UnixMilli()}}, engine.AllScopes()); err != nil {
			t.Fatalf("invalidate %d: %v", i, err)
		}
	}
	filters := []engine.ScopeFilter{engine.AllScopes(), engine.InScopes("agent:a"), engine.InScopes("agent:b", schemas.GlobalScope),
		engine.InScopes("agent:nobody"), engine.InScopes()}
	shared, results := 0, 0
	for q := range 300 {
		query := fmt.Sprintf("w%d w%d W%d", z.Uint64(), z.Uint64(), z.Uint64())
		if q%7 == 0 {
			query += " text-embedding-3-small" // a phrase: FTS5 ranks it
		}
		o := engine.SearchOptions{Scopes: filters[q%len(filters)], Limit: 1 + r.IntN(25), History: q%4 == 0}
		if q%3 == 0 {
			o.MinScore = 0.3
		}
		v := vec()
		run := func() {
			wantVec, err := s.VectorSearch(ctx, v, o)
			if err != nil {
				t.Fatal(err)
			}
			wantText, err := s.TextSearch(ctx, query, o)
			if err != nil {
				t.Fatal(err)
			}
			gotVec, gotText, err := s.HybridSearch(ctx, v, query, o)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotVec, wantVec) || !reflect.DeepEqual(gotText, wantText) {
				t.Fatalf("query %q %+v:\n hybrid vector %s\n apart  vector %s\n hybrid text %s\n apart  text %s",
					query, o, describe(gotVec), describe(wantVec), describe(gotText), describe(wantText))
			}
			ids := map[string]bool{}
			for _, h := range wantVec {
				ids[h.Memory.ID] = true
			}
			for _, h := range wantText {
				if ids[h.Memory.ID] {
					shared++
				}
			}
			results += len(wantVec) + len(wantText)
		}
		run()
		if q%5 == 0 {
			ftsRanked(s, run) // no in-memory index: FTS5 ranks beside
		}
	}
	t.Logf("%d results compared, %d of the text ones found by both", results, shared)
	if results < 2000 || shared == 0 {
		t.Fatalf("compared %d results, %d found by both: the test exercises too little", results, shared)
	}
	// A wrong vector fails as VectorSearch fails.
	_, _, herr := s.HybridSearch(ctx, []float32{1}, "w1", engine.SearchOptions{Scopes: engine.AllScopes()})
	_, verr := s.VectorSearch(ctx, []float32{1}, engine.SearchOptions{Scopes: engine.AllScopes()})
	if herr == nil || herr.Error() != verr.Error() {
		t.Fatalf("a wrong vector: %v, VectorSearch says %v", herr, verr)
	}
}
