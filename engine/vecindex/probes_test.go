package vecindex

import (
	"math/rand/v2"
	"testing"
)

// TestSearchProbesFindsNearDuplicates: a duplicate check probes only a few
// clusters, and must still find a stored vector that a query nearly equals.
func TestSearchProbesFindsNearDuplicates(t *testing.T) {
	ix := New(64, Options{Mode: IVF})
	if _, err := FillClustered(ix, 12000, 0, 3, 0.5); err != nil {
		t.Fatal(err)
	}
	if err := ix.Build(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	for i := 0; i < 200; i++ {
		key := int64(rng.IntN(ix.Len()))
		v, ok := ix.Vector(key)
		if !ok {
			t.Fatalf("no vector for key %d", key)
		}
		for j := range v {
			v[j] += float32(rng.NormFloat64() * 0.01)
		}
		hits := ix.SearchProbes(v, 1, nil, 3)
		if len(hits) != 1 || hits[0].Key != key || hits[0].Sim < 0.99 {
			t.Fatalf("query %d: got %+v, want key %d", i, hits, key)
		}
	}
}
