package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Packed row candidates order exactly as worse orders candidates, unpack
// to what was packed, and the row heaps keep what topk keeps, in its order,
// as does a queue of every candidate: scores of both signs, zeros of both
// signs, many ties.
func TestRowTopkMatchesTopk(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	score := func() float32 {
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return float32(math.Copysign(0, -1))
		case 2:
			return float32(rng.IntN(5)) / 4 // ties
		default:
			return float32(rng.NormFloat64())
		}
	}
	for range 2000 {
		a, b := cand{score(), int64(rng.IntN(1 << 20))}, cand{score(), int64(rng.IntN(1 << 20))}
		pa, pb := packRow(a.s, int32(a.id)), packRow(b.s, int32(b.id))
		if worse(a, b) != (pa < pb) {
			t.Fatalf("%v vs %v: worse %v, packed %v", a, b, worse(a, b), pa < pb)
		}
		if u := unpackRow(pa); u.id != a.id || u.s != a.s {
			t.Fatalf("unpack(pack(%v)) = %v", a, u)
		}
	}
	for _, k := range []int{1, 5, 64, 1000} {
		tops, rows := make([]topk, 3), make([]rowTopk, 3)
		for w := range tops {
			tops[w], rows[w] = newTopk(k), newRowTopk(k)
		}
		var all []uint64
		for i := range 5000 {
			w, s := rng.IntN(3), score()
			tops[w].push(cand{s, int64(i)})
			rows[w].push(s, int32(i))
			all = append(all, packRow(s, int32(i)))
		}
		want, got := best(tops, k), bestRows(rows, k)
		if !slices.Equal(got, want) {
			t.Fatalf("k=%d: row heaps keep %v…, topk %v…", k, got[:min(5, len(got))], want[:min(5, len(want))])
		}
		// A queue of every candidate hands out the same k, in order.
		q := newRowQueue(all, k)
		var popped []cand
		for q.left > 0 {
			s := q.peek()
			c := q.pop()
			if c.s != s {
				t.Fatalf("peek %v, pop %v", s, c)
			}
			popped = append(popped, c)
		}
		if !slices.Equal(popped, want) {
			t.Fatalf("k=%d: the queue hands out %v…, topk keeps %v…", k, popped[:min(5, len(popped))], want[:min(5, len(want))])
		}
	}
}

// The queue's preselection keeps every candidate that can be handed out:
// with all scores equal, the smallest rows come first.
func TestRowQueueEqualScores(t *testing.T) {
	var all []uint64
	for r := range 1000 {
		all = append(all, packRow(0.5, int32(999-r)))
	}
	q := newRowQueue(all, 10)
	for want := range int64(10) {
		if c := q.pop(); c.id != want || c.s != 0.5 {
			t.Fatalf("pop %d: %v", want, c)
		}
	}
	if q.left != 0 {
		t.Fatalf("%d left after the limit", q.left)
	}
}
