package rules

import (
	"bytes"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// The trainers of the linear models (linear.go) live in test files so
// that they never ship in a binary; `go generate ./engine/rules` runs
// them.

// sparse is a text's distinct features as a sparse vector: buckets in
// order, each valued textNorm of their number, as linearModel.score
// counts them.
type sparse struct {
	idx []uint32
	val []float64
}

func toSparse(raw []uint32, mask uint32) sparse {
	var x sparse
	for _, f := range raw {
		x.idx = append(x.idx, f&mask)
	}
	slices.Sort(x.idx)
	x.idx = slices.Compact(x.idx)
	norm := float64(textNorm(len(x.idx)))
	x.val = make([]float64, len(x.idx))
	for i := range x.val {
		x.val[i] = norm
	}
	return x
}

// heldOutOf reports whether text is among the one in share texts, chosen
// by a hash of the text, kept out of training to pick thresholds and
// report validation figures.
func heldOutOf(text string, share uint64) bool {
	h := fnv.New64a()
	h.Write([]byte(text))
	return h.Sum64()%share == 0
}

// fitParams are a head's training parameters.
type fitParams struct {
	bits   uint32
	epochs int
	rate   float64 // the learning rate, divided by 1 + epoch/10
	l2     float64
	seed   uint64
}

// expDet is e^x from +, ×, ÷ and Ldexp only, each rounded on its own, so
// that training gives the same bits on every platform; math.Exp is
// implemented in assembly on some.
func expDet(x float64) float64 {
	x = max(-40, min(40, x))
	k := math.Round(x / math.Ln2)
	r := float64(x - float64(k*math.Ln2))
	term, sum := 1.0, 1.0
	for n := 1; n <= 14; n++ {
		term = float64(term*r) / float64(n)
		sum += term
	}
	return math.Ldexp(sum, int(k))
}

// fitHead fits a logistic regression of ys on xs by stochastic gradient
// descent over the examples in train, in an order fixed by the seed, and
// quantises it; the threshold is left to the caller.
func fitHead(xs []sparse, ys []bool, train []int, p fitParams) linearHead {
	size := 1 << p.bits
	w := make([]float64, size)
	var bias float64
	// The weights after each epoch of the second half are averaged: one
	// step's last few examples sway the final weights less.
	avg := make([]float64, size)
	var avgBias, averaged float64
	order := slices.Clone(train)
	rng := rand.New(rand.NewPCG(p.seed, p.seed))
	for epoch := range p.epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		rate := p.rate / float64(1+epoch/10)
		for _, i := range order {
			x := xs[i]
			z := bias
			for k, f := range x.idx {
				z += float64(w[f] * x.val[k])
			}
			y := 0.0
			if ys[i] {
				y = 1
			}
			g := 1/(1+expDet(-z)) - y
			for k, f := range x.idx {
				w[f] -= float64(rate * float64(float64(g*x.val[k])+float64(p.l2*w[f])))
			}
			bias -= float64(rate * g)
		}
		if epoch >= p.epochs/2 {
			for i, v := range w {
				avg[i] += v
			}
			avgBias += bias
			averaged++
		}
	}
	var top float64
	for i := range avg {
		avg[i] /= averaged
		top = max(top, math.Abs(avg[i]))
	}
	if top == 0 {
		top = 1
	}
	h := linearHead{weights: make([]int16, size), scale: float32(top / math.MaxInt16), bias: float32(avgBias / averaged)}
	for i, v := range avg {
		h.weights[i] = int16(math.Round(v / top * math.MaxInt16))
	}
	return h
}

// scoredLabel is a validation text's score and label.
type scoredLabel struct {
	score    float32
	positive bool
}

// pickThreshold is the lowest threshold at which a detector reaches
// target precision on the validation texts: tp and fp are what it finds
// without the head (rules sure on their own), rest the head's scores of
// the other texts. The threshold sits halfway to the next lower score,
// for a margin; none reached: +Inf's stand-in, math.MaxFloat32.
func pickThreshold(rest []scoredLabel, tp, fp int, target float64) float32 {
	slices.SortFunc(rest, func(a, b scoredLabel) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	best := -1
	for i, r := range rest {
		if r.positive {
			tp++
		} else {
			fp++
		}
		if i+1 < len(rest) && rest[i+1].score == r.score {
			continue
		}
		if float64(tp) >= target*float64(tp+fp) && tp > 0 {
			best = i
		}
	}
	if best < 0 {
		return math.MaxFloat32
	}
	if best+1 < len(rest) {
		return (rest[best].score + rest[best+1].score) / 2
	}
	return rest[best].score
}

// writeOrCompareModel writes m to path with update, and otherwise fails
// unless committed, the embedded file, is exactly m: the weights are the
// corpora's, not anyone's hand edits.
func writeOrCompareModel(t *testing.T, m *linearModel, magic, path string, committed []byte, update bool) {
	t.Helper()
	got := m.encode(magic)
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	} else if !bytes.Equal(got, committed) {
		t.Fatalf("%s differs from what its corpora train (%d bytes, want %d); run go generate ./engine/rules", path, len(committed), len(got))
	}
}
