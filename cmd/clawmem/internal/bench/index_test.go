package bench

import (
	"bytes"
	"strings"
	"testing"
)

// A small index benchmark (above the size from which IVF is built at all)
// measures every figure it reports, finds most of the exact top 10
// approximately, and says what it is doing.
func TestIndexBench(t *testing.T) {
	var progress bytes.Buffer
	rep, err := indexBench(6000, 32, 20, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != 6000 || rep.Dim != 32 || rep.FloorP50 <= 0 || rep.ExactP50 <= 0 || rep.ExactP99 < rep.ExactP50 ||
		rep.IVFP50 <= 0 || rep.IVFP99 < rep.IVFP50 || rep.IVFBuild <= 0 || rep.IVFBytes <= 0 {
		t.Fatalf("figures: %+v", rep)
	}
	if rep.IVFRecall10 < 0.5 || rep.IVFRecall10 > 1 {
		t.Fatalf("IVF recall@10 %.3f, want the clusters to make it at least 0.5", rep.IVFRecall10)
	}
	for _, phase := range []string{"generating", "exact search", "building IVF", "IVF search"} {
		if !strings.Contains(progress.String(), phase) {
			t.Errorf("progress has no %q: %s", phase, progress.String())
		}
	}
}

func TestIndexBenchRefusesEmptySizes(t *testing.T) {
	for _, tc := range []struct{ n, dim, queries int }{{0, 8, 1}, {10, 0, 1}, {10, 8, 0}, {-1, 8, 1}} {
		if _, err := indexBench(tc.n, tc.dim, tc.queries, nil); err == nil {
			t.Errorf("indexBench(%d, %d, %d) ran", tc.n, tc.dim, tc.queries)
		}
	}
}
