//go:build !amd64 || purego

package vecindex

// bitScan is bitScanGeneric where there is no assembly kernel.
func bitScan(codes []uint64, words int, planes []uint64, out []uint64) {
	bitScanGeneric(codes, words, planes, out)
}
