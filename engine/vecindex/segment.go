package vecindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"unsafe"

	"github.com/clawmem/clawmem/internal/workpool"
)

// A segment is an index written whole to a file, so that opening a store
// maps its vectors (and its trained clustering) instead of decoding every
// row out of the database and training again:
//
//	header (56 bytes): magic "CLAWVSEG", version u32, dim u32, rows u64,
//	  epoch u64, nlist u32, trainedOn u64, extra length u32, codes u32
//	  (0 without clusters, else CodesInt8 or CodesBits), zero u32;
//	extra bytes (the caller's: the store's group names), keys rows×i64,
//	groups rows×u32, and with nlist > 0: centroids nlist×dim×f32, cluster
//	sizes nlist×u32, the rows of each cluster in turn rows×i32, and their
//	scales (or bit codes' factors) rows×f32; zero padding, then the CRC-32C
//	of all of it (u32), ending on a page boundary;
//	vectors rows×dim×f32 (unit length), and with nlist > 0 zero padding to
//	a page boundary and the codes in the clusters' order, rows×dim int8
//	or rows×8⌈d/64⌉ bytes of bits (d: dim rounded up to a power of two);
//	the CRC-32C of each 64 MiB chunk of the vectors (with their padding)
//	and of the codes, u32 each, and the CRC-32C of that table.
//
// Little-endian throughout. The vectors and codes start on page
// boundaries so they can be memory-mapped where they lie, and their
// chunks' checksums are verified in parallel. Every length follows from
// the header, and the file must be exactly as long as they say: a segment
// is never trusted blindly, any damage is ErrBadSegment.
const (
	segmentMagic   = "CLAWVSEG"
	segmentVersion = 3
	segHeader      = 56
	segPage        = 4096
	segChunk       = 64 << 20
)

// ErrBadSegment is a segment that is truncated, damaged, of another
// format, or not of this index's dimension.
var ErrBadSegment = errors.New("vecindex: bad segment")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: arrays are copied as memory on little-endian machines.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// segLayout is where everything lies in a segment of these sizes.
type segLayout struct {
	dim, rows, nlist, extra int64
	cw                      int64 // code bytes per row
	vecOff, vecEnd          int64 // the vectors and the padding after them
	codeOff, codeEnd        int64
	sumOff, size            int64
}

func alignPage(n int64) int64 { return (n + segPage - 1) / segPage * segPage }

func chunks(n int64) int64 { return (n + segChunk - 1) / segChunk }

func layoutOf(dim, rows, nlist, extra, cw int64) segLayout {
	l := segLayout{dim: dim, rows: rows, nlist: nlist, extra: extra, cw: cw}
	head := segHeader + extra + 12*rows
	if nlist > 0 {
		head += 4*nlist*dim + 4*nlist + 8*rows
	}
	l.vecOff = alignPage(head + 4)
	l.vecEnd = l.vecOff + 4*rows*dim
	l.codeOff, l.codeEnd = l.vecEnd, l.vecEnd
	if nlist > 0 {
		l.codeOff = alignPage(l.vecEnd)
		l.vecEnd, l.codeEnd = l.codeOff, l.codeOff+rows*cw
	}
	l.sumOff = l.codeEnd
	l.size = l.sumOff + 4*(chunks(l.vecEnd-l.vecOff)+chunks(l.codeEnd-l.codeOff)) + 4
	return l
}

