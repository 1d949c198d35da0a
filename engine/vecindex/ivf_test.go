package vecindex

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestIVFRecall checks recall@10 of the default IVF settings against exact
// search on clustered data. The clusters overlap enough (spread 1.2) that
// probing a single cluster would only reach ≈0.94.
// Both kinds of code are checked: bit codes (what the float32 mode uses)
// must take under an eighth of the vectors' bytes even at 64 dimensions,
// where the 16 bytes per row of row lists and scales weigh most, int8
// codes under half.
func TestIVFRecall(t *testing.T) {
	n, dim, queries := 20000, 128, 200
	if raceEnabled || testing.Short() {
		n, dim, queries = 8000, 64, 100
	}
	for _, codes := range []Codes{CodesBits, CodesInt8} {
		ix := New(dim, Options{Mode: IVF, Codes: codes})
		qs, err := FillClustered(ix, n, queries, 11, 1.2)
		if err != nil {
			t.Fatal(err)
		}
		ix.Build()
		checkInvariants(t, ix)
		st := ix.Stats()
		limit := st.VectorBytes / 2
		if codes == CodesBits {
			limit = st.VectorBytes / 8
		}
		if !st.Trained || st.IVFBytes >= limit {
			t.Fatalf("codes %v: stats %+v", codes, st)
		}
		for _, allow := range []*Groups{nil, NewGroups(1, 2, 3, 4)} {
			found, want := 0, 0
			for _, q := range qs {
				exact := ix.SearchExact(q, 10, allow)
				found += Overlap(exact, ix.Search(q, 10, allow))
				want += len(exact)
			}
			recall := float64(found) / float64(want)
			t.Logf("codes %v n=%d dim=%d filtered=%v: recall@10 %.4f", codes, n, dim, allow != nil, recall)
			if recall < 0.98 {
				t.Errorf("codes %v: recall@10 %.4f < 0.98", codes, recall)
			}
		}
		ix.Close()
	}
}

func TestIVFSmallIsExact(t *testing.T) {
	ix, rng := builtIVF(2, 1000)
	if ix.Stats().Trained {
		t.Fatal("trained on 1000 rows")
	}
	q := randVec(rng, 8)
	sameTopK(t, ix, q, ix.Search(q, 10, nil), bruteForce(t, ix, q, 10, nil), nil)
}

// TestRetrainsItself grows a trained index past twice its size and waits for
// the background retraining, which must leave consistent clusters.
func TestRetrainsItself(t *testing.T) {
	ix, rng := builtIVF(8, 3000) // too small to train: only arms retraining
	for i := 3000; i < 9000; i++ {
		ix.Upsert(int64(i), 0, randVec(rng, 8))
	}
	trainedOn := func() int {
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		if ix.ivf == nil {
			return 0
		}
		return ix.ivf.trainedOn
	}
	deadline := time.Now().Add(30 * time.Second)
	for trainedOn() < 8192 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ix.buildMu.Lock() // wait for the last background training to finish
	ix.buildMu.Unlock()
	if got := trainedOn(); got < 8192 {
		t.Fatalf("trained on %d rows, want a retraining past 8192", got)
	}
	checkInvariants(t, ix)
}

// TestWritesDuringTraining runs the training phases by hand with writes in
// between, as happens when searches and writes continue during a Build.
func TestWritesDuringTraining(t *testing.T) {
	const dim = 16
	ix := New(dim, Options{Mode: IVF, NList: 20})
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 6000 {
		ix.Upsert(int64(i), uint32(i%3), randVec(rng, dim))
	}
	ix.Build()
	next := int64(6000)
	write := func() {
		for i := range 300 {
			switch i % 3 {
			case 0:
				ix.Remove(int64(rng.IntN(int(next)))) // also moves the last row
			case 1:
				ix.Upsert(int64(rng.IntN(int(next))), 1, randVec(rng, dim))
			default:
				ix.Upsert(next, 2, randVec(rng, dim))
				next++
			}
		}
	}
	ix.buildMu.Lock()
	sample, nlist, trng := ix.startTraining()
	cent := kmeans(sample, dim, nlist, ix.workers, trng)
	write()
	assign, seen := ix.assignAll(cent)
	write()
	iv := newIVF(dim, cent, assign, ix.codes)
	ix.quantizeAll(iv, len(seen))
	write()
	ix.finishTraining(iv, seen)
	ix.buildMu.Unlock()
	checkInvariants(t, ix)
	// Shrinking below the rows seen at assignment must drop their slots.
	ix.buildMu.Lock()
	sample, nlist, trng = ix.startTraining()
	cent = kmeans(sample, dim, nlist, ix.workers, trng)
	assign, seen = ix.assignAll(cent)
	for k := range next {
		if ix.Len() <= minIVFRows {
			break
		}
		ix.Remove(k)
	}
	iv = newIVF(dim, cent, assign, ix.codes)
	ix.quantizeAll(iv, len(seen))
	ix.finishTraining(iv, seen)
	ix.buildMu.Unlock()
	checkInvariants(t, ix)
}

