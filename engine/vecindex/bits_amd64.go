//go:build amd64 && !purego

package vecindex

// hasPOPCNT reports the POPCNT instruction (every x86-64 CPU since 2008).
var hasPOPCNT = func() bool {
	_, _, c, _ := cpuid(1, 0)
	return c&(1<<23) != 0
}()

// bitScan writes, for each of the rows bit codes of words words in codes,
// popcount(code)<<32 | Σj 2^j·popcount(code & plane j) to out.
func bitScan(codes []uint64, words int, planes []uint64, out []uint64) {
	rows := len(out)
	if rows == 0 {
		return
	}
	_ = codes[rows*words-1]
	_ = planes[4*words-1]
	if hasPOPCNT {
		bitScanPOPCNT(&codes[0], rows, words, &planes[0], &out[0])
		return
	}
	bitScanGeneric(codes, words, planes, out)
}

//go:noescape
func bitScanPOPCNT(codes *uint64, rows, words int, planes *uint64, out *uint64)
