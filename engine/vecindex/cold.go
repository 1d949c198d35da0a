package vecindex

import (
	"os"
	"unsafe"
)

// coldRows is the int8 mode's view of the vectors left in the segment
// file. Re-scoring a candidate reads its row from the file (the page
// cache) rather than through the mapping: a read through the mapping
// would map the row's page into this process, and the kernel maps the
// pages around it too, so after a few hundred searches most of the
// vectors would count as this process's memory again. A row written
// since the mapping was made is dirty, and read from the mapping, where
// the write went.
type coldRows struct {
	file   *os.File // a duplicate of the segment's descriptor; nil: not int8, or not mapped
	off    int64    // where the vectors start in it
	rows   int      // rows the file holds
	mask   []uint64 // rows written since: bit r
	mapped []byte   // the mapping of those rows, handed back after a training
}

func (c *coldRows) dirty(r int32) {
	if int(r) < c.rows {
		c.mask[r/64] |= 1 << (r % 64)
	}
}

func (c *coldRows) close() {
	if c.file != nil {
		c.file.Close()
	}
}

// rescoreRow is row r's vector for re-scoring: read from the file into
// buf when it is a clean cold row, else the row in memory. Callers hold
// mu for reading.
func (ix *Index) rescoreRow(r int32, buf []float32) []float32 {
	c := &ix.cold
	if c.file == nil || int(r) >= c.rows || c.mask[r/64]&(1<<(r%64)) != 0 || !littleEndian {
		return ix.row(r)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), 4*len(buf))
	if _, err := c.file.ReadAt(b, c.off+int64(r)*int64(4*ix.dim)); err != nil {
		return ix.row(r) // the mapping has it too
	}
	return buf
}

// setCold makes the index read clean rows from f (vectors at off, rows of
// them) from now on, mapped at mapped; it takes f's duplicate.
func (ix *Index) setCold(f *os.File, off int64, rows int, mapped []byte) {
	ix.cold.close()
	ix.cold = coldRows{file: f, off: off, rows: rows, mask: make([]uint64, (rows+63)/64), mapped: mapped}
}
