package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/workers/query"
)

// IndexReport is what indexBench measured. FloorP50 is the time to stream
// the whole matrix once with a trivial reduction, split across cores as the
// exact scan is: the memory-bandwidth bound an exact search is judged
// against.
type IndexReport struct {
	N, Dim      int
	FloorP50    time.Duration
	ExactP50    time.Duration
	ExactP99    time.Duration
	IVFP50      time.Duration
	IVFP99      time.Duration
	IVFBuild    time.Duration
	IVFRecall10 float64 // mean fraction of the exact top 10 that IVF returns
	IVFBytes    int64   // memory IVF adds to the float32 matrix
}

// indexBench fills an index with n deterministic clustered vectors (up to
// 1,000 gaussian clusters of about 100 vectors; queries are stored vectors
// plus noise) and times exact and IVF top-10 searches. progress, if not
// nil, gets a line per phase. It needs about n·dim·5 bytes of memory.
func indexBench(n, dim, queries int, progress io.Writer) (IndexReport, error) {
	if n < 1 || dim < 1 || queries < 1 {
		return IndexReport{}, errors.New("bench: the index benchmark needs n, dim and queries ≥ 1")
	}
	if progress == nil {
		progress = io.Discard
	}
	rep := IndexReport{N: n, Dim: dim}
	fmt.Fprintf(progress, "generating %d × %d clustered vectors\n", n, dim)
	ix := vecindex.New(dim, vecindex.Options{Mode: vecindex.IVF})
	qs, err := fillIndex(ix, n, queries)
	if err != nil {
		return rep, err
	}

	fmt.Fprintf(progress, "exact search: %d queries, interleaved with memory-floor scans\n", queries)
	var floor, exact []time.Duration
	truth := make([][]vecindex.Hit, len(qs))
	for i := -2; i < len(qs); i++ { // two untimed rounds warm caches and the scheduler
		q := qs[max(i, 0)]
		t0 := time.Now()
		ix.FloorScan()
		t1 := time.Now()
		h := ix.SearchExact(q, 10, nil)
		t2 := time.Now()
		if i >= 0 {
			floor = append(floor, t1.Sub(t0))
			exact = append(exact, t2.Sub(t1))
			truth[i] = h
		}
	}
	rep.FloorP50 = query.Percentile(floor, 0.5)
	rep.ExactP50, rep.ExactP99 = query.Percentile(exact, 0.5), query.Percentile(exact, 0.99)

	fmt.Fprintf(progress, "building IVF\n")
	t0 := time.Now()
	if err := ix.Build(); err != nil {
		return rep, err
	}
	rep.IVFBuild = time.Since(t0)
	rep.IVFBytes = ix.Stats().IVFBytes

	fmt.Fprintf(progress, "IVF search: %d queries\n", queries)
	var ivf []time.Duration
	var found int
	for i := -2; i < len(qs); i++ {
		q := qs[max(i, 0)]
		t0 := time.Now()
		h := ix.Search(q, 10, nil)
		d := time.Since(t0)
		if i >= 0 {
			ivf = append(ivf, d)
			found += overlap(truth[i], h)
		}
	}
	rep.IVFP50, rep.IVFP99 = query.Percentile(ivf, 0.5), query.Percentile(ivf, 0.99)
	want := 0
	for _, t := range truth {
		want += len(t)
	}
	rep.IVFRecall10 = float64(found) / float64(max(want, 1))
	return rep, nil
}

// fillIndex upserts n rows (keys 0..n-1, group = key mod 16) drawn around
// clamp(n/100, 1, 1000) gaussian centres with per-component noise the
// size of the centres' (members of a cluster have cosine ≈ 0.5), and
// returns queries: stored vectors plus noise of norm ≈ 0.1.
func fillIndex(ix *vecindex.Index, n, queries int) ([][]float32, error) {
	dim := ix.Dim()
	rng := rand.New(rand.NewPCG(1, 0x5eed))
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
			v[j] = centres[c*dim+j] + float32(rng.NormFloat64())
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

// overlap counts the keys of want that got contains.
func overlap(want, got []vecindex.Hit) int {
	n := 0
	for _, w := range want {
		if slices.ContainsFunc(got, func(h vecindex.Hit) bool { return h.Key == w.Key }) {
			n++
		}
	}
	return n
}