// WriteSegment writes the index, the caller's epoch and extra bytes to w.
// Writes wait meanwhile; searches go on.
func (ix *Index) WriteSegment(w io.Writer, epoch uint64, extra []byte) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	iv := ix.ivf
	var nlist, trainedOn, cw int
	var codes Codes
	if iv != nil {
		nlist, trainedOn, cw, codes = iv.nlist, iv.trainedOn, iv.cw, iv.codes()
	}
	rows := len(ix.keys)
	l := layoutOf(int64(ix.dim), int64(rows), int64(nlist), int64(len(extra)), int64(cw))
	bw := bufio.NewWriterSize(w, 1<<20)
	h := crc32.New(castagnoli)
	hw := io.MultiWriter(bw, h)
	var head [segHeader]byte
	copy(head[:], segmentMagic)
	le := binary.LittleEndian
	le.PutUint32(head[8:], segmentVersion)
	le.PutUint32(head[12:], uint32(ix.dim))
	le.PutUint64(head[16:], uint64(rows))
	le.PutUint64(head[24:], epoch)
	le.PutUint32(head[32:], uint32(nlist))
	le.PutUint64(head[36:], uint64(trainedOn))
	le.PutUint32(head[44:], uint32(len(extra)))
	le.PutUint32(head[48:], uint32(codes))
	hw.Write(head[:])
	hw.Write(extra)
	writeSlice(hw, ix.keys)
	writeSlice(hw, ix.groups)
	if iv != nil {
		writeSlice(hw, iv.cent)
		sizes := make([]uint32, nlist)
		for c := range iv.clusters {
			sizes[c] = uint32(len(iv.clusters[c].rows))
		}
		writeSlice(hw, sizes)
		for c := range iv.clusters {
			writeSlice(hw, iv.clusters[c].rows)
		}
		for c := range iv.clusters {
			writeSlice(hw, iv.clusters[c].scales)
		}
	}
	written := segHeader + l.extra + 12*l.rows
	if iv != nil {
		written += 4*l.nlist*l.dim + 4*l.nlist + 8*l.rows
	}
	hw.Write(make([]byte, l.vecOff-4-written))
	var sum [4]byte
	le.PutUint32(sum[:], h.Sum32())
	bw.Write(sum[:])

	var table []uint32
	vs := &chunkSums{}
	vw := io.MultiWriter(bw, vs)
	writeSlice(vw, ix.data[:rows*ix.dim])
	vw.Write(make([]byte, l.vecEnd-l.vecOff-4*l.rows*l.dim))
	table = vs.done(table)
	if iv != nil {
		cs := &chunkSums{}
		cw := io.MultiWriter(bw, cs)
		for c := range iv.clusters {
			writeSlice(cw, iv.clusters[c].codes)
		}
		table = cs.done(table)
	}
	tb := make([]byte, 4*len(table)+4)
	for i, s := range table {
		le.PutUint32(tb[4*i:], s)
	}
	le.PutUint32(tb[4*len(table):], crc32.Checksum(tb[:4*len(table)], castagnoli))
	bw.Write(tb)
	return bw.Flush()
}

// chunkSums is a writer keeping the CRC-32C of each segChunk bytes.
type chunkSums struct {
	sums []uint32
	cur  uint32
	n    int
}

func (c *chunkSums) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		take := min(len(p), segChunk-c.n)
		c.cur = crc32.Update(c.cur, castagnoli, p[:take])
		c.n += take
		p = p[take:]
		if c.n == segChunk {
			c.sums, c.cur, c.n = append(c.sums, c.cur), 0, 0
		}
	}
	return total, nil
}

func (c *chunkSums) done(table []uint32) []uint32 {
	if c.n > 0 {
		c.sums = append(c.sums, c.cur)
	}
	return append(table, c.sums...)
}

// ReadSegment reads the segment in r (size bytes) into memory, as a new
// index with options o, and returns its epoch and extra bytes. See
// OpenSegment, which maps it instead where it can.
func ReadSegment(r io.ReaderAt, size int64, dim int, o Options) (*Index, uint64, []byte, error) {
	return readSegment(r, nil, size, dim, o)
}

