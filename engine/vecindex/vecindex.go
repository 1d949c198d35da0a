// Package vecindex is clawmem's in-memory vector index. The SQLite store
// keeps vectors durable; at open it maps the index from its segment (see
// OpenSegment) or loads every vector into a new one. The index answers
// nearest-neighbour searches by cosine similarity, filtered by scope group
// inside the scan.
//
// Vectors live in one contiguous row-major float32 matrix, L2-normalised on
// insert, so an exact search is a single streaming pass of dot products split
// across cores. On amd64 with AVX and FMA the dot product is an assembly
// kernel, which keeps that pass at memory speed; elsewhere, or built with
// -tags purego, a portable Go kernel is used. In IVF mode a k-means
// clustering plus a compressed copy of the vectors laid out per cluster
// (bit codes, or int8 codes: see Codes) lets a search read only the
// clusters nearest the query and then re-score the best candidates exactly.
//
// IVF lifecycle: searches are exact until Build is first called; call it once
// after the bulk load at open. From then on inserts, updates and removals keep
// the clusters correct incrementally (a new or changed vector joins its
// nearest cluster), and the index retrains itself in the background once it
// has seen as many writes as it had rows at the last training, e.g. when it
// has doubled, or sooner when writes pile into one cluster (past twice the
// largest at training and eight times the fair share). Training does its heavy work without the lock or under the
// read lock in short batches, so searches and writes carry on; the write lock
// is held only to start it and to swap the result in.
package vecindex

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"
)

// Mode selects how Search finds neighbours.
type Mode int

const (
	// Exact scans every vector.
	Exact Mode = iota
	// IVF probes the clusters nearest the query and re-scores exactly.
	IVF
)

// Memory selects what an index opened from a segment keeps in RAM.
type Memory int

const (
	// Float32 keeps every vector in RAM (mapped from the segment and read
	// in at open).
	Float32 Memory = iota
	// Int8 keeps only the IVF int8 codes in RAM: the float32 vectors stay
	// in the segment's mapping and the page cache, read when a candidate
	// is re-scored or an exact scan passes, and given back after a
	// training has read them all.
	Int8
)

// Options tunes an Index; the zero value is an exact index using all cores.
type Options struct {
	Mode    Mode
	Memory  Memory
	NList   int   // IVF: number of clusters; 0 = auto (≈0.8·√n, 253 at 100k)
	NProbe  int   // IVF: clusters probed per query; 0 = auto (NList/16, from 16 up to 32)
	Rescore int   // IVF: quantised candidates re-scored exactly; 0 = auto (int8 codes max(64, 8k), bit codes max(1024, 64k))
	Codes   Codes // IVF: the clusters' codes; CodesAuto = bits for Float32 memory from 128 dimensions, else int8
	Workers int   // parallelism of scans and training; 0 = runtime.GOMAXPROCS(0)
	// ExactBelow: IVF: below this many rows searches scan exactly and no
	// clustering is trained; 0 = 4096 (smaller values count as 4096).
	ExactBelow int
}

// Errors returned by Upsert, matched with errors.Is.
var (
	ErrDimension = errors.New("vecindex: wrong vector dimension")
	ErrNotFinite = errors.New("vecindex: vector has a NaN or infinite component")
)

// Hit is one search result; Sim is the cosine similarity.
type Hit struct {
	Key int64
	Sim float32
}

