package vecindex

import (
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The matrix's spare capacity is address space, not resident memory: an
// index grown by appends holds in RAM the rows it has (to a page), not
// the doubled room it reserved, and none of it on the Go heap.
func TestMatrixSpareNotResident(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dim, rows int
	}{
		// Rows just past a doubling: the room is about twice the rows.
		{"first mapping", 384, 1<<10 + 1},
		{"a doubling later", 384, 1<<12 + 1},
		{"many doublings", 256, 1<<14 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New(tc.dim, Options{})
			defer ix.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			for k := range tc.rows {
				if err := ix.Upsert(int64(k), 0, randVec(rng, tc.dim)); err != nil {
					t.Fatal(err)
				}
			}
			reg := ix.mem.vec
			if reg == (region{}) {
				t.Fatal("the matrix is not mapped")
			}
			page := os.Getpagesize()
			used := tc.rows * tc.dim * 4
			if int(reg.size) < 3*used/2 {
				t.Fatalf("the mapping holds %d bytes for %d used: no spare room to test", reg.size, used)
			}
			vec := make([]byte, (int(reg.size)+page-1)/page)
			if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(reg.base), reg.size, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
				t.Fatal(errno)
			}
			resident := 0
			for _, b := range vec {
				resident += int(b & 1)
			}
			if max := (used+page-1)/page + 1; resident > max {
				t.Fatalf("%d pages resident for %d bytes of rows (%d pages), mapping %d bytes", resident, used, max, reg.size)
			}
		})
	}
}
