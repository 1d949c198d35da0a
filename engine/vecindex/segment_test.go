package vecindex

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// segmentOf writes ix to a buffer.
func segmentOf(t testing.TB, ix *Index, epoch uint64, extra []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ix.WriteSegment(&b, epoch, extra); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readSeg(b []byte, dim int, o Options) (*Index, uint64, []byte, error) {
	return ReadSegment(bytes.NewReader(b), int64(len(b)), dim, o)
}

// A segment read back is the same index: the same rows, groups and vectors,
// the same clustering (no training needed), the same answers.
func TestSegmentRoundTrip(t *testing.T) {
	n, dim := 6000, 32
	for _, o := range []Options{{Mode: Exact}, {Mode: IVF}, {Mode: IVF, Codes: CodesInt8}} {
		mode := o.Mode
		ix := New(dim, o)
		qs, err := FillClustered(ix, n, 50, 5, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		ix.Remove(3) // a hole: rows move
		ix.Build()
		seg := segmentOf(t, ix, 42, []byte(`{"agent:a":1}`))
		back, epoch, extra, err := readSeg(seg, dim, o)
		if err != nil {
			t.Fatal(err)
		}
		if epoch != 42 || string(extra) != `{"agent:a":1}` {
			t.Fatalf("epoch %d extra %q", epoch, extra)
		}
		checkInvariants(t, back)
		if back.Trained() != (mode == IVF) {
			t.Fatalf("mode %v: trained %v after reading", mode, back.Trained())
		}
		if back.Len() != ix.Len() {
			t.Fatalf("%d rows, want %d", back.Len(), ix.Len())
		}
		for _, q := range qs {
			for _, allow := range []*Groups{nil, NewGroups(1, 2)} {
				if a, b := ix.Search(q, 10, allow), back.Search(q, 10, allow); !slices.Equal(a, b) {
					t.Fatalf("mode %v: search after reading %v, before %v", mode, b, a)
				}
			}
		}
		// It goes on taking writes.
		rng := rand.New(rand.NewPCG(1, 2))
		if err := back.Upsert(1_000_000, 1, randVec(rng, dim)); err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, back)
	}
}

// Any damage is refused with ErrBadSegment: every truncation, a flipped
// byte anywhere, another dimension, extra bytes.
func TestSegmentDamageIsRefused(t *testing.T) {
	dim := 8
	ix := New(dim, Options{Mode: IVF, ExactBelow: 1, NList: 4})
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range 200 {
		if err := ix.Upsert(int64(k), uint32(k%3), randVec(rng, dim)); err != nil {
			t.Fatal(err)
		}
	}
	ix.Build()
	seg := segmentOf(t, ix, 7, []byte("groups"))
	if _, _, _, err := readSeg(seg, dim, Options{Mode: IVF}); err != nil {
		t.Fatalf("intact: %v", err)
	}
	for cut := range len(seg) {
		if _, _, _, err := readSeg(seg[:cut], dim, Options{Mode: IVF}); !errors.Is(err, ErrBadSegment) {
			t.Fatalf("truncated at %d of %d: %v", cut, len(seg), err)
		}
	}
	for i := range len(seg) {
		bad := slices.Clone(seg)
		bad[i] ^= 1 << (i % 8)
		if _, _, _, err := readSeg(bad, dim, Options{Mode: IVF}); !errors.Is(err, ErrBadSegment) {
			t.Fatalf("bit flipped at byte %d: %v", i, err)
		}
	}
	if _, _, _, err := readSeg(seg, dim+1, Options{}); !errors.Is(err, ErrBadSegment) {
		t.Fatalf("another dimension: %v", err)
	}
	if _, _, _, err := readSeg(append(slices.Clone(seg), 0), dim, Options{}); !errors.Is(err, ErrBadSegment) {
		t.Fatalf("a byte more: %v", err)
	}
	if _, _, _, err := readSeg(make([]byte, len(seg)), dim, Options{}); !errors.Is(err, ErrBadSegment) {
		t.Fatalf("zeroed: %v", err)
	}
}

// FuzzReadSegment: whatever the bytes, ReadSegment returns an index or
// ErrBadSegment, never panics, and never allocates past what the input's
// size allows.
func FuzzReadSegment(f *testing.F) {
	ix := New(4, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	for k := range 10 {
		_ = ix.Upsert(int64(k), 0, randVec(rng, 4))
	}
	var b bytes.Buffer
	_ = ix.WriteSegment(&b, 1, nil)
	f.Add(b.Bytes())
	f.Add([]byte(segmentMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, _, _, err := ReadSegment(bytes.NewReader(data), int64(len(data)), 4, Options{Mode: IVF})
		if err != nil && !errors.Is(err, ErrBadSegment) {
			t.Fatalf("error %v is not ErrBadSegment", err)
		}
		if err == nil {
			checkInvariants(t, got)
		}
	})
}

// segmentFile writes ix's segment to a file in a temporary directory.
func segmentFile(t *testing.T, ix *Index) (string, []byte) {
	t.Helper()
	seg := segmentOf(t, ix, 9, []byte("x"))
	path := filepath.Join(t.TempDir(), "vectors.seg")
	if err := os.WriteFile(path, seg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, seg
}

func openSeg(t *testing.T, path string, dim int, o Options) (*Index, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ix, _, _, err := OpenSegment(f, dim, o)
	return ix, err
}

// An opened (mapped) segment answers as the index it was written from, in
// both memory modes; it takes inserts past its rows, updates in place and
// removals, and the file under it never changes. After Close it is empty.
func TestOpenSegmentMapped(t *testing.T) {
	n, dim := 6000, 32
	for _, mem := range []Memory{Float32, Int8} {
		src := New(dim, Options{Mode: IVF, Memory: mem})
		qs, err := FillClustered(src, n, 40, 11, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		src.Build()
		path, seg := segmentFile(t, src)
		ix, err := openSeg(t, path, dim, Options{Mode: IVF, Memory: mem})
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, ix)
		if !ix.Trained() {
			t.Fatalf("memory %v: not trained after the open", mem)
		}
		for _, q := range qs {
			if a, b := src.Search(q, 10, nil), ix.Search(q, 10, nil); !slices.Equal(a, b) {
				t.Fatalf("memory %v: mapped %v, in memory %v", mem, b, a)
			}
		}
		rng := rand.New(rand.NewPCG(7, uint64(mem)))
		for k := range 3000 { // past the file's rows and pages
			if err := ix.Upsert(int64(n+k), 2, randVec(rng, dim)); err != nil {
				t.Fatal(err)
			}
		}
		for k := range 500 {
			if err := ix.Upsert(int64(k), 1, randVec(rng, dim)); err != nil {
				t.Fatal(err)
			}
			ix.Remove(int64(1000 + k))
		}
		checkInvariants(t, ix)
		for _, q := range qs[:10] {
			sameTopK(t, ix, q, ix.SearchExact(q, 10, nil), bruteForce(t, ix, q, 10, nil), nil)
		}
		// Approximate answers re-score with each row as it is now: a
		// row written since the open is not read from the file.
		for k := range 500 {
			v, _ := ix.Vector(int64(k))
			hits := ix.Search(v, 3, nil)
			if len(hits) == 0 || hits[0].Key != int64(k) {
				t.Fatalf("memory %v: key %d, rewritten, is not its own nearest: %v", mem, k, hits)
			}
			for _, h := range hits {
				hv, _ := ix.Vector(h.Key)
				if d := math.Abs(float64(h.Sim - Cosine(hv, v))); d > 1e-5 {
					t.Fatalf("memory %v: key %d scored %v, its vector %v", mem, h.Key, h.Sim, Cosine(hv, v))
				}
			}
		}
		ix.Build() // a training over the mapped rows
		checkInvariants(t, ix)
		if now, _ := os.ReadFile(path); !bytes.Equal(now, seg) {
			t.Fatalf("memory %v: the segment file changed under its mapping", mem)
		}
		ix.Close()
		if ix.Len() != 0 || len(ix.Search(qs[0], 10, nil)) != 0 {
			t.Fatalf("memory %v: rows after Close", mem)
		}
	}
}

// Damage found through the mapped path too: bits flipped at random
// offsets in each region (header, vectors, codes, checksums), and a cut at
// every boundary of the layout.
func TestOpenSegmentDamage(t *testing.T) {
	for _, codes := range []Codes{CodesBits, CodesInt8} {
		t.Run(fmt.Sprint(codes), func(t *testing.T) { testOpenSegmentDamage(t, codes) })
	}
}

func testOpenSegmentDamage(t *testing.T, codes Codes) {
	dim := 8
	ix := New(dim, Options{Mode: IVF, NList: 4, Codes: codes})
	rng := rand.New(rand.NewPCG(3, 4))
	for k := range 5000 { // trained from 4,096 rows: every region is there
		if err := ix.Upsert(int64(k), uint32(k%3), randVec(rng, dim)); err != nil {
			t.Fatal(err)
		}
	}
	ix.Build()
	path, seg := segmentFile(t, ix)
	l := layoutOf(int64(dim), 5000, 4, 1, int64(codeWidth(dim, codes)))
	if !ix.Trained() || l.size != int64(len(seg)) {
		t.Fatalf("trained %v, layout %d bytes, segment %d", ix.Trained(), l.size, len(seg))
	}
	write := func(b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	regions := [][2]int64{{0, l.vecOff}, {l.vecOff, l.vecEnd}, {l.codeOff, l.codeEnd}, {l.sumOff, l.size}}
	for j := range 200 {
		bad := slices.Clone(seg)
		r := regions[j%len(regions)]
		i := r[0] + rng.Int64N(r[1]-r[0])
		bad[i] ^= 1 << rng.IntN(8)
		write(bad)
		if _, err := openSeg(t, path, dim, Options{Mode: IVF, Codes: codes}); !errors.Is(err, ErrBadSegment) {
			t.Fatalf("bit flipped at byte %d: %v", i, err)
		}
	}
	for _, cut := range []int64{0, 8, segHeader, l.vecOff - 4, l.vecOff, l.vecEnd, l.codeOff, l.codeEnd, l.sumOff, l.size - 1} {
		write(seg[:cut])
		if _, err := openSeg(t, path, dim, Options{Mode: IVF, Codes: codes}); !errors.Is(err, ErrBadSegment) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	write(seg)
	back, err := openSeg(t, path, dim, Options{Mode: IVF, Codes: codes})
	if err != nil || !back.Trained() {
		t.Fatalf("intact segment: trained %v, %v", back != nil && back.Trained(), err)
	}
	// Opened wanting the other kind of code, the vectors are used and
	// the clustering is not: the index answers exactly until trained.
	other := CodesInt8
	if codes == CodesInt8 {
		other = CodesBits
	}
	back, err = openSeg(t, path, dim, Options{Mode: IVF, Codes: other})
	if err != nil || back.Trained() || back.Len() != 5000 {
		t.Fatalf("segment of %v codes opened for %v: %v", codes, other, err)
	}
	q := randVec(rng, dim)
	if got, want := back.Search(q, 10, nil), ix.SearchExact(q, 10, nil); !slices.Equal(got, want) {
		t.Fatalf("untrained after a switch of codes: %v, exact %v", got, want)
	}
	back.Build()
	checkInvariants(t, back)
}

// A matrix past mapMin lives outside the Go heap (so its growth does not
// make the collector stall the process), and answers as before.
func TestLargeMatrixOffHeap(t *testing.T) {
	if !canMap {
		t.Skip("the matrix is mapped on Linux only")
	}
	dim := 1024
	rows := mapMin/(4*dim) + 4000 // past mapMin while growing
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := New(dim, Options{})
	rng := rand.New(rand.NewPCG(21, 22))
	v := make([]float32, dim)
	for k := range rows {
		for j := range v {
			v[j] = float32(rng.NormFloat64())
		}
		if err := ix.Upsert(int64(k), uint32(k%4), v); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	matrix := int64(rows * dim * 4)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > matrix/4 {
		t.Fatalf("the heap grew by %d MB for a %d MB matrix", grew>>20, matrix>>20)
	}
	if ix.mem.vec == (region{}) {
		t.Fatal("the matrix is not mapped")
	}
	for range 3 {
		q := randVec(rng, dim)
		sameTopK(t, ix, q, ix.SearchExact(q, 10, nil), bruteForce(t, ix, q, 10, nil), nil)
	}
	ix.Remove(5)
	checkInvariants(t, ix)
	ix.Close()
	if ix.Len() != 0 {
		t.Fatal("rows after Close")
	}
}

// A segment written before clusters kept their members in group order
// loads in order, and answers as the index it was written from.
func TestSegmentOrdersUnorderedClusters(t *testing.T) {
	dim := 32
	for _, codes := range []Codes{CodesBits, CodesInt8} {
		o := Options{Mode: IVF, Codes: codes}
		ix := New(dim, o)
		qs, err := FillClustered(ix, 6000, 30, 9, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		for key := range int64(ix.Len()) {
			ix.SetGroup(key, uint32(key%4))
		}
		if err := ix.Build(); err != nil {
			t.Fatal(err)
		}
		allows := []*Groups{nil, NewGroups(1), NewGroups(0, 3)}
		var want [][]Hit
		for _, q := range qs {
			for _, allow := range allows {
				want = append(want, ix.Search(q, 10, allow))
			}
		}
		// Reverse every cluster's members, as an older index could have
		// left them.
		iv := ix.ivf
		unordered := 0
		for c := range iv.clusters {
			cl := &iv.clusters[c]
			n := len(cl.rows)
			for a, b := 0, n-1; a < b; a, b = a+1, b-1 {
				iv.swap(int32(c), int32(a), int32(b))
			}
			if !slices.IsSorted(cl.groups) {
				unordered++
			}
		}
		if unordered == 0 {
			t.Fatal("no cluster out of order: the test tests nothing")
		}
		back, _, _, err := readSeg(segmentOf(t, ix, 1, nil), dim, o)
		if err != nil {
			t.Fatal(err)
		}
		checkInvariants(t, back)
		for i, q := range qs {
			for j, allow := range allows {
				if a, b := want[i*len(allows)+j], back.Search(q, 10, allow); !slices.Equal(a, b) {
					t.Fatalf("codes %v, allow %v: search after reading %v, before %v", codes, allow, b, a)
				}
			}
		}
	}
}
