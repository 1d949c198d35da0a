package vecindex

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"unsafe"
)

// Codes selects the compressed copy of each vector an IVF index probes
// clusters with before re-scoring its best candidates exactly.
type Codes int

const (
	// CodesAuto is CodesBits when the index keeps its float32 vectors in
	// RAM (Memory Float32) and has at least bitsMinDim dimensions,
	// CodesInt8 otherwise.
	CodesAuto Codes = iota
	// CodesInt8 is one byte per dimension (v ≈ scale·code): 0.25× the
	// vectors, close enough that few candidates need re-scoring. The Int8
	// memory mode uses it, since it re-scores from the file.
	CodesInt8
	// CodesBits is one bit per dimension of the vector's offset from its
	// cluster's centroid, after a fixed random rotation (an estimator in
	// the manner of RaBitQ): 1/32 of the vectors, so the float32 mode
	// stays within 1.1× the vectors' bytes at a million rows. Its scores
	// are rougher, so more candidates are re-scored, from the float32
	// rows in RAM.
	CodesBits
)

func (c Codes) String() string {
	switch c {
	case CodesAuto:
		return "auto"
	case CodesInt8:
		return "int8"
	case CodesBits:
		return "bits"
	}
	return fmt.Sprintf("Codes(%d)", int(c))
}

// bitsMinDim is the fewest dimensions CodesAuto gives bit codes: the
// estimate's error shrinks like 1/√d, and below this it ranks too roughly
// (recall@10 0.90 at 16 dimensions with the default re-scoring), while
// int8 codes of so few dimensions cost little memory anyway.
const bitsMinDim = 128

// rotation is a fixed pseudo-random orthogonal transform of R^d, d the
// dimension rounded up to a power of two: rounds of random sign flips, each
// followed by a Walsh–Hadamard transform. It spreads a vector's energy
// evenly over the coordinates, which is what makes one bit per coordinate
// an unbiased sketch of any direction. It costs d·log₂d additions per round
// (2·10k at 1024), against the d² multiply-adds of a dense rotation.
type rotation struct {
	d     int
	signs [rotRounds][]float32 // ±1/√d: the round's flips with the transform's scale folded in
}

const (
	rotRounds = 2
	// rotSeed fixes the rotation: segments store codes made with it, so
	// changing it (or rotRounds) needs a new segmentVersion.
	rotSeed = 0x636c61776d656d
)

func newRotation(dim int) *rotation {
	d := ceilPow2(dim)
	r := &rotation{d: d}
	rng := rand.New(rand.NewPCG(rotSeed, uint64(d)))
	s := float32(1 / math.Sqrt(float64(d)))
	for k := range r.signs {
		r.signs[k] = make([]float32, d)
		for i := range d {
			if rng.Uint64()&1 == 0 {
				r.signs[k][i] = s
			} else {
				r.signs[k][i] = -s
			}
		}
	}
	return r
}

// ceilPow2 is the least power of two ≥ n.
func ceilPow2(n int) int {
	d := 1
	for d < n {
		d <<= 1
	}
	return d
}

// apply rotates x (length d) in place.
func (r *rotation) apply(x []float32) {
	x = x[:r.d]
	for _, s := range r.signs {
		for i := range x {
			x[i] *= s[i]
		}
		fwht(x)
	}
}

// fwht is the unnormalised fast Walsh–Hadamard transform of x, whose length
// is a power of two.
func fwht(x []float32) {
	n := len(x)
	for h := 1; h < n; h <<= 1 {
		for i := 0; i < n; i += 2 * h {
			a, b := x[i:i+h:i+h], x[i+h:i+2*h:i+2*h]
			for j := range a {
				u, v := a[j], b[j]
				a[j], b[j] = u+v, u-v
			}
		}
	}
}

// bitWords is the number of 64-bit words in a bit code of d coordinates.
func bitWords(d int) int { return (d + 63) / 64 }

// words views a code's bytes as the little-endian words of a bit code.
// Codes start 8-aligned (heap arrays and page-aligned mappings, at a
// multiple of 8 bytes per row).
func words(code []int8) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(code))), len(code)/8)
}

// encodeBits writes the bit code of unit vector v in the cluster whose
// centroid is cent into code, and returns its factor ‖o‖²/‖o‖₁, o the
// rotated offset v−cent: the estimator of ⟨o, q⟩ is factor·Σ sign(oᵢ)·qᵢ
// (see bitQuery). buf is scratch of at least d floats.
func (r *rotation) encodeBits(code []int8, v, cent, buf []float32) float32 {
	o := buf[:r.d]
	for i := range v {
		o[i] = v[i] - cent[i]
	}
	clear(o[len(v):])
	r.apply(o)
	w := words(code)
	clear(w)
	var l1, l2 float64
	for i, x := range o {
		if x > 0 {
			w[i>>6] |= 1 << (i & 63)
		}
		l1 += math.Abs(float64(x))
		l2 += float64(x) * float64(x)
	}
	if l1 == 0 {
		return 0
	}
	return float32(l2 / l1)
}

// bitQuery is a query prepared for scoring bit codes: rotated, quantised
// to 4-bit signed integers (qᵢ ≈ delta·uᵢ, uᵢ in −8..7) and split into the
// four bit planes of uᵢ's two's complement, so Σ over a code's set bits of
// qᵢ is delta·(Σⱼ₌₀..₂ 2ʲ·popcount(b & planeⱼ) − 8·popcount(b & plane₃)).
// With no offset in the quantisation the scan need not count the code's
// own bits: a fifth of its popcounts. The planes are interleaved by word
// (planes[4i+j] is word i of plane j), so a scan reads them in one stream.
type bitQuery struct {
	planes []uint64
	delta  float32
	sum    float32 // Σ qᵢ as quantised
}

func (r *rotation) prepare(q []float32) bitQuery {
	x := make([]float32, r.d)
	copy(x, q)
	r.apply(x)
	var lo, hi float32
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	// The step that fits every coordinate in −8..7 steps: rounding then
	// moves none by more than half a step.
	b := bitQuery{planes: make([]uint64, 4*bitWords(r.d)), delta: max(-lo/8, hi/7)}
	var usum int
	for i, v := range x {
		u := 0
		if b.delta > 0 {
			u = int(min(7, max(-8, roundInt(v/b.delta))))
		}
		usum += u
		for j := range 4 {
			if u>>j&1 != 0 {
				b.planes[4*(i>>6)+j] |= 1 << (i & 63)
			}
		}
	}
	b.sum = b.delta * float32(usum)
	return b
}

// estimate turns a code's scan result (Σ over its set bits of uᵢ, as an
// int64's bits) and factor f into the estimate of ⟨o, q⟩:
// f·(2·Σ_set qᵢ − Σ qᵢ).
func (b *bitQuery) estimate(scan uint64, f float32) float32 {
	set := b.delta * float32(int64(scan))
	return f * (2*set - b.sum)
}

// bitScanGeneric is the portable bitScan, and the reference the assembly
// kernel is tested against.
func bitScanGeneric(codes []uint64, words int, planes []uint64, out []uint64) {
	planes = planes[:4*words]
	for r := range out {
		c := codes[r*words : (r+1)*words : (r+1)*words]
		var s int
		for i, x := range c {
			p := planes[4*i : 4*i+4 : 4*i+4]
			s += bits.OnesCount64(x&p[0]) + 2*bits.OnesCount64(x&p[1]) + 4*bits.OnesCount64(x&p[2]) - 8*bits.OnesCount64(x&p[3])
		}
		out[r] = uint64(int64(s))
	}
}