// OpenSegment opens the segment in f as a new index with options o. On
// Linux its vectors and codes are memory-mapped privately: the open
// reads no vector into the heap, and a row written later costs a page of
// anonymous memory while the file stays as it was. In o.Memory Float32
// mode the pages are read in at once (the exact scan reads them all
// anyway); in Int8 mode only the codes are, and the vectors stay in the
// page cache, read when a candidate is re-scored. Close releases the
// mappings; f may be closed as soon as OpenSegment returns.
func OpenSegment(f *os.File, dim int, o Options) (*Index, uint64, []byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, 0, nil, err
	}
	if !canMap {
		return readSegment(f, nil, st.Size(), dim, o)
	}
	return readSegment(f, f, st.Size(), dim, o)
}

func readSegment(r io.ReaderAt, f *os.File, size int64, dim int, o Options) (ix *Index, epoch uint64, extra []byte, err error) {
	bad := func(format string, args ...any) (*Index, uint64, []byte, error) {
		if ix != nil {
			ix.Close()
		}
		return nil, 0, nil, fmt.Errorf("%w: %s", ErrBadSegment, fmt.Sprintf(format, args...))
	}
	head, l, err := readHeader(r, size, dim)
	if err != nil {
		return nil, 0, nil, err
	}
	le := binary.LittleEndian
	n, nlist, trainedOn := int(l.rows), int(l.nlist), le.Uint64(head[36:])
	epoch = le.Uint64(head[24:])
	if trainedOn > math.MaxInt32 {
		return bad("trained on %d rows", trainedOn)
	}
	meta := make([]byte, l.vecOff-segHeader)
	if _, err := r.ReadAt(meta, segHeader); err != nil {
		return bad("read: %v", err)
	}
	h := crc32.New(castagnoli)
	h.Write(head[:])
	h.Write(meta[:len(meta)-4])
	if h.Sum32() != le.Uint32(meta[len(meta)-4:]) {
		return bad("checksum mismatch in the header")
	}
	ix = New(dim, o)
	mb := bytes.NewReader(meta)
	extra = make([]byte, l.extra)
	ix.keys, ix.groups = make([]int64, n), make([]uint32, n)
	readFull(mb, extra)
	readSlice(mb, ix.keys)
	readSlice(mb, ix.groups)
	var cent, scales []float32
	var sizes []uint32
	var members []int32
	if nlist > 0 {
		cent, sizes, members, scales = make([]float32, nlist*dim), make([]uint32, nlist), make([]int32, n), make([]float32, n)
		readSlice(mb, cent)
		readSlice(mb, sizes)
		readSlice(mb, members)
		readSlice(mb, scales)
	}
	vsums, csums, err := readSums(r, l)
	if err != nil {
		ix.Close()
		return nil, 0, nil, err
	}
	// Codes of another kind (the memory mode changed) are left: the
	// caller sees an untrained index and trains it in the background.
	useIVF := nlist > 0 && ix.mode == IVF && Codes(le.Uint32(head[48:])) == ix.codes
	if f != nil {
		m, err := ix.mapVectors(f, l, vsums)
		if err != nil {
			if errors.Is(err, ErrBadSegment) {
				ix.Close()
				return nil, 0, nil, err
			}
			return bad("vectors: %v", err)
		}
		ix.useVectors(m, l)
	} else {
		vb, _, err := readOrMap(r, nil, l.vecOff, int(l.vecEnd-l.vecOff))
		if err != nil {
			return bad("vectors: %v", err)
		}
		if c := verifyBytes(vb, vsums, ix.workers); c >= 0 {
			return bad("checksum mismatch in the vectors' chunk %d", c)
		}
		if n > 0 {
			ix.data = unsafe.Slice((*float32)(unsafe.Pointer(&vb[0])), n*dim)
		}
	}
	var cb []byte
	if useIVF {
		var reg region
		if cb, reg, err = readOrMap(r, f, l.codeOff, int(l.codeEnd-l.codeOff)); err != nil {
			return bad("codes: %v", err)
		}
		ix.mem.other = append(ix.mem.other, reg)
		if c := verifyBytes(cb, csums, ix.workers); c >= 0 {
			return bad("checksum mismatch in the codes' chunk %d", c)
		}
	}
	ix.rowOf = make(map[int64]int32, n)
	for i, k := range ix.keys {
		if _, dup := ix.rowOf[k]; dup {
			return bad("key %d twice", k)
		}
		ix.rowOf[k] = int32(i)
		ix.groupN[ix.groups[i]]++
	}
	if useIVF {
		iv := &ivf{dim: dim, nlist: nlist, cent: cent, clusters: make([]cluster, nlist), where: make([]loc, n), trainedOn: int(trainedOn)}
		iv.setCodes(ix.codes)
		cw := iv.cw
		placed := make([]bool, n)
		codes := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(cb))), len(cb))
		at := 0
		for c, sz := range sizes {
			if uint64(sz) > uint64(n-at) {
				return bad("clusters hold more than %d rows", n)
			}
			end := at + int(sz)
			cl := &iv.clusters[c]
			cl.rows, cl.scales, cl.codes = members[at:end:end], scales[at:end:end], codes[at*cw:end*cw:end*cw]
			for pos, row := range cl.rows {
				if row < 0 || int(row) >= n || placed[row] {
					return bad("row %d in cluster %d", row, c)
				}
				placed[row] = true
				iv.where[row] = loc{cluster: int32(c), pos: int32(pos)}
			}
			at = end
		}
		if at != n {
			return bad("clusters hold %d of %d rows", at, n)
		}
		iv.setLimit()
		iv.setGroups(ix.groups)
		ix.ivf, ix.trained = iv, true
	}
	return ix, epoch, extra, nil
}

