//go:build amd64 && !purego

package vecindex

// hasFMA reports AVX and FMA in the CPU and YMM state saved by the OS. With
// them the dot product is fast enough that an exact scan is bound by memory
// bandwidth; scalar Go code takes about as long as the memory traffic itself,
// so the scan would run ~1.7× slower and suffer more when cores are busy.
var hasFMA = detectFMA()

// hasAVX2 reports AVX2 as well, for the int8 kernel of IVF scans: widening
// and multiply-adding sixteen codes per instruction is about ten times the
// scalar loop, and IVF probes are compute-bound (the codes sit in cache).
var hasAVX2 = hasFMA && detectAVX2()

func detectAVX2() bool {
	if a, _, _, _ := cpuid(0, 0); a < 7 {
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0
}

func detectFMA() bool {
	_, _, c, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	const xmmYmm = 0b110 // XCR0: the OS saves XMM and YMM registers
	return xgetbv0()&xmmYmm == xmmYmm
}

// dot is the float32 inner product of a and b[:len(a)].
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	if hasFMA {
		return dotFMA(a, b)
	}
	return dotGeneric(a, b)
}

// sum adds up a. It is the memory-floor probe, so it uses the widest loads
// available: otherwise the floor would measure scalar code, not memory.
func sum(a []float32) float32 {
	if hasFMA {
		return sumAVX(a)
	}
	return sumGeneric(a)
}

// dot8 is the inner product of an int8 code and an int16 query
// (q[:len(c)]).
func dot8(c []int8, q []int16) int32 {
	q = q[:len(c)]
	if hasAVX2 {
		return dot8AVX2(c, q)
	}
	return dot8Generic(c, q)
}

//go:noescape
func dot8AVX2(c []int8, q []int16) int32

//go:noescape
func dotFMA(a, b []float32) float32

//go:noescape
func sumAVX(a []float32) float32

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv0() uint64