// Index is a set of (key, group, vector) rows. It is safe for concurrent use:
// searches run in parallel with each other, writes are exclusive.
type Index struct {
	dim     int
	mode    Mode
	nlist   int
	nprobe  int
	rescore int
	codes   Codes // never CodesAuto
	workers int
	// exactRows: see Options.ExactBelow.
	exactRows int

	mu     sync.RWMutex
	data   []float32 // row-major n×dim; rows are unit length or zero
	keys   []int64
	groups []uint32
	rowOf  map[int64]int32
	groupN map[uint32]int // rows per group, to size filtered IVF probes

	ivf      *ivf               // nil until trained; searches are exact meanwhile
	trained  bool               // Build was called, so keep the clustering fresh
	writes   int                // writes since the last training started
	touched  map[int64]struct{} // keys written while a training is in flight
	retrains bool               // a background retraining is queued or running, so start no other

	buildMu sync.Mutex // serialises trainings

	// scanBufs keeps the bit-code scans' buffers (*scanBufs) between
	// searches: at a million rows a search queues some fifty thousand
	// candidates, and every probed cluster's scores pass through scans.
	scanBufs sync.Pool
	// compactEvery, when set, is the candidates a scanning worker holds
	// before it compacts them (compactAt); tests set it low.
	compactEvery int

	// version counts changes of rows, groups and vectors (not of the
	// clustering): a segment written at one version is still this index's
	// at the same version.
	version uint64

	memory Memory
	// mem holds the index's memory outside the Go heap: the vectors'
	// mapping (from a segment, or anonymous once they outgrow it or
	// mapMin) and the segment's other mappings (the codes). Close, or
	// the index becoming unreachable, unmaps them.
	mem *regions
	// fromFile: the vectors are mapped from a segment file (not moved
	// since into memory of their own).
	fromFile bool
	cold     coldRows // Int8: the vectors in the file, read from it to re-score
	// sinceMap counts writes since the vectors were mapped: the rows they
	// added or changed are in anonymous memory.
	sinceMap int
	closed   bool // Close was called: no retraining starts
	bg       sync.WaitGroup
}

// New returns an empty index of dim-dimensional vectors. It panics if dim < 1.
func New(dim int, o Options) *Index {
	if dim < 1 {
		panic(fmt.Sprintf("vecindex: dimension %d < 1", dim))
	}
	w := o.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	codes := o.Codes
	if codes == CodesAuto {
		codes = CodesInt8
		if o.Memory == Float32 && dim >= bitsMinDim {
			codes = CodesBits
		}
	}
	ix := &Index{
		dim: dim, mode: o.Mode, memory: o.Memory, nlist: o.NList, nprobe: o.NProbe, rescore: o.Rescore, codes: codes, workers: w, exactRows: o.ExactBelow,
		rowOf: map[int64]int32{}, groupN: map[uint32]int{}, mem: &regions{},
	}
	// An index dropped without Close still gives its mappings back.
	runtime.AddCleanup(ix, (*regions).unmapAll, ix.mem)
	return ix
}

// Version changes whenever a row, its group or its vector does.
func (ix *Index) Version() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.version
}

// Dim is the vector dimension.
func (ix *Index) Dim() int { return ix.dim }

// Len is the number of rows.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.keys)
}

// Reserve pre-sizes storage for n rows so a bulk load neither reallocates nor
// leaves doubled-up garbage behind (the matrix alone is n·dim·4 bytes).
func (ix *Index) Reserve(n int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if n <= len(ix.keys) {
		return
	}
	ix.grow(n, true)
	ix.keys = slices.Grow(ix.keys, n-len(ix.keys))
	ix.groups = slices.Grow(ix.groups, n-len(ix.groups))
	if ix.ivf != nil {
		ix.ivf.where = slices.Grow(ix.ivf.where, n-len(ix.ivf.where))
	}
	m := make(map[int64]int32, n)
	for k, r := range ix.rowOf {
		m[k] = r
	}
	ix.rowOf = m
}

// Upsert inserts a row, or replaces the group and vector of an existing key
// in place. The vector is stored L2-normalised; a zero vector stays zero and
// scores 0 against everything. A vector of the wrong length fails with
// ErrDimension, one with a NaN or infinite component with ErrNotFinite.
func (ix *Index) Upsert(key int64, group uint32, vec []float32) error {
	inv, err := ix.invNorm(vec)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r, exists := ix.rowOf[key]
	if !exists {
		r = int32(len(ix.keys))
		ix.grow(len(ix.keys)+1, false)
		ix.data = ix.data[:len(ix.data)+ix.dim]
		ix.keys = append(ix.keys, key)
		ix.groups = append(ix.groups, group)
		ix.rowOf[key] = r
		ix.groupN[group]++
	} else {
		ix.regroup(r, group)
	}
	row := ix.row(r)
	ix.cold.dirty(r)
	for i, x := range vec {
		row[i] = float32(float64(x) * inv)
	}
	if ix.ivf != nil {
		ix.ivf.place(r, row, group, exists)
	}
	ix.touch(key)
	ix.wrote()
	return nil
}

