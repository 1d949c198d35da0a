//go:build amd64 && !purego

package vecindex

// hasFMA reports AVX and FMA in the CPU and YMM state saved by the OS. With
// them the dot product is fast enough that an exact scan is bound by memory
// bandwidth; scalar Go code takes about as long as the memory traffic itself,
// so the scan would run ~1.7× slower and suffer more when cores are busy.
var hasFMA = detectFMA()

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

//go:noescape
func dotFMA(a, b []float32) float32

//go:noescape
func sumAVX(a []float32) float32

func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv0() uint64
