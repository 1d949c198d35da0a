package bench

import (
	"math"
	"math/rand/v2"
)

// clustered draws unit vectors around fixed gaussian centres, as
// embeddings of related texts cluster: the store benchmark's memories and
// queries, so that an approximate index's recall means something (random
// vectors have no neighbours worth the name). The centres depend only on
// dim, so a benchmark's child process draws queries like the memories.
type clustered struct {
	dim     int
	centres [][]float32
}

const benchCentres = 1000

func newClustered(dim int) *clustered {
	rng := rand.New(rand.NewPCG(uint64(dim), 0xce47))
	c := &clustered{dim: dim, centres: make([][]float32, benchCentres)}
	for i := range c.centres {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		c.centres[i] = v
	}
	return c
}

// vector is a centre plus noise of the same size per component (members
// of a cluster have cosine ≈ 0.5 with each other), normalised.
func (c *clustered) vector(rng *rand.Rand) []float32 {
	centre := c.centres[rng.IntN(len(c.centres))]
	v := make([]float32, c.dim)
	var ss float64
	for j := range v {
		x := float64(centre[j]) + rng.NormFloat64()
		v[j] = float32(x)
		ss += x * x
	}
	inv := 1 / math.Sqrt(ss)
	for j := range v {
		v[j] = float32(float64(v[j]) * inv)
	}
	return v
}
