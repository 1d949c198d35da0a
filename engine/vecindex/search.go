package vecindex

import (
	"math"
	"slices"

	"github.com/clawmem/clawmem/internal/workpool"
)

// scanChunk is the number of matrix elements (1 MiB) a worker claims at a
// time: large enough that the shared counter is touched rarely, small enough
// that a stalled worker's share is quickly picked up by the others.
const scanChunk = 1 << 18

// Search returns the k rows most similar to q whose group allow admits (nil
// allows all), best first, ties broken by smaller key. It is exact unless the
// index is in IVF mode and trained. A q of the wrong length or with a
// non-finite component, or k < 1, returns nil.
func (ix *Index) Search(q []float32, k int, allow *Groups) []Hit {
	return ix.SearchProbes(q, k, allow, 0)
}

// SearchProbes is Search with the number of IVF clusters to probe given
// per query (0: the index's setting). A duplicate check, which only looks
// for near-identical vectors, needs far fewer probes than a recall.
func (ix *Index) SearchProbes(q []float32, k int, allow *Groups, probes int) []Hit {
	return ix.SearchAbove(q, k, allow, probes, float32(math.Inf(-1)))
}

// SearchAbove is SearchProbes for hits of similarity at least minSim
// only: a duplicate check's question. Bit codes then neither keep nor
// re-score a candidate whose bound is below it, so a check that finds no
// duplicate reads only the codes.
func (ix *Index) SearchAbove(q []float32, k int, allow *Groups, probes int, minSim float32) []Hit {
	var hs []Hit
	if ix.mode != IVF {
		hs = ix.SearchExact(q, k, allow)
	} else if qn, zero := ix.query(q, k); qn != nil {
		ix.mu.RLock()
		if ix.ivf == nil || zero || len(ix.keys) < ix.exactBelow() {
			hs = ix.exact(qn, k, allow)
		} else {
			hs = ix.searchIVF(qn, k, allow, probes, minSim)
		}
		ix.mu.RUnlock()
	}
	return slices.DeleteFunc(hs, func(h Hit) bool { return h.Sim < minSim })
}

// SearchExact is Search by a full scan, whatever the mode.
func (ix *Index) SearchExact(q []float32, k int, allow *Groups) []Hit {
	qn, _ := ix.query(q, k)
	if qn == nil {
		return nil
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.exact(qn, k, allow)
}

// query returns a normalised copy of q and whether it is zero, or nil if the
// search cannot be answered.
func (ix *Index) query(q []float32, k int) ([]float32, bool) {
	if k <= 0 {
		return nil, false
	}
	inv, err := ix.invNorm(q)
	if err != nil {
		return nil, false
	}
	qn := make([]float32, len(q))
	for i, x := range q {
		qn[i] = float32(float64(x) * inv)
	}
	return qn, inv == 0
}

// exact scans the rows in chunks spread over the workers, each keeping its
// own top k, and merges. Callers hold mu for reading.
func (ix *Index) exact(q []float32, k int, allow *Groups) []Hit {
	n := len(ix.keys)
	// No more than n results exist; a huge k must not size the heaps.
	k = max(1, min(k, n))
	per := max(1, scanChunk/ix.dim)
	chunks := (n + per - 1) / per
	tops := make([]topk, min(ix.workers, max(chunks, 1)))
	for w := range tops {
		tops[w] = newTopk(k)
	}
	workpool.Run(len(tops), chunks, func(w, c int) {
		lo := c * per
		ix.scan(q, lo, min(lo+per, n), allow, &tops[w])
	})
	return hits(best(tops, k))
}

func (ix *Index) scan(q []float32, lo, hi int, allow *Groups, t *topk) {
	dim := ix.dim
	data, keys, groups := ix.data, ix.keys, ix.groups
	for r := lo; r < hi; r++ {
		if allow != nil && !allow.Has(groups[r]) {
			continue
		}
		s := dot(data[r*dim:(r+1)*dim:(r+1)*dim], q)
		if t.admits(s) {
			t.push(cand{s, keys[r]})
		}
	}
}

// hits converts key-identified candidates to results. Dot products of unit
// vectors can stray past ±1 by rounding; cosines cannot.
func hits(cs []cand) []Hit {
	out := make([]Hit, len(cs))
	for i, c := range cs {
		out[i] = Hit{Key: c.id, Sim: max(-1, min(1, c.s))}
	}
	return out
}

// allowedRows counts the rows allow admits.
func (ix *Index) allowedRows(allow *Groups) int {
	if allow == nil {
		return len(ix.keys)
	}
	n := 0
	for g, c := range ix.groupN {
		if allow.Has(g) {
			n += c
		}
	}
	return n
}

// FloorScan sums the matrix with the exact scan's chunking and
// parallelism: the memory-bandwidth bound an exact search is judged
// against (clawmem bench store times it next to SearchExact). It reads what
// the scan reads and nothing else, so it lives here, beside the scan.
func (ix *Index) FloorScan() float32 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := len(ix.keys)
	per := max(1, scanChunk/ix.dim)
	chunks := (n + per - 1) / per
	parts := make([]float32, min(ix.workers, max(chunks, 1)))
	workpool.Run(len(parts), chunks, func(w, c int) {
		lo, hi := c*per*ix.dim, min((c+1)*per, n)*ix.dim
		parts[w] += sum(ix.data[lo:hi])
	})
	return sum(parts)
}
