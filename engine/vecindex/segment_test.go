package vecindex

import (
	"bytes"
	"errors"
	"math/rand/v2"
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
	for _, mode := range []Mode{Exact, IVF} {
		ix := New(dim, Options{Mode: mode})
		qs, err := fillClustered(ix, n, 50, 5, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		ix.Remove(3) // a hole: rows move
		ix.Build()
		seg := segmentOf(t, ix, 42, []byte(`{"agent:a":1}`))
		back, epoch, extra, err := readSeg(seg, dim, Options{Mode: mode})
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
