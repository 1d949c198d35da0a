package vecindex

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

func randVec(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// builtIVF is an IVF index of n random 8-dimension rows (keys 0 to n-1, all
// in group 0), built, and the generator that drew them, seeded with seed
// and left where the rows ended for the test to draw on.
func builtIVF(seed uint64, n int) (*Index, *rand.Rand) {
	ix := New(8, Options{Mode: IVF})
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range n {
		ix.Upsert(int64(i), 0, randVec(rng, 8))
	}
	ix.Build()
	return ix, rng
}

// bruteForce is the reference search: float64 cosine of the stored vectors,
// ties broken by smaller key.
func bruteForce(t *testing.T, ix *Index, q []float32, k int, allow *Groups) []Hit {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var all []Hit
	for r, key := range ix.keys {
		if allow.Has(ix.groups[r]) {
			all = append(all, Hit{key, Cosine(ix.row(int32(r)), q)})
		}
	}
	slices.SortFunc(all, func(a, b Hit) int {
		if c := cmp.Compare(b.Sim, a.Sim); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return all[:min(k, len(all))]
}

// sameTopK checks got against the reference up to float rounding: equal
// similarities rank by rank, and each returned key really has the similarity
// reported, belongs to an allowed group and appears once.
func sameTopK(t *testing.T, ix *Index, q []float32, got, want []Hit, allow *Groups) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d hits, want %d", len(got), len(want))
	}
	seen := map[int64]bool{}
	for i, h := range got {
		if math.Abs(float64(h.Sim-want[i].Sim)) > 1e-5 {
			t.Fatalf("rank %d: sim %v, want %v (key %d vs %d)", i, h.Sim, want[i].Sim, h.Key, want[i].Key)
		}
		v, ok := ix.Vector(h.Key)
		if !ok {
			t.Fatalf("rank %d: key %d is not in the index", i, h.Key)
		}
		if s := Cosine(v, q); math.Abs(float64(s-h.Sim)) > 1e-5 {
			t.Fatalf("rank %d: key %d reported sim %v, true %v", i, h.Key, h.Sim, s)
		}
		if seen[h.Key] {
			t.Fatalf("key %d returned twice", h.Key)
		}
		seen[h.Key] = true
		ix.mu.RLock()
		g := ix.groups[ix.rowOf[h.Key]]
		ix.mu.RUnlock()
		if !allow.Has(g) {
			t.Fatalf("key %d in group %d, not allowed", h.Key, g)
		}
	}
}

// checkInvariants verifies the bookkeeping behind the matrix and, when
// trained, the clusters: every row in exactly one cluster slot, pointing
// back at it, in its nearest cluster, with the code of its current vector.
func checkInvariants(t *testing.T, ix *Index) {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := len(ix.keys)
	if len(ix.data) != n*ix.dim || len(ix.groups) != n || len(ix.rowOf) != n {
		t.Fatalf("sizes: data %d, keys %d, groups %d, map %d", len(ix.data), n, len(ix.groups), len(ix.rowOf))
	}
	counts := map[uint32]int{}
	for r, key := range ix.keys {
		if ix.rowOf[key] != int32(r) {
			t.Fatalf("row %d holds key %d but the map says row %d", r, key, ix.rowOf[key])
		}
		counts[ix.groups[r]]++
	}
	if len(counts) != len(ix.groupN) {
		t.Fatalf("group counts %v, want %v", ix.groupN, counts)
	}
	for g, c := range counts {
		if ix.groupN[g] != c {
			t.Fatalf("group %d counted %d, has %d", g, ix.groupN[g], c)
		}
	}
	iv := ix.ivf
	if iv == nil {
		return
	}
	if len(iv.where) != n {
		t.Fatalf("where has %d rows, index %d", len(iv.where), n)
	}
	if iv.codes() != ix.codes {
		t.Fatalf("codes %v, the index wants %v", iv.codes(), ix.codes)
	}
	members := 0
	code := make([]int8, iv.cw)
	buf := make([]float32, ceilPow2(ix.dim))
	for c := range iv.clusters {
		cl := &iv.clusters[c]
		if len(cl.codes) != len(cl.rows)*iv.cw || len(cl.scales) != len(cl.rows) || len(cl.groups) != len(cl.rows) {
			t.Fatalf("cluster %d: %d rows, %d codes, %d scales, %d groups", c, len(cl.rows), len(cl.codes), len(cl.scales), len(cl.groups))
		}
		if !slices.IsSorted(cl.groups) {
			t.Fatalf("cluster %d: members not in group order: %v", c, cl.groups)
		}
		for p, r := range cl.rows {
			if cl.groups[p] != ix.groups[r] {
				t.Fatalf("cluster %d slot %d (row %d) has group %d, the row %d", c, p, r, cl.groups[p], ix.groups[r])
			}
			if iv.where[r] != (loc{int32(c), int32(p)}) {
				t.Fatalf("cluster %d slot %d holds row %d, which points at %v", c, p, r, iv.where[r])
			}
			v := ix.row(r)
			if near := iv.nearest(v); near != int32(c) {
				t.Fatalf("row %d in cluster %d, nearest is %d", r, c, near)
			}
			scale := iv.encode(code, v, int32(c), buf)
			if scale != cl.scales[p] || !slices.Equal(code, cl.code(int32(p), iv.cw)) {
				t.Fatalf("row %d: stale code", r)
			}
		}
		members += len(cl.rows)
	}
	if members != n {
		t.Fatalf("clusters hold %d rows, index %d", members, n)
	}
}

func TestExactMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct{ n, dim, k int }{
		{0, 8, 5},
		{1, 3, 5},
		{50, 13, 10},
		{500, 100, 1},
		{3000, 128, 20}, // several scan chunks, so several workers
		{700, 1024, 700},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.dim)))
		for _, workers := range []int{1, 3} {
			ix := New(tc.dim, Options{Workers: workers})
			for i := range tc.n {
				if err := ix.Upsert(int64(i*7), 0, randVec(rng, tc.dim)); err != nil {
					t.Fatal(err)
				}
			}
			for range 5 {
				q := randVec(rng, tc.dim)
				got := ix.Search(q, tc.k, nil)
				sameTopK(t, ix, q, got, bruteForce(t, ix, q, tc.k, nil), nil)
				if !slices.Equal(got, ix.SearchExact(q, tc.k, nil)) {
					t.Fatalf("n=%d dim=%d: Search and SearchExact differ", tc.n, tc.dim)
				}
			}
		}
	}
}

