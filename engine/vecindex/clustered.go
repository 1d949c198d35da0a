package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
)

// FillClustered upserts n rows (keys 0..n-1, group = key mod 16) drawn
// around clamp(n/100, 1, 1000) gaussian centres with per-component spread
// times the centres' (members of a cluster have cosine ≈ 1/(1+spread²)), and
// returns queries: stored vectors plus noise of norm ≈ 0.1. It is the
// synthetic corpus of the index's tests and of `clawmem bench index`.
func FillClustered(ix *Index, n, queries int, seed uint64, spread float64) ([][]float32, error) {
	dim := ix.Dim()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	nc := max(1, min(1000, n/100))
	centres := make([]float32, nc*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64())
	}
	ix.Reserve(ix.Len() + n)
	v := make([]float32, dim)
	for i := range n {
		c := rng.IntN(nc)
		for j := range v {
			v[j] = centres[c*dim+j] + float32(spread*rng.NormFloat64())
		}
		if err := ix.Upsert(int64(i), uint32(i%16), v); err != nil {
			return nil, err
		}
	}
	qs := make([][]float32, queries)
	noise := 0.1 / math.Sqrt(float64(dim))
	for i := range qs {
		q, _ := ix.Vector(int64(rng.IntN(n)))
		for j := range q {
			q[j] += float32(noise * rng.NormFloat64())
		}
		qs[i] = q
	}
	return qs, nil
}

// Overlap counts the keys of want that got contains.
func Overlap(want, got []Hit) int {
	n := 0
	for _, w := range want {
		if slices.ContainsFunc(got, func(h Hit) bool { return h.Key == w.Key }) {
			n++
		}
	}
	return n
}