// readHeader reads and checks a segment's header: the magic, version and
// dimension, every count bounded before it is multiplied, and the file
// exactly as long as they make it (nothing is allocated beyond its size).
func readHeader(r io.ReaderAt, size int64, dim int) ([segHeader]byte, segLayout, error) {
	var head [segHeader]byte
	bad := func(format string, args ...any) ([segHeader]byte, segLayout, error) {
		return head, segLayout{}, fmt.Errorf("%w: %s", ErrBadSegment, fmt.Sprintf(format, args...))
	}
	if size < segHeader {
		return bad("%d bytes", size)
	}
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return bad("header: %v", err)
	}
	le := binary.LittleEndian
	if string(head[:8]) != segmentMagic {
		return bad("not a segment")
	}
	if v := le.Uint32(head[8:]); v != segmentVersion {
		return bad("format version %d, this clawmem reads %d", v, segmentVersion)
	}
	if d := le.Uint32(head[12:]); int(d) != dim {
		return bad("vectors of %d dimensions, the index has %d", d, dim)
	}
	rows, nlist, extraLen := le.Uint64(head[16:]), le.Uint32(head[32:]), le.Uint32(head[44:])
	if rows > math.MaxInt32 || nlist > 1<<24 || int64(extraLen) > size || dim > 1<<20 {
		return bad("%d rows, %d clusters and %d extra bytes cannot be", rows, nlist, extraLen)
	}
	codes, zero := Codes(le.Uint32(head[48:])), le.Uint32(head[52:])
	var cw int64
	switch {
	case zero != 0:
		return bad("reserved header field %#x", zero)
	case nlist == 0 && codes != 0:
		return bad("codes %d without clusters", codes)
	case nlist > 0 && codes != CodesInt8 && codes != CodesBits:
		return bad("unknown codes %d", codes)
	case nlist > 0:
		cw = int64(codeWidth(dim, codes))
	}
	l := layoutOf(int64(dim), int64(rows), int64(nlist), int64(extraLen), cw)
	if l.size != size {
		return bad("%d bytes, the header says %d", size, l.size)
	}
	return head, l, nil
}

