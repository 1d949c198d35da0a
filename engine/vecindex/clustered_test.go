package vecindex

import (
	"math"
	"slices"
	"time"
)

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	return s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
}