func TestExactTiesAreDeterministic(t *testing.T) {
	ix := New(4, Options{Workers: 4})
	for i := range 5000 {
		ix.Upsert(int64(5000-i), 0, []float32{1, 0, 0, 0})
	}
	got := ix.Search([]float32{2, 0, 0, 0}, 3, nil)
	want := []Hit{{1, 1}, {2, 1}, {3, 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestGroupFilter(t *testing.T) {
	for _, mode := range []Mode{Exact, IVF} {
		ix := New(32, Options{Mode: mode, NList: 16})
		rng := rand.New(rand.NewPCG(7, 7))
		for i := range 6000 {
			ix.Upsert(int64(i), uint32(i%10), randVec(rng, 32))
		}
		ix.Build()
		for _, allow := range []*Groups{nil, NewGroups(2, 5), NewGroups(9), NewGroups(3, 100), NewGroups()} {
			q := randVec(rng, 32)
			want := bruteForce(t, ix, q, 15, allow)
			got := ix.SearchExact(q, 15, allow)
			sameTopK(t, ix, q, got, want, allow)
			// IVF is approximate: only membership of the allowed groups is exact.
			for _, h := range ix.Search(q, 15, allow) {
				if !allow.Has(uint32(h.Key % 10)) {
					t.Fatalf("mode %d: key %d outside %v", mode, h.Key, allow)
				}
			}
		}
		if got := ix.Search(randVec(rng, 32), 5, NewGroups()); len(got) != 0 {
			t.Fatalf("empty group set returned %v", got)
		}
	}
}

func TestGroups(t *testing.T) {
	g := NewGroups(0, 63, 64, 1000)
	for _, id := range []uint32{0, 63, 64, 1000} {
		if !g.Has(id) {
			t.Errorf("missing %d", id)
		}
	}
	for _, id := range []uint32{1, 62, 65, 999, 1001, math.MaxUint32} {
		if g.Has(id) {
			t.Errorf("has %d", id)
		}
	}
	if g.Len() != 4 {
		t.Errorf("Len %d", g.Len())
	}
	var all *Groups
	if !all.Has(12345) || all.Len() != 0 {
		t.Error("nil set must allow everything")
	}
}

// TestWrites mixes inserts, replacements, group moves and removals, checking
// after each round that searches match a brute-force scan, removed keys never
// come back and replaced vectors are found where they now are.
func TestWrites(t *testing.T) {
	for _, mode := range []Mode{Exact, IVF} {
		t.Run([]string{"exact", "ivf"}[mode], func(t *testing.T) {
			const dim = 24
			rng := rand.New(rand.NewPCG(3, 4))
			ix := New(dim, Options{Mode: mode, NList: 32, NProbe: 32})
			live := map[int64]bool{}
			for i := range 5000 {
				ix.Upsert(int64(i), uint32(i%4), randVec(rng, dim))
				live[int64(i)] = true
			}
			ix.Build()
			removed := map[int64]bool{}
			for round := range 6 {
				for range 300 {
					key := int64(rng.IntN(6000))
					switch rng.IntN(4) {
					case 0:
						if ix.Remove(key) != live[key] {
							t.Fatalf("Remove(%d) disagrees with live=%v", key, live[key])
						}
						delete(live, key)
						removed[key] = true
					case 1:
						v := randVec(rng, dim)
						ix.Upsert(key, uint32(key%4), v)
						live[key], removed[key] = true, false
						if h := ix.Search(v, 1, nil); len(h) != 1 || h[0].Key != key || h[0].Sim < 0.9999 {
							t.Fatalf("updated key %d not found at its new vector: %v", key, h)
						}
					case 2:
						if ix.SetGroup(key, uint32(rng.IntN(6))) != live[key] {
							t.Fatalf("SetGroup(%d) disagrees with live=%v", key, live[key])
						}
					default:
						ix.Upsert(key, uint32(key%4), randVec(rng, dim))
						live[key], removed[key] = true, false
					}
				}
				if ix.Len() != len(live) {
					t.Fatalf("Len %d, want %d", ix.Len(), len(live))
				}
				checkInvariants(t, ix)
				for _, allow := range []*Groups{nil, NewGroups(1, 5)} {
					q := randVec(rng, dim)
					want := bruteForce(t, ix, q, 10, allow)
					// NProbe = NList makes the IVF search exhaustive, so it
					// must match exactly too.
					sameTopK(t, ix, q, ix.Search(q, 10, allow), want, allow)
					for _, h := range ix.Search(q, 50, allow) {
						if removed[h.Key] {
							t.Fatalf("round %d: removed key %d returned", round, h.Key)
						}
					}
				}
			}
			for key := range removed {
				if _, ok := ix.Vector(key); ok && removed[key] {
					t.Fatalf("removed key %d still has a vector", key)
				}
			}
		})
	}
}

func TestReserve(t *testing.T) {
	ix, rng := builtIVF(13, 5000)
	before, _ := ix.Vector(1234)
	ix.Reserve(20000)
	if st := ix.Stats(); st.VectorBytes < 20000*8*4 || st.Len != 5000 {
		t.Fatalf("after Reserve: %+v", st)
	}
	if after, _ := ix.Vector(1234); !slices.Equal(before, after) {
		t.Fatal("Reserve changed a vector")
	}
	for i := 5000; i < 6000; i++ {
		ix.Upsert(int64(i), 1, randVec(rng, 8))
	}
	ix.Reserve(10) // smaller than Len: no-op
	checkInvariants(t, ix)
}

func TestZeroVector(t *testing.T) {
	for _, mode := range []Mode{Exact, IVF} {
		ix := New(16, Options{Mode: mode, NList: 16})
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range 5000 {
			ix.Upsert(int64(i), 0, randVec(rng, 16))
		}
		zero := make([]float32, 16)
		ix.Upsert(-1, 0, zero)
		ix.Build()
		if v, ok := ix.Vector(-1); !ok || !slices.Equal(v, zero) {
			t.Fatalf("zero vector stored as %v", v)
		}
		for _, h := range ix.Search(zero, 5, nil) {
			if h.Sim != 0 {
				t.Fatalf("zero query: %v", h)
			}
		}
		for _, h := range ix.SearchExact(randVec(rng, 16), 5001, nil) {
			if math.IsNaN(float64(h.Sim)) || (h.Key == -1 && h.Sim != 0) {
				t.Fatalf("bad hit %v", h)
			}
		}
	}
}

func TestRejects(t *testing.T) {
	ix := New(4, Options{})
	ix.Upsert(1, 0, []float32{1, 2, 3, 4})
	for _, tc := range []struct {
		vec  []float32
		want error
	}{
		{[]float32{1, 2, 3}, ErrDimension},
		{[]float32{1, 2, 3, 4, 5}, ErrDimension},
		{nil, ErrDimension},
		{[]float32{1, float32(math.NaN()), 0, 0}, ErrNotFinite},
		{[]float32{float32(math.Inf(1)), 0, 0, 0}, ErrNotFinite},
		{[]float32{0, 0, 0, float32(math.Inf(-1))}, ErrNotFinite},
	} {
		if err := ix.Upsert(1, 0, tc.vec); !errors.Is(err, tc.want) {
			t.Errorf("Upsert(%v) = %v, want %v", tc.vec, err, tc.want)
		}
		if ix.Search(tc.vec, 1, nil) != nil {
			t.Errorf("Search(%v) answered", tc.vec)
		}
	}
	if v, _ := ix.Vector(1); ix.Len() != 1 || math.Abs(float64(Cosine(v, []float32{1, 2, 3, 4})-1)) > 1e-6 {
		t.Fatalf("rejected writes changed the index: %v", v)
	}
	if ix.Search([]float32{1, 0, 0, 0}, 0, nil) != nil {
		t.Error("k=0 answered")
	}
	// Components whose squares overflow float32 are still finite vectors.
	if err := ix.Upsert(2, 0, []float32{3e38, 3e38, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if v, _ := ix.Vector(2); math.Abs(float64(v[0])-math.Sqrt(0.5)) > 1e-6 {
		t.Fatalf("huge vector normalised to %v", v)
	}
}

func TestCosine(t *testing.T) {
	for _, tc := range []struct {
		a, b []float32
		want float32
	}{
		{[]float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{[]float32{1, 2, 3}, []float32{-1, -2, -3}, -1},
		{[]float32{1, 0}, []float32{0, 5}, 0},
		{[]float32{1, 1}, []float32{1, 0}, float32(math.Sqrt(0.5))},
		{[]float32{0, 0}, []float32{1, 0}, 0},
		{[]float32{1, 2}, []float32{1, 2, 3}, 0},
		{nil, nil, 0},
		{[]float32{float32(math.NaN()), 1}, []float32{1, 1}, 0},
		{[]float32{float32(math.Inf(1)), 1}, []float32{1, 1}, 0},
		{[]float32{3e38, 3e38}, []float32{3e38, 3e38}, 1},
	} {
		if got := Cosine(tc.a, tc.b); math.Abs(float64(got-tc.want)) > 1e-6 {
			t.Errorf("Cosine(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDot8(t *testing.T) {
	t.Logf("AVX2 int8 kernel in use: %v", hasAVX2)
	rng := rand.New(rand.NewPCG(5, 5))
	buf := make([]int8, 80)
	qbuf := make([]int16, 80)
	for n := range 70 {
		for off := range 3 { // unaligned starts as well
			c, q := buf[off:off+n], qbuf[off:off+n+1] // q may be longer
			var want int32
			for i := range c {
				c[i], q[i] = int8(rng.IntN(255)-127), int16(rng.IntN(255)-127)
				want += int32(c[i]) * int32(q[i])
			}
			if got := dot8(c, q); got != want {
				t.Errorf("dot8 n=%d off=%d: %v, want %v", n, off, got, want)
			}
			if got := dot8Generic(c, q); got != want {
				t.Errorf("dot8Generic n=%d off=%d: %v, want %v", n, off, got, want)
			}
		}
	}
	// Extremes: every product at ±127², the largest magnitudes possible.
	c, q := make([]int8, 1024), make([]int16, 1024)
	for i := range c {
		c[i], q[i] = -127, 127
	}
	if got, want := dot8(c, q), int32(-127*127*1024); got != want {
		t.Errorf("dot8 extremes: %v, want %v", got, want)
	}
}

// TestAsmKernels compares the assembly kernels (where there are any) and the
// portable ones with float64 references, over lengths that exercise every
// loop and unaligned starts.
func TestAsmKernels(t *testing.T) {
	t.Logf("assembly kernels in use: %v", hasFMA)
	rng := rand.New(rand.NewPCG(12, 12))
	buf := randVec(rng, 300)
	for n := range 140 {
		for off := range 8 {
			a, b := buf[off:off+n], buf[160-off:160-off+n]
			var want, mag float64
			for i := range a {
				want += float64(a[i]) * float64(b[i])
				mag += math.Abs(float64(a[i]) * float64(b[i]))
			}
			tol := 1e-6 * (mag + 1)
			if got, gen := dot(a, b), dotGeneric(a, b); math.Abs(float64(got)-want) > tol || math.Abs(float64(gen)-want) > tol {
				t.Fatalf("n=%d off=%d: dot %v, dotGeneric %v, want %v", n, off, got, gen, want)
			}
			var wantSum, absSum float64
			for _, x := range a {
				wantSum += float64(x)
				absSum += math.Abs(float64(x))
			}
			tol = 1e-6 * (absSum + 1)
			if got, gen := sum(a), sumGeneric(a); math.Abs(float64(got)-wantSum) > tol || math.Abs(float64(gen)-wantSum) > tol {
				t.Fatalf("n=%d off=%d: sum %v, sumGeneric %v, want %v", n, off, got, gen, wantSum)
			}
		}
	}
}

func TestQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, dim := range []int{1, 7, 128, 1024} {
		v := randVec(rng, dim)
		code := make([]int8, dim)
		scale := quantize(code, v)
		qc := quantizeQuery(v)
		for i, x := range v {
			if d := math.Abs(float64(x - scale*float32(code[i]))); d > float64(scale)/2+1e-6 {
				t.Fatalf("dim %d comp %d: %v decoded as %v", dim, i, x, scale*float32(code[i]))
			}
			if qc[i] != int16(code[i]) {
				t.Fatalf("query and row quantisation differ at %d", i)
			}
		}
	}
	code := []int8{1, 2}
	if s := quantize(code, []float32{0, 0}); s != 0 || code[0] != 0 || code[1] != 0 {
		t.Fatalf("zero vector quantised to %v × %v", code, s)
	}
}

// TestConcurrent runs searches of both kinds against writes and trainings;
// it is meant for -race.
func TestConcurrent(t *testing.T) {
	const dim = 32
	ix := New(dim, Options{Mode: IVF, NList: 16, Workers: 2})
	rng := rand.New(rand.NewPCG(10, 10))
	for i := range 5000 {
		ix.Upsert(int64(i), uint32(i%5), randVec(rng, dim))
	}
	ix.Build()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for s := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(s), 99))
			for {
				select {
				case <-stop:
					return
				default:
				}
				q := randVec(rng, dim)
				for _, hs := range [][]Hit{ix.Search(q, 10, nil), ix.SearchExact(q, 10, NewGroups(1, 2))} {
					for i := 1; i < len(hs); i++ {
						if hs[i].Sim > hs[i-1].Sim {
							t.Errorf("unsorted hits %v", hs)
							return
						}
					}
				}
			}
		})
	}
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 99))
		for i := range 3000 {
			key := int64(rng.IntN(8000))
			switch i % 4 {
			case 0:
				ix.Remove(key)
			case 1:
				ix.SetGroup(key, uint32(rng.IntN(5)))
			default:
				ix.Upsert(key, uint32(key%5), randVec(rng, dim))
			}
		}
	})
	wg.Go(func() { ix.Build() })
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	ix.Build()
	checkInvariants(t, ix)
}

// Group says a key's group, and false for a key the index does not hold.
func TestGroup(t *testing.T) {
	ix := New(2, Options{})
	for k, g := range map[int64]uint32{1: 0, 2: 1, 3: 2} {
		if err := ix.Upsert(k, g, []float32{1, float32(k)}); err != nil {
			t.Fatal(err)
		}
	}
	for k, want := range map[int64]uint32{1: 0, 2: 1, 3: 2} {
		if g, ok := ix.Group(k); !ok || g != want {
			t.Fatalf("key %d: group %d %v, want %d", k, g, ok, want)
		}
	}
	ix.SetGroup(2, 5)
	if g, ok := ix.Group(2); !ok || g != 5 {
		t.Fatalf("after SetGroup: %d %v", g, ok)
	}
	if _, ok := ix.Group(9); ok {
		t.Fatal("an absent key has a group")
	}
}
