package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/clawmem/clawmem/engine/vecindex"
	"github.com/clawmem/clawmem/internal/testkit"
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
	qs, err := vecindex.FillClustered(ix, n, queries, 1, 1)
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
	rep.FloorP50 = testkit.Percentile(floor, 0.5)
	rep.ExactP50, rep.ExactP99 = testkit.Percentile(exact, 0.5), testkit.Percentile(exact, 0.99)

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
			found += vecindex.Overlap(truth[i], h)
		}
	}
	rep.IVFP50, rep.IVFP99 = testkit.Percentile(ivf, 0.5), testkit.Percentile(ivf, 0.99)
	want := 0
	for _, t := range truth {
		want += len(t)
	}
	rep.IVFRecall10 = float64(found) / float64(max(want, 1))
	return rep, nil
}
