package vecindex

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"unsafe"
)

// A segment is an index written whole to a file, so that opening a store
// reads its vectors (and its trained clustering) in one pass instead of
// decoding every row out of the database and training again:
//
//	magic "CLAWVSEG", version u32, dim u32, rows u64, epoch u64,
//	extra length u32, extra bytes (the caller's: the store's group names),
//	keys rows×i64, groups rows×u32, vectors rows×dim×f32 (unit length),
//	nlist u32, trainedOn u64, and with nlist > 0: centroids nlist×dim×f32,
//	each row's cluster rows×i32,
//	CRC-32C of everything before it, u32.
//
// Little-endian throughout. ReadSegment checks every length against the
// header and the checksum at the end, and returns ErrBadSegment for any
// damage: a segment is never trusted blindly.
const (
	segmentMagic   = "CLAWVSEG"
	segmentVersion = 1
)

// ErrBadSegment is a segment that is truncated, damaged, of another
// format, or not of this index's dimension.
var ErrBadSegment = errors.New("vecindex: bad segment")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// littleEndian: the vectors are copied as memory on little-endian machines.
var littleEndian = func() bool { x := uint16(1); return *(*byte)(unsafe.Pointer(&x)) == 1 }()

// WriteSegment writes the index, the caller's epoch and extra bytes to w.
// Writes wait meanwhile; searches go on.
func (ix *Index) WriteSegment(w io.Writer, epoch uint64, extra []byte) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	h := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, h), 1<<20)
	put := func(v any) {
		_ = binary.Write(bw, binary.LittleEndian, v)
	}
	bw.WriteString(segmentMagic)
	put(uint32(segmentVersion))
	put(uint32(ix.dim))
	put(uint64(len(ix.keys)))
	put(epoch)
	put(uint32(len(extra)))
	bw.Write(extra)
	writeSlice(bw, ix.keys)
	writeSlice(bw, ix.groups)
	writeSlice(bw, ix.data)
	if iv := ix.ivf; iv != nil {
		put(uint32(iv.nlist))
		put(uint64(iv.trainedOn))
		writeSlice(bw, iv.cent)
		cl := make([]int32, len(iv.where))
		for r, at := range iv.where {
			cl[r] = at.cluster
		}
		writeSlice(bw, cl)
	} else {
		put(uint32(0))
		put(uint64(0))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], h.Sum32())
	_, err := w.Write(sum[:])
	return err
}