// TestExactBelow: an IVF index with a raised exact threshold stays exact
// (no clustering) below it, and trains itself once writes carry it past.
func TestExactBelow(t *testing.T) {
	const dim = 16
	ix := New(dim, Options{Mode: IVF, NList: 16, Workers: 2, ExactBelow: 6000})
	rng := rand.New(rand.NewPCG(21, 21))
	for i := range 5000 {
		ix.Upsert(int64(i), 0, randVec(rng, dim))
	}
	ix.Build()
	if ix.Stats().Trained {
		t.Fatal("trained at 5000 rows with ExactBelow 6000")
	}
	q := randVec(rng, dim)
	if got, want := ix.Search(q, 10, nil), ix.SearchExact(q, 10, nil); !slices.Equal(got, want) {
		t.Fatalf("search below the threshold is not exact:\n%v\n%v", got, want)
	}
	for i := 5000; i < 6100; i++ {
		ix.Upsert(int64(i), 0, randVec(rng, dim))
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ix.Stats().Trained {
		if time.Now().After(deadline) {
			t.Fatal("no training after growing past ExactBelow")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Writes piled into one region skew the clustering: the index retrains
// long before it has doubled.
func TestRetrainsWhenSkewed(t *testing.T) {
	ix, rng := builtIVF(9, 8000)
	ix.buildMu.Lock() // trained
	ix.buildMu.Unlock()
	ix.mu.RLock()
	limit, trainedOn := ix.ivf.limit, ix.ivf.trainedOn
	ix.mu.RUnlock()
	if trainedOn != 8000 || limit <= 0 || limit+trainedOn/8 >= trainedOn/2 {
		t.Fatalf("trained on %d, limit %d: the test needs a skew well before the rows double", trainedOn, limit)
	}
	// One point, said again and again with a little noise.
	at := randVec(rng, 8)
	for i := range limit + trainedOn/8 {
		v := slices.Clone(at)
		v[i%8] += float32(rng.NormFloat64()) * 1e-3
		ix.Upsert(int64(100_000+i), 0, v)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ix.buildMu.Lock()
		ix.buildMu.Unlock()
		ix.mu.RLock()
		got := ix.ivf.trainedOn
		ix.mu.RUnlock()
		if got > 8000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no retraining after %d writes into one region (limit %d)", limit+trainedOn/8, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkInvariants(t, ix)
}

// A cluster's runs are its members of each allowed group, every member
// once with no filter, none with an empty one.
func TestClusterRuns(t *testing.T) {
	cl := cluster{groups: []uint32{0, 0, 1, 1, 1, 3, 5, 5}}
	got := func(allow *Groups) (out [][2]int) {
		cl.runs(allow, func(lo, hi int) { out = append(out, [2]int{lo, hi}) })
		return out
	}
	if r := got(NewGroups(1, 5)); !slices.Equal(r, [][2]int{{2, 5}, {6, 8}}) {
		t.Fatalf("allow 1, 5: %v", r)
	}
	if r := got(NewGroups(0, 3)); !slices.Equal(r, [][2]int{{0, 2}, {5, 6}}) {
		t.Fatalf("allow 0, 3: %v", r)
	}
	if r := got(nil); !slices.Equal(r, [][2]int{{0, 8}}) {
		t.Fatalf("no filter: %v", r)
	}
	if r := got(NewGroups()); len(r) != 0 {
		t.Fatalf("empty filter: %v", r)
	}
	if r := got(NewGroups(2, 4)); len(r) != 0 {
		t.Fatalf("groups not in the cluster: %v", r)
	}
	empty := cluster{}
	empty.runs(nil, func(lo, hi int) { t.Fatalf("empty cluster: run %d..%d", lo, hi) })
}

// Compacting a scanning worker's candidates (scanBufs.compact) changes
// nothing a search returns: the same hits, in the same order with the same
// similarities, whether a worker compacts after every cluster or never,
// with and without a filter and a minimum similarity. The re-scoring keeps
// few candidates (Rescore 48) against thousands scanned, so compaction
// and its floor act on every search.
func TestCompactionIsExact(t *testing.T) {
	n, dim, queries := 20000, 128, 150
	if raceEnabled || testing.Short() {
		n, queries = 8000, 60
	}
	ix := New(dim, Options{Mode: IVF, Codes: CodesBits, NProbe: 40, Rescore: 48, Workers: 2})
	defer ix.Close()
	qs, err := FillClustered(ix, n, queries, 5, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	ix.Build()
	search := func(every int, q []float32, allow *Groups, minSim float32) []Hit {
		ix.compactEvery = every
		return ix.SearchAbove(q, 10, allow, 0, minSim)
	}
	compared := 0
	for i, q := range qs {
		for _, allow := range []*Groups{nil, NewGroups(1, 2, 3)} {
			for _, minSim := range []float32{float32(math.Inf(-1)), 0.3} {
				never := search(1<<30, q, allow, minSim)
				always := search(1, q, allow, minSim)
				if !slices.Equal(never, always) {
					t.Fatalf("query %d (filter %v, minSim %v):\nnever compacting %v\ncompacting      %v", i, allow != nil, minSim, never, always)
				}
				compared += len(never)
			}
		}
	}
	if compared == 0 {
		t.Fatal("no search found anything")
	}
}
