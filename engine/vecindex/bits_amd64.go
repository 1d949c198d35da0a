//go:build amd64 && !purego

package vecindex

// hasPOPCNT reports the POPCNT instruction (every x86-64 CPU since 2008).
var hasPOPCNT = func() bool {
	_, _, c, _ := cpuid(1, 0)
	return c&(1<<23) != 0
}()

// hasVPOPCNTQ reports AVX-512 with VPOPCNTQ (Ice Lake, Zen 4 and later) and
// ZMM state saved by the OS. It counts eight words per instruction: a
// 1,024-bit code's scan takes about 50 instructions where POPCNT takes
// over 300, and at a million rows the scan is the largest part of a recall.
var hasVPOPCNTQ = detectVPOPCNTQ()

func detectVPOPCNTQ() bool {
	if a, _, _, _ := cpuid(0, 0); a < 7 {
		return false
	}
	if _, _, c, _ := cpuid(1, 0); c&(1<<27) == 0 { // OSXSAVE: xgetbv is allowed
		return false
	}
	_, b, c, _ := cpuid(7, 0)
	const avx512f, vpopcntdq = 1 << 16, 1 << 14
	// XCR0: the OS saves XMM, YMM, the opmask registers and all of ZMM.
	const zmmState = 0b1110_0110
	return b&avx512f != 0 && c&vpopcntdq != 0 && xgetbv0()&zmmState == zmmState
}

// scanFours lets the AVX-512 scan take codes of up to 16 words four rows
// at a time (bitScanVPOPCNTQ4); tests and benchmarks turn it off to hold
// the one-row kernel alone to the reference.
var scanFours = true

// maxVecWords is the widest code the AVX-512 kernel takes (4,096 bits): its
// planes are laid out in a buffer on the stack.
const maxVecWords = 64

// bitScan writes, for each of the rows bit codes of words words in codes,
// Σj<3 2^j·popcount(code & plane j) − 8·popcount(code & plane 3) to out,
// an int64's bits.
func bitScan(codes []uint64, words int, planes []uint64, out []uint64) {
	rows := len(out)
	if rows == 0 {
		return
	}
	_ = codes[rows*words-1]
	_ = planes[4*words-1]
	switch {
	case hasVPOPCNTQ && words <= maxVecWords:
		// The kernel reads each plane as a run of whole 8-word blocks:
		// plane j at pl[j*stride:], zero past its words.
		var pl [4 * maxVecWords]uint64
		stride := (words + 7) &^ 7
		for i := range words {
			for j := range 4 {
				pl[j*stride+i] = planes[4*i+j]
			}
		}
		done := 0
		if blocks := (words + 7) / 8; scanFours && blocks <= 2 {
			// Rows whose whole blocks end within codes: all but the last
			// one or two where a block reaches past the row's own words.
			safe := 0
			if rows*words >= 8*blocks {
				safe = min(rows, (rows*words-8*blocks)/words+1)
			}
			if groups := safe / 4; groups > 0 {
				bitScanVPOPCNTQ4(&codes[0], groups, words, blocks, &pl[0], stride*8, &out[0])
				done = 4 * groups
			}
		}
		if done < rows {
			tail := words % 8
			bitScanVPOPCNTQ(&codes[done*words], rows-done, words/8, uint64(1)<<tail-1, tail*8, &pl[0], stride*8, &out[done])
		}
	case hasPOPCNT:
		bitScanPOPCNT(&codes[0], rows, words, &planes[0], &out[0])
	default:
		bitScanGeneric(codes, words, planes, out)
	}
}

//go:noescape
func bitScanPOPCNT(codes *uint64, rows, words int, planes *uint64, out *uint64)

// bitScanVPOPCNTQ scans rows codes of blocks whole 8-word blocks and then
// tailBytes/8 words (mask (1<<tail)-1 selects them); plane j's words start
// at planes + j·strideBytes.
//
//go:noescape
func bitScanVPOPCNTQ(codes *uint64, rows, blocks int, mask uint64, tailBytes int, planes *uint64, strideBytes int, out *uint64)

// bitScanVPOPCNTQ4 is bitScanVPOPCNTQ for groups·4 rows of codes of at
// most 16 words, each read as blocks whole 8-word blocks, which must lie
// within codes.
//
//go:noescape
func bitScanVPOPCNTQ4(codes *uint64, groups, words, blocks int, planes *uint64, strideBytes int, out *uint64)
