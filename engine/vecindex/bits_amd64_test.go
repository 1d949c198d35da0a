//go:build amd64 && !purego

package vecindex

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// Each kernel this CPU runs gives the reference's results: the AVX-512 one
// (where there is AVX-512 VPOPCNTQ) and the POPCNT one it falls back to.
func TestBitScanKernels(t *testing.T) {
	vec := hasVPOPCNTQ
	t.Cleanup(func() { hasVPOPCNTQ, scanFours = vec, true })
	t.Logf("AVX-512 VPOPCNTQ: %v, POPCNT: %v", vec, hasPOPCNT)
	if vec {
		t.Run("vpopcntq", checkBitScan)
		scanFours = false
		t.Run("vpopcntq-rows", checkBitScan)
		scanFours = true
	}
	hasVPOPCNTQ = false
	if hasPOPCNT {
		t.Run("popcnt", checkBitScan)
	}
}

// BenchmarkBitScanKernels times a cluster's scan (1,250 rows, as at a
// million rows) with each kernel, at 384 and 1,024 dimensions.
func BenchmarkBitScanKernels(b *testing.B) {
	vec := hasVPOPCNTQ
	b.Cleanup(func() { hasVPOPCNTQ, scanFours = vec, true })
	for _, dim := range []int{384, 1024} {
		w := dim / 64
		const rows = 1250
		rng := rand.New(rand.NewPCG(1, uint64(dim)))
		codes, planes, out := randomWords(rng, rows*w), randomWords(rng, 4*w), make([]uint64, rows)
		for _, k := range []struct {
			name      string
			on, fours bool
		}{{"vpopcntq", true, true}, {"vpopcntq-rows", true, false}, {"popcnt", false, false}} {
			if k.on && !vec {
				continue
			}
			b.Run(k.name+"/"+strconv.Itoa(dim), func(b *testing.B) {
				hasVPOPCNTQ, scanFours = k.on, k.fours
				for b.Loop() {
					bitScan(codes, w, planes, out)
				}
			})
		}
	}
}

// BenchmarkBitScanCold scans as a million-row search does: 43 clusters of
// 2,260 rows of 1,024-bit codes, at random places in 128 MB of codes, so
// they come from RAM. Here the scan is bound by memory, not by counting,
// and a masked load (which the four-row kernel no longer uses for whole
// blocks) made it three times slower on AMD Zen 4.
func BenchmarkBitScanCold(b *testing.B) {
	const w, total, run, runs = 16, 1_000_000, 2260, 43
	rng := rand.New(rand.NewPCG(1, 2))
	codes, planes, out := randomWords(rng, total*w), randomWords(rng, 4*w), make([]uint64, run)
	b.Cleanup(func() { scanFours = true })
	for _, fours := range []bool{true, false} {
		name := "fours"
		if !fours {
			name = "rows"
		}
		b.Run(name, func(b *testing.B) {
			scanFours = fours
			for b.Loop() {
				for range runs {
					lo := rng.IntN(total - run)
					bitScan(codes[lo*w:(lo+run)*w], w, planes, out)
				}
			}
		})
	}
}