// ReadSegment reads a segment written by WriteSegment into a new index
// with options o. It returns the segment's epoch and extra bytes.
// Everything is checked before the index is returned: the magic, version
// and dimension, every length against what is left of the file
// (size bytes in all), the clusters' range, and the checksum. The vectors
// are not scanned again: only WriteSegment makes segments, from an index
// that admits finite vectors only, and the checksum says they are its.
func ReadSegment(r io.Reader, size int64, dim int, o Options) (*Index, uint64, []byte, error) {
	bad := func(format string, args ...any) (*Index, uint64, []byte, error) {
		return nil, 0, nil, fmt.Errorf("%w: %s", ErrBadSegment, fmt.Sprintf(format, args...))
	}
	h := crc32.New(castagnoli)
	if size < int64(len(segmentMagic))+4 {
		return bad("%d bytes", size)
	}
	// The checksum covers the body: size-4 bytes, read through it.
	sr := &segReader{r: bufio.NewReaderSize(io.TeeReader(io.LimitReader(r, size-4), h), 1<<20), left: size - 4}
	magic := make([]byte, len(segmentMagic))
	var version, sdim, extraLen uint32
	var rows, epoch uint64
	if !sr.full(magic) || string(magic) != segmentMagic {
		return bad("not a segment")
	}
	if !sr.num(&version) || version != segmentVersion {
		return bad("format version %d, this clawmem reads %d", version, segmentVersion)
	}
	if !sr.num(&sdim) || int(sdim) != dim {
		return bad("vectors of %d dimensions, the store has %d", sdim, dim)
	}
	if !sr.num(&rows) || !sr.num(&epoch) || !sr.num(&extraLen) {
		return bad("truncated header")
	}
	// Everything the header promises must fit in what is left.
	perRow := int64(8 + 4 + 4*dim)
	if rows > uint64(math.MaxInt32) || int64(extraLen) > sr.left || int64(rows) > (sr.left-int64(extraLen))/perRow {
		return bad("%d rows and %d extra bytes do not fit in %d bytes", rows, extraLen, size)
	}
	extra := make([]byte, extraLen)
	n := int(rows)
	ix := New(dim, o)
	ix.keys, ix.groups, ix.data = make([]int64, n), make([]uint32, n), make([]float32, n*dim)
	if !sr.full(extra) || !readSlice(sr, ix.keys) || !readSlice(sr, ix.groups) || !readSlice(sr, ix.data) {
		return bad("truncated rows")
	}
	var nlist uint32
	var trainedOn uint64
	if !sr.num(&nlist) || !sr.num(&trainedOn) {
		return bad("truncated clustering header")
	}
	var cent []float32
	var where []int32
	if nlist > 0 {
		if int64(nlist) > sr.left/int64(4*dim) {
			return bad("%d clusters do not fit", nlist)
		}
		cent, where = make([]float32, int(nlist)*dim), make([]int32, n)
		if !readSlice(sr, cent) || !readSlice(sr, where) {
			return bad("truncated clustering")
		}
	}
	if sr.left != 0 {
		return bad("%d bytes more than the header says", sr.left)
	}
	want := h.Sum32()
	var sum [4]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil || binary.LittleEndian.Uint32(sum[:]) != want {
		return bad("checksum mismatch")
	}
	ix.rowOf = make(map[int64]int32, n)
	for i, k := range ix.keys {
		if _, dup := ix.rowOf[k]; dup {
			return bad("key %d twice", k)
		}
		ix.rowOf[k] = int32(i)
		ix.groupN[ix.groups[i]]++
	}
	if nlist > 0 && ix.mode == IVF {
		iv := &ivf{dim: dim, nlist: int(nlist), cent: cent, clusters: make([]cluster, nlist), where: make([]loc, n), trainedOn: int(trainedOn)}
		for row, c := range where {
			if c < 0 || c >= int32(nlist) {
				return bad("row %d in cluster %d of %d", row, c, nlist)
			}
			cl := &iv.clusters[c]
			iv.where[row] = loc{cluster: c, pos: int32(len(cl.rows))}
			cl.rows = append(cl.rows, int32(row))
		}
		// The int8 codes are made again from the vectors, the clusters
		// spread over the cores.
		parallel(ix.workers, len(iv.clusters), func(_, c int) {
			cl := &iv.clusters[c]
			cl.codes, cl.scales = make([]int8, len(cl.rows)*dim), make([]float32, len(cl.rows))
			for pos, row := range cl.rows {
				cl.scales[pos] = quantize(cl.code(int32(pos), dim), ix.row(row))
			}
		})
		iv.setLimit()
		ix.ivf, ix.trained = iv, true
	}
	return ix, epoch, extra, nil
}

// Trained reports whether the index has its clustering (searches are
// approximate), so a loaded one need not be built again.
func (ix *Index) Trained() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.ivf != nil
}

type segReader struct {
	r    *bufio.Reader
	left int64
}

func (s *segReader) full(b []byte) bool {
	if int64(len(b)) > s.left {
		return false
	}
	// In pieces: one read of hundreds of megabytes is slower than many of
	// a few.
	for len(b) > 0 {
		chunk := b[:min(len(b), 4<<20)]
		n, err := io.ReadFull(s.r, chunk)
		s.left -= int64(n)
		if err != nil {
			return false
		}
		b = b[n:]
	}
	return true
}

func (s *segReader) num(v any) bool {
	size := int64(binary.Size(v))
	if size > s.left {
		return false
	}
	s.left -= size
	return binary.Read(s.r, binary.LittleEndian, v) == nil
}

type fixed interface {
	~int32 | ~uint32 | ~int64 | ~float32
}

func asBytes[T fixed](xs []T) []byte {
	if len(xs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&xs[0])), len(xs)*int(unsafe.Sizeof(xs[0])))
}

func writeSlice[T fixed](w io.Writer, xs []T) {
	if littleEndian {
		_, _ = w.Write(asBytes(xs))
		return
	}
	_ = binary.Write(w, binary.LittleEndian, xs)
}

func readSlice[T fixed](s *segReader, xs []T) bool {
	if littleEndian {
		return s.full(asBytes(xs))
	}
	size := int64(binary.Size(xs))
	if size > s.left {
		return false
	}
	s.left -= size
	return binary.Read(s.r, binary.LittleEndian, xs) == nil
}
