package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

// eagerStore hides RankHybrid, so the retriever reads every row its
// searches found (HybridSearch), as before ranked candidates.
type eagerStore struct{ *sqlitestore.Store }

func (eagerStore) RankHybrid(context.Context, []float32, string, engine.SearchOptions) ([]engine.Ranked, []engine.Ranked, bool, error) {
	return nil, nil, false, nil
}

// rankingStore counts the rankings that ran without reading rows.
type rankingStore struct {
	*sqlitestore.Store
	ranked *int
}

func (s rankingStore) RankHybrid(ctx context.Context, vec []float32, query string, o engine.SearchOptions) ([]engine.Ranked, []engine.Ranked, bool, error) {
	v, t, ok, err := s.Store.RankHybrid(ctx, vec, query, o)
	if ok {
		*s.ranked++
	}
	return v, t, ok, err
}

// Candidates ranked before their rows are read give exactly the recall of
// candidates read whole: under every fusion and BM25 normalisation, with
// and without history, over a store where facts changed (superseded
// memories whose successors are lifted, and archived ones).
func TestRankedCandidatesRecallAsRead(t *testing.T) {
	ctx := context.Background()
	const dim = 16
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{Dimensions: dim})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(21, 22))
	topics := make([][]float32, 12)
	for i := range topics {
		topics[i] = make([]float32, dim)
		for j := range topics[i] {
			topics[i][j] = float32(r.NormFloat64())
		}
	}
	// A memory's vector and words both come from its topic, so the two
	// searches find many of the same memories.
	near := func(topic int) []float32 {
		v := make([]float32, dim)
		for j := range v {
			v[j] = topics[topic][j] + 0.6*float32(r.NormFloat64())
		}
		return v
	}
	words := func(topic int) string {
		return fmt.Sprintf("t%d w%d w%d w%d", topic, r.IntN(40), r.IntN(40), r.IntN(200))
	}
	scopes := []string{"agent:a", "agent:b", schemas.GlobalScope}
	var ms []schemas.Memory
	for i := range 600 {
		topic := r.IntN(len(topics))
		ms = append(ms, schemas.Memory{Text: words(topic), Vector: near(topic), Scope: scopes[r.IntN(len(scopes))],
			Category: schemas.CategoryFact, Importance: 0.5 + 0.4*r.Float64(), Timestamp: benchNow.UnixMilli() - int64(i)*3_600_000})
	}
	added, err := st.Add(ctx, ms...)
	if err != nil {
		t.Fatal(err)
	}
	// Changed facts: a third replaced by a newer memory, some archived.
	for _, j := range r.Perm(len(added))[:200] {
		old := added[j]
		inv := engine.Invalidation{At: benchNow.UnixMilli()}
		if r.IntN(4) > 0 {
			topic := r.IntN(len(topics))
			nw, err := st.Add(ctx, schemas.Memory{Text: words(topic), Vector: near(topic), Scope: old.Scope,
				Category: schemas.CategoryFact, Importance: 0.7, Timestamp: benchNow.UnixMilli()})
			if err != nil {
				t.Fatal(err)
			}
			inv.SupersededBy = nw[0].ID
		}
		if _, err := st.Update(ctx, old.ID, engine.Patch{Invalidate: &inv}, engine.AllScopes()); err != nil {
			t.Fatal(err)
		}
	}
	lifted, rankings := 0, 0
	for _, fusion := range []string{FusionBlend, FusionRRF} {
		for _, norm := range []string{BM25Sigmoid, BM25Relative} {
			cfg := DefaultConfig()
			cfg.Fusion, cfg.BM25Norm, cfg.Rerank = fusion, norm, RerankNone
			ranked, err := New(rankingStore{st, &rankings}, cfg, WithClock(func() time.Time { return benchNow }))
			if err != nil {
				t.Fatal(err)
			}
			read, err := New(eagerStore{st}, cfg, WithClock(func() time.Time { return benchNow }))
			if err != nil {
				t.Fatal(err)
			}
			for i := range 120 {
				topic := r.IntN(len(topics))
				q := Query{Text: words(topic), Vector: near(topic), Limit: 1 + r.IntN(10), History: i%6 == 0,
					Scopes: []engine.ScopeFilter{engine.AllScopes(), engine.InScopes("agent:a", schemas.GlobalScope), engine.InScopes("agent:b")}[i%3]}
				want, err := read.Retrieve(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ranked.Retrieve(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s/%s, query %d %+v:\n ranked %v\n read   %v", fusion, norm, i, q, candIDs(got.Candidates), candIDs(want.Candidates))
				}
				for _, c := range want.Candidates {
					if c.Sources.Replaced != "" {
						lifted++
					}
				}
			}
		}
	}
	if lifted == 0 || rankings < 400 {
		t.Fatalf("%d recalls lifted a successor, %d ranked without rows: the test misses a path", lifted, rankings)
	}
}
