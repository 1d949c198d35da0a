package vecindex

import (
	"cmp"
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
