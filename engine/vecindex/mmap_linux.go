//go:build linux

package vecindex

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// canMap: segments are memory-mapped on Linux.
const canMap = true

// region is a mapping made by mapFile, unmapped by Close.
type region struct {
	base unsafe.Pointer
	size uintptr
}

// mapFile maps length bytes of f from off (a multiple of the page size)
// privately, followed by spare bytes of anonymous memory, as one range:
// reads come from the page cache, a write copies the page it touches
// (the file never changes), and rows appended into the spare bytes need
// no copy of the rest. The spare part is address space only until used.
// populate reads the file's pages in at once; random tells the kernel
// not to read ahead (the int8 mode touches few rows at a time).
func mapFile(f *os.File, off int64, length, spare int, populate, random bool) ([]byte, region, error) {
	page := os.Getpagesize()
	total := (length + spare + page - 1) / page * page
	if total == 0 {
		return nil, region{}, nil
	}
	base, err := unix.MmapPtr(-1, 0, nil, uintptr(total), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, region{}, fmt.Errorf("reserve %d bytes: %w", total, err)
	}
	r := region{base, uintptr(total)}
	if length > 0 {
		if _, err := unix.MmapPtr(int(f.Fd()), off, base, uintptr(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			r.unmap()
			return nil, region{}, fmt.Errorf("map %d bytes at %d: %w", length, off, err)
		}
	}
	b := unsafe.Slice((*byte)(base), total)
	switch {
	case populate && length > 0:
		// Read in as the page cache's pages, shared and not copied:
		// MAP_POPULATE on a writable private mapping would copy every
		// page into anonymous memory. A kernel before 5.14 refuses it,
		// and the pages then come in on first use.
		_ = unix.Madvise(b[:length], unix.MADV_POPULATE_READ)
	case random && length > 0:
		_ = unix.Madvise(b[:length], unix.MADV_RANDOM)
	}
	return b, r, nil
}

func (r region) unmap() {
	if r.base != nil {
		_ = unix.MunmapPtr(r.base, r.size)
	}
}

// release asks the kernel to reclaim the pages of b now. A page read from
// the file and never written is dropped (the next read fetches it again);
// one written since is anonymous memory and stays, as there is nowhere to
// put it without swap. Nothing is lost either way.
func release(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_PAGEOUT)
	}
}

// dupFile duplicates f's descriptor, to read it after the caller closes f.
func dupFile(f *os.File) (*os.File, error) {
	fd, err := unix.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()), nil
}
