package vecindex

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
)

// The rotation is orthogonal: it keeps lengths and inner products, at
// dimensions that are and are not powers of two.
func TestRotationIsOrthogonal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, dim := range []int{1, 3, 8, 100, 384, 1024} {
		r := newRotation(dim)
		if r.d < dim || r.d&(r.d-1) != 0 || r.d >= 2*max(dim, 1) && dim > 1 {
			t.Fatalf("dim %d: rotation of %d", dim, r.d)
		}
		for range 20 {
			a, b := make([]float32, r.d), make([]float32, r.d)
			copy(a, randVec(rng, dim))
			copy(b, randVec(rng, dim))
			ab, aa := dot64(a, b), dot64(a, a)
			r.apply(a)
			r.apply(b)
			if got := dot64(a, b); math.Abs(got-ab) > 1e-4*max(1, math.Abs(ab)) {
				t.Fatalf("dim %d: ⟨a,b⟩ %v rotated, %v before", dim, got, ab)
			}
			if got := dot64(a, a); math.Abs(got-aa) > 1e-4*aa {
				t.Fatalf("dim %d: ‖a‖² %v rotated, %v before", dim, got, aa)
			}
		}
	}
}

func dot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// The bit-code estimate of ⟨v−c, q⟩ is unbiased and its error shrinks
// like 1/√d: over many random pairs, the mean error is near zero and the
// root-mean-square error within a small multiple of ‖v−c‖/√d. A zero
// offset (v on its centroid) scores exactly the centroid.
func TestBitEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, dim := range []int{64, 256, 1024} {
		r := newRotation(dim)
		code := make([]int8, codeWidth(dim, CodesBits))
		buf := make([]float32, r.d)
		var sum, sq, norm float64
		const pairs = 400
		for range pairs {
			v, c, q := unit(randVec(rng, dim)), unit(randVec(rng, dim)), unit(randVec(rng, dim))
			// Near the centroid, as a cluster's members are.
			for i := range c {
				c[i] = 0.7*v[i] + 0.3*c[i]
			}
			f := r.encodeBits(code, v, c, buf)
			bq := r.prepare(q)
			o := make([]float32, dim)
			for i := range o {
				o[i] = v[i] - c[i]
			}
			want := dot64(o, q)
			e := float64(estimateOne(&bq, code, f)) - want
			sum += e
			sq += e * e
			norm += math.Sqrt(dot64(o, o))
		}
		mean, rms, on := sum/pairs, math.Sqrt(sq/pairs), norm/pairs
		t.Logf("dim %d: mean error %.5f, rms %.5f, mean ‖o‖ %.3f", dim, mean, rms, on)
		bound := 1.5 * on / math.Sqrt(float64(dim))
		if rms > bound || math.Abs(mean) > bound/4 {
			t.Errorf("dim %d: rms error %.5f, mean %.5f, bound %.5f", dim, rms, mean, bound)
		}
		v := unit(randVec(rng, dim))
		f := r.encodeBits(code, v, v, buf)
		if bq := r.prepare(v); f != 0 || estimateOne(&bq, code, f) != 0 {
			t.Errorf("dim %d: a vector on its centroid has factor %v", dim, f)
		}
	}
}

// estimateOne is the search's estimate of ⟨o, q⟩ for one code: its scan,
// then the estimator.
func estimateOne(bq *bitQuery, code []int8, f float32) float32 {
	w := words(code)
	var out [1]uint64
	bitScan(w, len(w), bq.planes, out[:])
	return bq.estimate(out[0], f)
}

func unit(v []float32) []float32 {
	n := float32(math.Sqrt(dot64(v, v)))
	for i := range v {
		v[i] /= n
	}
	return v
}

// The query's bit planes hold its signed 4-bit quantisation: summed back
// they give every coordinate within half a step.
func TestBitQueryPlanes(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	dim := 200
	r := newRotation(dim)
	q := randVec(rng, dim)
	bq := r.prepare(q)
	x := make([]float32, r.d)
	copy(x, q)
	r.apply(x)
	var sum float32
	for i, v := range x {
		u := 0
		for j := range 4 {
			u |= int(bq.planes[4*(i>>6)+j]>>(i&63)&1) << j
		}
		u = int(int8(u<<4) >> 4) // the nibble's two's complement: −8..7
		got := bq.delta * float32(u)
		sum += got
		if math.Abs(float64(got-v)) > float64(bq.delta)/2+1e-6 {
			t.Fatalf("coordinate %d: %v quantised to %v (step %v)", i, v, got, bq.delta)
		}
	}
	if math.Abs(float64(sum-bq.sum)) > 1e-3 {
		t.Fatalf("sum %v, kept %v", sum, bq.sum)
	}
}