// readOrMap brings length bytes of the segment from off into memory:
// mapped from f when it is given (read in at once), else read.
func readOrMap(r io.ReaderAt, f *os.File, off int64, length int) ([]byte, region, error) {
	if f != nil {
		b, reg, err := mapFile(f, off, length, 0, true, false)
		if err != nil {
			return nil, region{}, err
		}
		return b[:length], reg, nil
	}
	// Read in pieces: one read of hundreds of megabytes is slower than
	// many of a few. Allocated as float32s so the vectors are aligned;
	// growth past them reallocates, as for any index in memory.
	buf := make([]float32, (length+3)/4)
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), 4*len(buf))
	for at := 0; at < length; at += 4 << 20 {
		end := min(at+4<<20, length)
		if _, err := r.ReadAt(b[at:end], off+int64(at)); err != nil {
			return nil, region{}, err
		}
	}
	return b[:length], region{}, nil
}

// readSums reads the segment's table of chunk checksums, checks the
// table's own, and splits it into the vectors' and the codes'.
func readSums(r io.ReaderAt, l segLayout) (vec, codes []uint32, err error) {
	b := make([]byte, l.size-l.sumOff)
	if _, err := r.ReadAt(b, l.sumOff); err != nil {
		return nil, nil, fmt.Errorf("%w: read: %v", ErrBadSegment, err)
	}
	le := binary.LittleEndian
	table := make([]uint32, len(b)/4-1)
	for i := range table {
		table[i] = le.Uint32(b[4*i:])
	}
	if crc32.Checksum(b[:4*len(table)], castagnoli) != le.Uint32(b[4*len(table):]) {
		return nil, nil, fmt.Errorf("%w: checksum mismatch in the chunk table", ErrBadSegment)
	}
	nv := chunks(l.vecEnd - l.vecOff)
	return table[:nv], table[nv:], nil
}

// vectorMap is a segment's vectors mapped for this index, not yet in use.
type vectorMap struct {
	data  []float32 // the rows, with spare capacity to grow into
	bytes []byte    // the mapping of the file's vector region
	reg   region
	cold  *os.File // Int8: a duplicate of the file, to re-score from
}

// mapVectors maps the vectors of the segment in f (layout l) as the
// index's memory mode wants them, with spare room for as many rows again,
// and checks them against sums: through the mapping once read in
// (Float32), through the file otherwise, so that the pages stay out of
// this process (Int8).
func (ix *Index) mapVectors(f *os.File, l segLayout, sums []uint32) (vectorMap, error) {
	n, length := int(l.rows), int(l.vecEnd-l.vecOff)
	int8Mode := ix.memory == Int8
	b, reg, err := mapFile(f, l.vecOff, length, max(n, 1<<16)*ix.dim*4, !int8Mode, int8Mode)
	if err != nil {
		return vectorMap{}, err
	}
	m := vectorMap{bytes: b[:length], reg: reg}
	if n > 0 {
		m.data = unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), cap(b)/4)[:n*ix.dim]
	}
	c := -1
	if int8Mode {
		c = verifyFile(f, l.vecOff, int64(length), sums, ix.workers)
	} else {
		c = verifyBytes(m.bytes, sums, ix.workers)
	}
	if c >= 0 {
		reg.unmap()
		return vectorMap{}, fmt.Errorf("%w: checksum mismatch in the vectors' chunk %d", ErrBadSegment, c)
	}
	if int8Mode {
		if m.cold, err = dupFile(f); err != nil {
			reg.unmap()
			return vectorMap{}, err
		}
	}
	return m, nil
}

// useVectors makes m the index's vectors, in place of any earlier
// mapping. Callers hold mu, or have the index to themselves.
func (ix *Index) useVectors(m vectorMap, l segLayout) {
	ix.data = m.data
	ix.mem.vec.unmap()
	ix.mem.vec, ix.sinceMap, ix.fromFile = m.reg, 0, true
	if m.cold != nil {
		ix.setCold(m.cold, l.vecOff, int(l.rows), m.bytes)
	}
}

