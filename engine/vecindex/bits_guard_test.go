//go:build linux && amd64 && !purego

package vecindex

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// The AVX-512 scan loads whole 64-byte blocks without a mask, so it must
// stop short of the rows whose blocks would reach past the codes: codes
// placed to end where an inaccessible page starts are scanned, at every
// width and row count, without a fault and as the reference scans them.
func TestBitScanStopsAtTheEnd(t *testing.T) {
	if !hasVPOPCNTQ {
		t.Skip("no AVX-512 VPOPCNTQ")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	all := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), page/8)
	rng := rand.New(rand.NewPCG(3, 3))
	for _, w := range []int{1, 2, 6, 7, 8, 9, 12, 15, 16} {
		for _, rows := range []int{1, 2, 4, 5, 8, 9, 13} {
			codes := all[len(all)-rows*w:]
			copy(codes, randomWords(rng, rows*w))
			scanMatches(t, codes, w, randomWords(rng, 4*w))
		}
	}
}
