package vecindex

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// The 100k × 1024 fixture is shared by the large benchmarks: building it takes
// ~600 MB and several seconds.
var big struct {
	once  sync.Once
	ix    *Index
	qs    [][]float32
	truth [][]Hit
	build time.Duration
	err   error
}

func bigIndex(b *testing.B) *Index {
	if testing.Short() {
		b.Skip("100k × 1024 benchmark skipped in -short mode")
	}
	big.once.Do(func() {
		ix := New(1024, Options{Mode: IVF})
		big.qs, big.err = FillClustered(ix, 100_000, 200, 1, 1)
		if big.err != nil {
			return
		}
		for _, q := range big.qs {
			big.truth = append(big.truth, ix.SearchExact(q, 10, nil))
		}
		t0 := time.Now()
		big.err = ix.Build()
		big.build = time.Since(t0)
		big.ix = ix
	})
	if big.err != nil {
		b.Fatal(big.err)
	}
	return big.ix
}

// latencies runs op once per benchmark iteration and reports its p50 and p99.
func latencies(b *testing.B, op func(i int)) {
	var ds []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		op(i)
		ds = append(ds, time.Since(t0))
	}
	b.ReportMetric(float64(percentile(ds, 0.5))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(ds, 0.99))/1e6, "p99-ms")
}

// BenchmarkFloor streams the whole matrix once per op with a trivial
// reduction: the memory-bandwidth bound for BenchmarkExact.
func BenchmarkFloor(b *testing.B) {
	ix := bigIndex(b)
	latencies(b, func(int) { ix.FloorScan() })
}

func BenchmarkExact(b *testing.B) {
	ix := bigIndex(b)
	latencies(b, func(i int) { ix.SearchExact(big.qs[i%len(big.qs)], 10, nil) })
}

func BenchmarkExactFiltered(b *testing.B) {
	ix := bigIndex(b)
	allow := NewGroups(1, 2, 3, 4)
	latencies(b, func(i int) { ix.SearchExact(big.qs[i%len(big.qs)], 10, allow) })
}

// BenchmarkIVF also reports recall@10 against exact search, the training
// time and the memory IVF adds.
func BenchmarkIVF(b *testing.B) {
	ix := bigIndex(b)
	found, want := 0, 0
	latencies(b, func(i int) {
		j := i % len(big.qs)
		found += Overlap(big.truth[j], ix.Search(big.qs[j], 10, nil))
		want += len(big.truth[j])
	})
	b.ReportMetric(float64(found)/float64(want), "recall@10")
	b.ReportMetric(big.build.Seconds(), "build-s")
	b.ReportMetric(float64(ix.Stats().IVFBytes)/(1<<20), "ivf-MiB")
}

func BenchmarkIVFFiltered(b *testing.B) {
	ix := bigIndex(b)
	allow := NewGroups(1, 2, 3, 4)
	latencies(b, func(i int) { ix.Search(big.qs[i%len(big.qs)], 10, allow) })
}

func BenchmarkDot1024(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := randVec(rng, 1024), randVec(rng, 1024)
	var s float32
	b.Run("dispatch", func(b *testing.B) {
		for b.Loop() {
			s += dot(x, y)
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			s += dotGeneric(x, y)
		}
	})
	c := make([]int8, 1024)
	quantize(c, x)
	q := quantizeQuery(y)
	b.Run("int8", func(b *testing.B) {
		for b.Loop() {
			s += float32(dot8(c, q))
		}
	})
	b.Run("int8-generic", func(b *testing.B) {
		for b.Loop() {
			s += float32(dot8Generic(c, q))
		}
	})
	_ = s
}

// BenchmarkIVFWide scans as many codes a search as a million-row store's
// does (half the clusters, a filter keeping three quarters of the rows:
// some 50,000 codes), so the bit scan and the candidates it keeps weigh as
// they do there.
func BenchmarkIVFWide(b *testing.B) {
	ix := bigIndex(b)
	allow := NewGroups(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	probes := ix.ivf.nlist / 2
	latencies(b, func(i int) { ix.SearchProbes(big.qs[i%len(big.qs)], 10, allow, probes) })
}