// invNorm validates vec and returns 1/‖vec‖, or 0 for a zero vector. The norm
// is accumulated in float64 so large finite components cannot overflow it.
func (ix *Index) invNorm(vec []float32) (float64, error) {
	if len(vec) != ix.dim {
		return 0, fmt.Errorf("%w: got %d components, want %d", ErrDimension, len(vec), ix.dim)
	}
	var ss float64
	for _, x := range vec {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, ErrNotFinite
		}
		ss += f * f
	}
	if ss == 0 {
		return 0, nil
	}
	return 1 / math.Sqrt(ss), nil
}

// SetGroup moves key to another group; false if the key is absent.
func (ix *Index) SetGroup(key int64, group uint32) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r, ok := ix.rowOf[key]
	if ok {
		ix.regroup(r, group)
	}
	return ok
}

func (ix *Index) regroup(r int32, group uint32) {
	old := ix.groups[r]
	if old == group {
		return
	}
	ix.groups[r] = group
	if ix.ivf != nil {
		ix.ivf.regroup(r, group)
	}
	ix.groupN[group]++
	ix.uncount(old)
	ix.version++
}

func (ix *Index) uncount(g uint32) {
	if ix.groupN[g]--; ix.groupN[g] == 0 {
		delete(ix.groupN, g)
	}
}

// Remove deletes key by moving the last row into its place (its cluster
// keeps its members in group order with a swap per run after it); false
// if the key is absent.
func (ix *Index) Remove(key int64) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	r, ok := ix.rowOf[key]
	if !ok {
		return false
	}
	last := int32(len(ix.keys) - 1)
	if ix.ivf != nil {
		ix.ivf.unlink(r)
	}
	ix.uncount(ix.groups[r])
	if r != last {
		moved := ix.keys[last]
		copy(ix.row(r), ix.row(last))
		ix.cold.dirty(r)
		ix.keys[r] = moved
		ix.groups[r] = ix.groups[last]
		ix.rowOf[moved] = r
		if ix.ivf != nil {
			ix.ivf.relink(last, r)
		}
		ix.touch(moved)
	}
	ix.data = ix.data[:int(last)*ix.dim]
	ix.keys = ix.keys[:last]
	ix.groups = ix.groups[:last]
	if ix.ivf != nil {
		ix.ivf.where = ix.ivf.where[:last]
	}
	delete(ix.rowOf, key)
	ix.wrote()
	return true
}

// Group is key's group; false if the key is absent.
func (ix *Index) Group(key int64) (uint32, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r, ok := ix.rowOf[key]
	if !ok {
		return 0, false
	}
	return ix.groups[r], true
}

// Vector returns a copy of the stored (normalised) vector of key.
func (ix *Index) Vector(key int64) ([]float32, bool) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	r, ok := ix.rowOf[key]
	if !ok {
		return nil, false
	}
	return slices.Clone(ix.row(r)), true
}

func (ix *Index) row(r int32) []float32 {
	i := int(r) * ix.dim
	return ix.data[i : i+ix.dim : i+ix.dim]
}

// touch notes that key's vector or row changed, so a training in flight must
// re-place it rather than trust the cluster it computed earlier.
func (ix *Index) touch(key int64) {
	if ix.touched != nil {
		ix.touched[key] = struct{}{}
	}
}

// wrote counts a write towards the next automatic retraining and starts one
// in the background when due.
func (ix *Index) wrote() {
	ix.writes++
	ix.sinceMap++
	ix.version++
	if ix.mode != IVF || !ix.trained || ix.retrains || ix.closed || ix.touched != nil || len(ix.keys) < ix.exactBelow() {
		return
	}
	// Due after as many writes as rows at training, or sooner (but not
	// before an eighth of that) when writes have piled into one cluster.
	if iv := ix.ivf; iv != nil && ix.writes < iv.trainedOn && !(iv.skewed && ix.writes >= iv.trainedOn/8) {
		return
	}
	ix.retrains = true
	ix.bg.Add(1)
	go func() {
		defer ix.bg.Done()
		ix.train()
		ix.mu.Lock()
		ix.retrains = false
		ix.mu.Unlock()
	}()
}

