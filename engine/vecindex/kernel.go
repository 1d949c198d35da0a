package vecindex

import "math"

// dotGeneric is the portable float32 inner product, and the reference the
// assembly kernel is tested against. Go does not vectorise and amd64 has 15
// usable XMM registers, so eight accumulators would spill one to the stack and
// serialise on it; four accumulators each fed a pair of products keep the add
// chains independent without spilling.
func dotGeneric(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x := a[i : i+8 : i+8]
		y := b[i : i+8 : i+8]
		s0 += x[0]*y[0] + x[4]*y[4]
		s1 += x[1]*y[1] + x[5]*y[5]
		s2 += x[2]*y[2] + x[6]*y[6]
		s3 += x[3]*y[3] + x[7]*y[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot8Generic is the inner product of an int8 code with a query quantised
// to the same ±127 range, and the reference the assembly kernel is tested
// against; |result| ≤ 127²·len fits int32 for any realistic dimension. The
// query is widened to int16 ahead of time: Go compiles an int8×int8 product
// into several address computations per element, while a sign-extending
// load of each operand and one multiply is what the wider type gives.
func dot8Generic(c []int8, q []int16) int32 {
	q = q[:len(c)]
	var s0, s1 int32
	i := 0
	for ; i+8 <= len(c); i += 8 {
		x := c[i : i+8 : i+8]
		y := q[i : i+8 : i+8]
		s0 += int32(x[0])*int32(y[0]) + int32(x[1])*int32(y[1]) + int32(x[2])*int32(y[2]) + int32(x[3])*int32(y[3])
		s1 += int32(x[4])*int32(y[4]) + int32(x[5])*int32(y[5]) + int32(x[6])*int32(y[6]) + int32(x[7])*int32(y[7])
	}
	for ; i < len(c); i++ {
		s0 += int32(c[i]) * int32(q[i])
	}
	return s0 + s1
}

// sumGeneric is the portable sum, the trivial reduction the benchmark uses to
// measure how fast memory alone can stream the matrix.
func sumGeneric(a []float32) float32 {
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		x := a[i : i+8 : i+8]
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
		s4 += x[4]
		s5 += x[5]
		s6 += x[6]
		s7 += x[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// quantize writes v ≈ scale·code into code and returns scale; per-vector
// scaling (scale = max|v_i|/127) uses the full int8 range for every vector.
func quantize(code []int8, v []float32) float32 {
	m := maxAbs(v)
	if m == 0 {
		clear(code)
		return 0
	}
	inv := 127 / m
	code = code[:len(v)]
	for i, x := range v {
		code[i] = int8(roundInt(x * inv))
	}
	return m / 127
}

// quantizeQuery is quantize for a query, widened to int16 for dot8. The
// query's scale is common to every candidate, so it is not needed for ranking.
func quantizeQuery(q []float32) []int16 {
	out := make([]int16, len(q))
	m := maxAbs(q)
	if m == 0 {
		return out
	}
	inv := 127 / m
	for i, x := range q {
		out[i] = int16(roundInt(x * inv))
	}
	return out
}

// maxAbs is max |v_i|, with a plain comparison: the builtin max must handle
// NaN, which costs extra work per element, and v is finite.
func maxAbs(v []float32) float32 {
	var m float32
	for _, x := range v {
		if a := math.Float32frombits(math.Float32bits(x) &^ (1 << 31)); a > m {
			m = a
		}
	}
	return m
}

// roundInt rounds half away from zero by adding ±0.5 with x's sign and
// truncating; taking the sign by bit copy instead of a branch matters because
// vector components' signs are random and a branch on them mispredicts.
func roundInt(x float32) int32 {
	return int32(x + math.Float32frombits(math.Float32bits(0.5)|math.Float32bits(x)&(1<<31)))
}

// Cosine is the cosine similarity of a and b: 0 when either is zero, their
// lengths differ or a component is not finite. It accumulates in float64 so
// it neither overflows nor needs normalised input.
func Cosine(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var ab, aa, bb float64
	for i, x := range a {
		y := float64(b[i])
		ab += float64(x) * y
		aa += float64(x) * float64(x)
		bb += y * y
	}
	c := ab / math.Sqrt(aa*bb)
	if math.IsNaN(c) || math.IsInf(aa, 0) || math.IsInf(bb, 0) {
		return 0
	}
	return float32(max(-1, min(1, c)))
}