// verifyBytes checks b against its chunks' sums, in parallel, and returns
// the first bad chunk or -1.
func verifyBytes(b []byte, sums []uint32, workers int) int {
	bad := make([]bool, len(sums))
	workpool.Run(workers, len(sums), func(_, c int) {
		end := min((c+1)*segChunk, len(b))
		bad[c] = crc32.Checksum(b[c*segChunk:end], castagnoli) != sums[c]
	})
	return firstTrue(bad)
}

// verifyFile checks length bytes of r from off against their chunks'
// sums, reading each chunk through a buffer per worker.
func verifyFile(r io.ReaderAt, off, length int64, sums []uint32, workers int) int {
	bad := make([]bool, len(sums))
	bufs := make([][]byte, workers)
	workpool.Run(workers, len(sums), func(w, c int) {
		if bufs[w] == nil {
			bufs[w] = make([]byte, 4<<20)
		}
		var sum uint32
		end := min(int64(c+1)*segChunk, length)
		for at := int64(c) * segChunk; at < end; {
			b := bufs[w][:min(int64(len(bufs[w])), end-at)]
			if _, err := r.ReadAt(b, off+at); err != nil {
				bad[c] = true
				return
			}
			sum = crc32.Update(sum, castagnoli, b)
			at += int64(len(b))
		}
		bad[c] = sum != sums[c]
	})
	return firstTrue(bad)
}

func firstTrue(xs []bool) int {
	for i, x := range xs {
		if x {
			return i
		}
	}
	return -1
}

// Trained reports whether the index has its clustering (searches are
// approximate), so a loaded one need not be built again.
func (ix *Index) Trained() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.ivf != nil
}

type fixed interface {
	~int8 | ~int32 | ~uint32 | ~int64 | ~float32
}

func asBytes[T fixed](xs []T) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
}

// writeSlice writes xs little-endian, in pieces so that a writer teeing
// into a checksum sees modest writes.
func writeSlice[T fixed](w io.Writer, xs []T) {
	if !littleEndian {
		_ = binary.Write(w, binary.LittleEndian, xs)
		return
	}
	b := asBytes(xs)
	for len(b) > 0 {
		n := min(len(b), 4<<20)
		_, _ = w.Write(b[:n])
		b = b[n:]
	}
}

// readSlice fills xs from r; the caller has checked that r holds enough.
func readSlice[T fixed](r *bytes.Reader, xs []T) {
	if littleEndian {
		readFull(r, asBytes(xs))
		return
	}
	_ = binary.Read(r, binary.LittleEndian, xs)
}

func readFull(r *bytes.Reader, b []byte) { _, _ = io.ReadFull(r, b) }

// MapVectors moves the index's vectors out of memory into the mapping of
// f, a segment WriteSegment wrote from this index at version (see
// Version). It checks the file (header, size, the vectors' checksums)
// first, and changes nothing if the index has been written since: the
// caller holds its writes. The int8 mode uses it so that vectors loaded
// from a database, or added since the last mapping, leave the heap.
func (ix *Index) MapVectors(f *os.File, version uint64) error {
	if !canMap {
		return errors.New("vecindex: memory-mapped segments need Linux")
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	_, l, err := readHeader(f, st.Size(), ix.dim)
	if err != nil {
		return err
	}
	vsums, _, err := readSums(f, l)
	if err != nil {
		return err
	}
	m, err := ix.mapVectors(f, l, vsums)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.version != version || len(ix.keys) != int(l.rows) || ix.closed {
		m.reg.unmap()
		if m.cold != nil {
			m.cold.Close()
		}
		return fmt.Errorf("vecindex: the index changed since version %d was written", version)
	}
	// The vectors' previous mapping goes, with the pages written in it.
	ix.useVectors(m, l)
	return nil
}

// Unmapped is how many writes the index has taken since its vectors were
// last mapped from a segment (all of its rows if they never were): the
// rows they added or changed are held in memory.
func (ix *Index) Unmapped() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.fromFile {
		return len(ix.keys)
	}
	return ix.sinceMap
}

// Mapped reports whether the vectors are mapped from a segment.
func (ix *Index) Mapped() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.fromFile
}