// The scan kernel (assembly where there is one) gives the reference's
// results for every row, at word counts from 1 to 64 (dimensions up to
// 4096), including all-ones codes (the largest sums).
func TestBitScanKernel(t *testing.T) { checkBitScan(t) }

// checkBitScan holds bitScan, whichever kernel it runs, to the reference.
func checkBitScan(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(10, 10))
	for _, w := range []int{1, 2, 3, 6, 7, 8, 9, 12, 16, 17, 24, 64, 65} {
		for _, rows := range []int{1, 3, 4, 5, 8, 37} {
			checkBitScanRows(t, rng, w, rows)
		}
	}
	bitScan(nil, 4, make([]uint64, 16), nil) // no rows: nothing read
}

// checkBitScanRows checks rows random codes of w words: AVX-512 scans rows
// four at a time and the rest one by one.
func checkBitScanRows(t *testing.T, rng *rand.Rand, w, rows int) {
	t.Helper()
	codes, planes := randomWords(rng, rows*w), randomWords(rng, 4*w)
	for i := range w {
		codes[i] = ^uint64(0) // row 0: every bit set
		planes[4*i+3] = ^uint64(0)
	}
	got := scanMatches(t, codes, w, planes)
	// Row 0 has every bit set and plane 3 is all ones: the sum is at most
	// −64 a word (7·64 − 8·64), checked without the reference.
	var all int64
	for i := range w {
		all += int64(bits.OnesCount64(planes[4*i]) + 2*bits.OnesCount64(planes[4*i+1]) + 4*bits.OnesCount64(planes[4*i+2]) - 8*64)
	}
	if int64(got[0]) != all || all > int64(-64*w) {
		t.Fatalf("%d words: all-ones code sums %d, want %d", w, int64(got[0]), all)
	}
}

// randomWords is n random words.
func randomWords(rng *rand.Rand, n int) []uint64 {
	xs := make([]uint64, n)
	for i := range xs {
		xs[i] = rng.Uint64()
	}
	return xs
}

// scanMatches scans codes (rows of w words) with bitScan and with the
// reference, fails at the first row where they differ, and returns the
// scan.
func scanMatches(t *testing.T, codes []uint64, w int, planes []uint64) []uint64 {
	t.Helper()
	rows := len(codes) / w
	got, want := make([]uint64, rows), make([]uint64, rows)
	bitScan(codes, w, planes, got)
	bitScanGeneric(codes, w, planes, want)
	for r := range rows {
		if got[r] != want[r] {
			t.Fatalf("%d words, %d rows, row %d: %#x, want %#x", w, rows, r, got[r], want[r])
		}
	}
	return got
}

// SearchAbove answers exactly the hits of Search at or above the bound,
// with either kind of codes, and finds a row's own near-duplicate.
func TestSearchAbove(t *testing.T) {
	for _, codes := range []Codes{CodesBits, CodesInt8} {
		ix := New(128, Options{Mode: IVF, Codes: codes})
		qs, err := FillClustered(ix, 8000, 50, 12, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		ix.Build()
		for _, q := range qs {
			all := ix.SearchProbes(q, 10, nil, 3)
			if len(all) < 5 {
				t.Fatalf("codes %v: %d hits", codes, len(all))
			}
			bound := all[4].Sim
			var want []Hit
			for _, h := range all {
				if h.Sim >= bound {
					want = append(want, h)
				}
			}
			got := ix.SearchAbove(q, 10, nil, 3, bound)
			if len(got) != len(want) {
				t.Fatalf("codes %v: above %v: %v, want %v", codes, bound, got, want)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("codes %v: above %v: %v, want %v", codes, bound, got, want)
				}
			}
			if got := ix.SearchAbove(q, 10, nil, 3, 1.01); len(got) != 0 {
				t.Fatalf("codes %v: hits above 1.01: %v", codes, got)
			}
		}
		v, _ := ix.Vector(17)
		if got := ix.SearchAbove(v, 1, nil, 3, 0.99); len(got) != 1 || got[0].Key != 17 {
			t.Fatalf("codes %v: a row's own duplicate: %v", codes, got)
		}
	}
}
