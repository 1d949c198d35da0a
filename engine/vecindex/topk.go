package vecindex

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// cand is a scored candidate; id is a key in final results and a row number
// in the approximate IVF stage.
type cand struct {
	s  float32
	id int64
}

// worse orders candidates by score, breaking ties towards the smaller id so
// results are deterministic whatever the scan order.
func worse(a, b cand) bool { return a.s < b.s || (a.s == b.s && a.id > b.id) }

// topk keeps the k best candidates in a min-heap whose root is the worst kept.
type topk struct {
	k int
	h []cand
}

func newTopk(k int) topk { return topk{k: k, h: make([]cand, 0, k)} }

// admits is the cheap pre-check for the scan loops: a score strictly below a
// full heap's root can never enter.
func (t *topk) admits(s float32) bool { return len(t.h) < t.k || s >= t.h[0].s }

func (t *topk) push(c cand) {
	h := t.h
	if len(h) < t.k {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if !worse(h[0], c) {
		return
	}
	h[0] = c
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && worse(h[l], h[m]) {
			m = l
		}
		if l+1 < len(h) && worse(h[l+1], h[m]) {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// best merges per-worker heaps into the k best candidates, best first.
func best(tops []topk, k int) []cand {
	var all []cand
	for _, t := range tops {
		all = append(all, t.h...)
	}
	slices.SortFunc(all, func(a, b cand) int {
		if c := cmp.Compare(b.s, a.s); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return all[:min(k, len(all))]
}

// rowTopk is topk for the approximate stage of an IVF search with int8
// codes, which pushes thousands of candidates per query (bit codes queue
// them all instead: rowQueue). A candidate there is a row number, so it
// and its score pack into one uint64 that orders as worse does (higher
// score greater; equal scores, the smaller row greater). Comparing keys is
// one instruction, and the heap is half the bytes.
type rowTopk struct {
	k int
	h []uint64
}

func newRowTopk(k int) rowTopk { return rowTopk{k: k, h: make([]uint64, 0, k)} }

// packRow maps s to a uint32 that orders as the float does (the sign bit
// set for positives, every bit flipped for negatives; −0 is 0), above the
// row's complement.
func packRow(s float32, r int32) uint64 {
	b := math.Float32bits(s)
	if b == 1<<31 {
		b = 0
	}
	if b>>31 != 0 {
		b = ^b
	} else {
		b |= 1 << 31
	}
	return uint64(b)<<32 | uint64(^uint32(r))
}

func unpackRow(x uint64) cand {
	b := uint32(x >> 32)
	if b>>31 != 0 {
		b &^= 1 << 31
	} else {
		b = ^b
	}
	return cand{math.Float32frombits(b), int64(int32(^uint32(x)))}
}

func (t *rowTopk) push(s float32, r int32) {
	x := packRow(s, r)
	h := t.h
	if len(h) < t.k {
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[i] >= h[p] {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.h = h
		return
	}
	if x <= h[0] {
		return
	}
	h[0] = x
	n := len(h)
	for i := 0; ; {
		m, l := i, 2*i+1
		if l < n && h[l] < h[m] {
			m = l
		}
		if l+1 < n && h[l+1] < h[m] {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// bestRows merges per-worker heaps into the k best candidates, best first,
// in the order best gives.
func bestRows(tops []rowTopk, k int) []cand {
	var all []uint64
	for _, t := range tops {
		all = append(all, t.h...)
	}
	slices.Sort(all)
	n := min(k, len(all))
	out := make([]cand, n)
	for i := range out {
		out[i] = unpackRow(all[len(all)-1-i])
	}
	return out
}

// rowQueue hands out packed row candidates best first, at most left of
// them: a max-heap made in linear time and popped only as far as the
// re-scoring goes, which is usually a few hundred of thousands.
type rowQueue struct {
	h    []uint64
	left int
}

func newRowQueue(h []uint64, limit int) *rowQueue {
	if len(h) > 2*limit {
		h = topRows(h, limit)
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDownMax(h, i)
	}
	return &rowQueue{h: h, left: min(limit, len(h))}
}

// topRows moves to the front of h the candidates of the score buckets
// that hold its best limit, and returns them: a histogram of the scores
// over 1,024 buckets from the lowest to the highest, counted down from the
// top until limit. At a million rows a search queues some fifty thousand
// candidates, and making a heap of them all was a tenth of its CPU.
func topRows(h []uint64, limit int) []uint64 {
	lo, hi := uint32(math.MaxUint32), uint32(0)
	for _, x := range h {
		s := uint32(x >> 32)
		lo, hi = min(lo, s), max(hi, s)
	}
	const bucketBits = 10
	shift := max(0, bits.Len32(hi-lo)-bucketBits)
	var count [1 << bucketBits]int32
	for _, x := range h {
		count[(uint32(x>>32)-lo)>>shift]++
	}
	cut, n := uint32(len(count)-1), 0
	for ; cut > 0; cut-- {
		if n += int(count[cut]); n >= limit {
			break
		}
	}
	m := 0
	for _, x := range h {
		if (uint32(x>>32)-lo)>>shift >= cut {
			h[m] = x
			m++
		}
	}
	return h[:m]
}

// peek is the next candidate's score; left must be > 0.
func (q *rowQueue) peek() float32 { return unpackRow(q.h[0]).s }

// pop takes the next candidate; left must be > 0.
func (q *rowQueue) pop() cand {
	x, n := q.h[0], len(q.h)-1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	siftDownMax(q.h, 0)
	q.left--
	return unpackRow(x)
}

func siftDownMax(h []uint64, i int) {
	n := len(h)
	for {
		m, l := i, 2*i+1
		if l < n && h[l] > h[m] {
			m = l
		}
		if l+1 < n && h[l+1] > h[m] {
			m = l + 1
		}
		if m == i {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
