package testkit

import (
	"math"
	"slices"
	"time"
)

// Percentile is the nearest-rank q-quantile (0 < q ≤ 1) of ds.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(float64(len(s))*q)) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