// Close waits for a training in progress, then empties the index and
// releases its mappings (a segment's, or a large matrix's) at once.
// Searches after it find nothing. An index dropped without Close gives
// its mappings back when the collector finds it unreachable.
func (ix *Index) Close() {
	ix.mu.Lock()
	ix.closed = true
	ix.mu.Unlock()
	ix.bg.Wait()
	ix.buildMu.Lock()
	defer ix.buildMu.Unlock()
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.cold.close()
	ix.data, ix.keys, ix.groups, ix.ivf, ix.cold = nil, nil, nil, nil, coldRows{}
	ix.rowOf, ix.groupN = map[int64]int32{}, map[uint32]int{}
	ix.mem.unmapAll()
	ix.fromFile = false
}

// regions are mappings an index owns.
type regions struct {
	vec   region
	other []region
}

func (m *regions) unmapAll() {
	m.vec.unmap()
	for _, r := range m.other {
		r.unmap()
	}
	m.vec, m.other = region{}, nil
}

// mapMin is the size from which the vector matrix lives outside the Go
// heap, in an anonymous mapping. There its spare capacity is address space
// only: the doubling that keeps appends amortised costs no resident memory
// until rows are written into it, where a heap slice of twice the rows is
// allocated, and zeroed, at once. The vectors, which hold no pointers,
// also stay out of the collector's goal, which with GOGC=100 lets the heap
// grow to twice what it holds: on the heap each vector cost up to four
// times its bytes in resident memory (issue 27: 5.8 KB a memory at 384
// dimensions). And a matrix of hundreds of megabytes grown on the heap
// overshot the collector's goal, which stalled capture for 0.5–0.7 s at
// 120k × 256 (bench pipeline, with gctrace). Below it, a small index
// (a test's, a scope's first rows) saves the mapping.
const mapMin = 1 << 20

// grow makes room for at least rows rows: exactly that many for a bulk
// load (exact), else twice the current room, so appends stay amortised.
func (ix *Index) grow(rows int, exact bool) {
	need := rows * ix.dim
	if need <= cap(ix.data) {
		return
	}
	size := need
	if !exact {
		size = max(need, 2*cap(ix.data), 256*ix.dim)
	}
	var nd []float32
	var reg region
	if 4*size >= mapMin && canMap {
		if b, r, err := mapFile(nil, 0, 0, 4*size, false, false); err == nil {
			nd, reg = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), size)[:len(ix.data)], r
		}
	}
	if nd == nil {
		nd = make([]float32, len(ix.data), size)
	}
	copy(nd, ix.data)
	ix.data = nd
	// The old storage goes; clean rows of the int8 mode are still read
	// from the file, but there is no longer a mapping of it to release.
	ix.mem.vec.unmap()
	ix.mem.vec, ix.fromFile, ix.cold.mapped = reg, false, nil
}

// Stats describes an index's size and clustering.
type Stats struct {
	Len, Dim    int
	Trained     bool  // IVF clusters are in use
	NList       int   // clusters (0 if not trained)
	NProbe      int   // clusters probed per unfiltered query
	VectorBytes int64 // the float32 matrix (capacity)
	IVFBytes    int64 // everything IVF adds: centroids, codes, scales, list and row maps
	Codes       Codes // the clusters' codes (when trained)
	// TrainsAt is, for an IVF index, the row count from which it trains
	// its clustering (below it searches are exact); 0 for an exact index.
	TrainsAt int
}

// Stats reports the index's current size and clustering.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	s := Stats{Len: len(ix.keys), Dim: ix.dim, VectorBytes: int64(cap(ix.data)) * 4}
	if ix.mode == IVF {
		s.TrainsAt = ix.exactBelow()
	}
	if iv := ix.ivf; iv != nil {
		s.Trained, s.NList, s.NProbe, s.IVFBytes, s.Codes = true, iv.nlist, ix.probes(iv), iv.bytes(), iv.codes()
	}
	return s
}
