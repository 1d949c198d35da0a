package vecindex

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/clawmem/clawmem/internal/workpool"
)

const (
	// samplePerCluster training rows per cluster are enough for stable
	// centroids and few enough that k-means costs about as much as assigning
	// every row once.
	samplePerCluster = 48
	kmeansIters      = 8
	// blockRows rows are scored against each centroid in turn, so the
	// centroid is read from L1 once per block instead of once per row.
	blockRows = 8
	// assignBatch bounds, in multiply-adds, the work done per read-lock hold
	// while assigning rows to clusters (~20 ms with the assembly kernel), so
	// writers waiting for the lock are not held up for long.
	assignBatch = 1 << 28
)

// Build trains the IVF clustering on the current rows and quantises them;
// in Exact mode it does nothing. Call it once the bulk load at open is done;
// after that the index retrains itself (see the package documentation).
// Below 4096 rows it only records that training is wanted, and searches stay
// exact until the index grows. It is safe to call at any time, concurrently
// with searches and writes. Training cannot fail today; the error leaves
// room for it to without changing callers.
func (ix *Index) Build() error {
	if ix.mode == IVF {
		ix.train()
	}
	return nil
}

// train runs in phases so that little of it is exclusive: start recording
// writes (write lock) and copy a sample (read lock), cluster it (no lock),
// assign every row to a cluster and then quantise it into its slot (read
// lock, in batches), and finally repair the rows written meanwhile and swap
// the clusters in (write lock).
func (ix *Index) train() {
	ix.buildMu.Lock()
	defer ix.buildMu.Unlock()
	sample, nlist, rng := ix.startTraining()
	if sample == nil {
		return
	}
	cent := kmeans(sample, ix.dim, nlist, ix.workers, rng)
	assign, seen := ix.assignAll(cent)
	iv := newIVF(ix.dim, cent, assign, ix.codes)
	ix.quantizeAll(iv, len(seen))
	ix.finishTraining(iv, seen)
	if ix.memory == Int8 {
		// The training read every vector; the pages go back to the page
		// cache's care rather than stay in this process.
		release(ix.cold.mapped)
	}
}

// startTraining starts recording touched keys, under the write lock so the
// recording starts from a consistent state, then copies the training sample
// under the read lock. It returns a nil sample when the index is too small to
// cluster.
func (ix *Index) startTraining() (sample []float32, nlist int, rng *rand.Rand) {
	ix.mu.Lock()
	ix.trained = true
	ix.writes = 0
	n := len(ix.keys)
	if n < ix.exactBelow() {
		ix.ivf = nil
		ix.mu.Unlock()
		return nil, 0, nil
	}
	ix.touched = map[int64]struct{}{}
	ix.mu.Unlock()

	dim := ix.dim
	nlist = ix.nlistFor(n)
	rng = rand.New(rand.NewPCG(uint64(n), uint64(nlist)))
	pick := rng.Perm(n)[:min(n, nlist*samplePerCluster)]
	slices.Sort(pick)
	sample = make([]float32, len(pick)*dim)
	ix.mu.RLock()
	m := 0
	for _, r := range pick {
		if r < len(ix.keys) {
			copy(sample[m*dim:], ix.row(int32(r)))
			m++
		}
	}
	ix.mu.RUnlock()
	if m == 0 { // every row was removed since the lock was released
		ix.mu.Lock()
		ix.touched = nil
		ix.mu.Unlock()
		return nil, 0, nil
	}
	return sample[:m*dim], min(nlist, m), rng
}

// kmeans clusters the unit rows of x into k unit centroids (spherical
// k-means, k-means++ seeding) and returns them row-major.
func kmeans(x []float32, dim, k, workers int, rng *rand.Rand) []float32 {
	m := len(x) / dim
	row := func(i int) []float32 { return x[i*dim : (i+1)*dim : (i+1)*dim] }
	cent := make([]float32, k*dim)
	per := max(1, scanChunk/dim)
	chunks := (m + per - 1) / per

	// k-means++: each next centre is a row drawn with probability ∝ its
	// squared distance to the nearest centre so far; for unit vectors
	// ‖a−b‖² = 2 − 2·cos, so the weight is 1 − (best cosine).
	near := make([]float32, m)
	for i := range near {
		near[i] = -1
	}
	copy(cent, row(rng.IntN(m)))
	for c := 1; c < k; c++ {
		prev := cent[(c-1)*dim : c*dim]
		workpool.Run(workers, chunks, func(_, t int) {
			for i := t * per; i < min((t+1)*per, m); i++ {
				near[i] = max(near[i], dot(row(i), prev))
			}
		})
		var total float64
		for _, s := range near {
			total += float64(max(0, 1-s))
		}
		pick := rng.IntN(m)
		if total > 0 {
			u := rng.Float64() * total
			for i, s := range near {
				if u -= float64(max(0, 1-s)); u < 0 {
					pick = i
					break
				}
			}
		}
		copy(cent[c*dim:], row(pick))
	}

	assign := make([]int32, m)
	prev := make([]int32, m)
	sims := make([]float32, m)
	sums := make([]float64, k*dim)
	counts := make([]int, k)
	for it := range kmeansIters {
		copy(prev, assign)
		nearestRows(x, dim, cent, assign, sims, workers)
		changed := 0
		for i := range assign {
			if assign[i] != prev[i] {
				changed++
			}
		}
		if it > 0 && changed*200 < m { // under 0.5% moved: the centroids have settled
			break
		}
		clear(sums)
		clear(counts)
		for i := range m {
			c := int(assign[i])
			counts[c]++
			s := sums[c*dim : (c+1)*dim]
			for j, v := range row(i) {
				s[j] += float64(v)
			}
		}
		var empty []int
		for c := range k {
			if counts[c] == 0 {
				empty = append(empty, c)
				continue
			}
			s := sums[c*dim : (c+1)*dim]
			var ss float64
			for _, v := range s {
				ss += v * v
			}
			if ss == 0 {
				continue
			}
			inv := 1 / math.Sqrt(ss)
			for j, v := range s {
				cent[c*dim+j] = float32(v * inv)
			}
		}
		if len(empty) > 0 {
			// An empty cluster is wasted; restart it on the rows worst served
			// by their centroids.
			worst := make([]int, m)
			for i := range worst {
				worst[i] = i
			}
			slices.SortFunc(worst, func(a, b int) int { return cmp.Compare(sims[a], sims[b]) })
			for j, c := range empty {
				copy(cent[c*dim:(c+1)*dim], row(worst[j]))
			}
		}
	}
	return cent
}

// nearestRows writes, for each unit row of x, the most similar centroid and
// (if sims is not nil) that similarity.
func nearestRows(x []float32, dim int, cent []float32, out []int32, sims []float32, workers int) {
	m := len(x) / dim
	k := len(cent) / dim
	workpool.Run(workers, (m+blockRows-1)/blockRows, func(_, b int) {
		lo, hi := b*blockRows, min((b+1)*blockRows, m)
		var bs [blockRows]float32
		var bi [blockRows]int32
		for i := range bs {
			bs[i] = float32(math.Inf(-1))
		}
		for c := range k {
			cv := cent[c*dim : (c+1)*dim]
			for i := lo; i < hi; i++ {
				if s := dot(x[i*dim:(i+1)*dim], cv); s > bs[i-lo] {
					bs[i-lo], bi[i-lo] = s, int32(c)
				}
			}
		}
		copy(out[lo:hi], bi[:hi-lo])
		if sims != nil {
			copy(sims[lo:hi], bs[:hi-lo])
		}
	})
}

// assignAll finds every row's cluster, holding the read lock one batch at a
// time. Rows can change between batches, so it also returns the key it saw
// at each row for finishTraining to check.
func (ix *Index) assignAll(cent []float32) (assign []int32, seen []int64) {
	dim := ix.dim
	batch := max(blockRows, assignBatch/len(cent))
	rows := ix.Len()
	assign = make([]int32, 0, rows)
	seen = make([]int64, 0, rows)
	for lo := 0; ; lo += batch {
		ix.mu.RLock()
		n := len(ix.keys)
		if lo >= n {
			ix.mu.RUnlock()
			return assign, seen
		}
		hi := min(lo+batch, n)
		seen = append(seen, ix.keys[lo:hi]...)
		assign = append(assign, make([]int32, hi-lo)...)
		nearestRows(ix.data[lo*dim:hi*dim], dim, cent, assign[lo:hi], nil, ix.workers)
		ix.mu.RUnlock()
	}
}

// newIVF lays out empty clusters for the rows as assigned.
func newIVF(dim int, cent []float32, assign []int32, codes Codes) *ivf {
	iv := &ivf{
		dim: dim, nlist: len(cent) / dim, cent: cent,
		where: make([]loc, len(assign)), trainedOn: len(assign),
	}
	iv.setCodes(codes)
	counts := make([]int32, iv.nlist)
	for r, c := range assign {
		iv.where[r] = loc{c, counts[c]}
		counts[c]++
	}
	iv.clusters = make([]cluster, iv.nlist)
	for c, cnt := range counts {
		iv.clusters[c] = cluster{
			rows: make([]int32, cnt), codes: make([]int8, int(cnt)*iv.cw), scales: make([]float32, cnt),
			groups: make([]uint32, cnt), // filled by finishTraining
		}
	}
	for r, at := range iv.where {
		iv.clusters[at.cluster].rows[at.pos] = int32(r)
	}
	return iv
}

// quantizeAll writes the code of each of the first n rows into its slot,
// holding the read lock one batch at a time. Quantising, and first touching
// the fresh code pages, takes a good fraction of a second at 100k × 1024,
// too long for the write lock. A row changed meanwhile gets a code that
// finishTraining replaces.
func (ix *Index) quantizeAll(iv *ivf, n int) {
	per := max(1, scanChunk/ix.dim)
	batch := per * 16
	bufs := make([][]float32, ix.workers)
	if iv.rot != nil {
		for w := range bufs {
			bufs[w] = make([]float32, iv.rot.d)
		}
	}
	for lo := 0; lo < n; lo += batch {
		ix.mu.RLock()
		hi := min(lo+batch, n, len(ix.keys))
		workpool.Run(ix.workers, (hi-lo+per-1)/per, func(w, t int) {
			for r := lo + t*per; r < min(lo+(t+1)*per, hi); r++ {
				at := iv.where[r]
				cl := &iv.clusters[at.cluster]
				cl.scales[at.pos] = iv.encode(cl.code(at.pos, iv.cw), ix.row(int32(r)), at.cluster, bufs[w])
			}
		})
		ix.mu.RUnlock()
	}
}

// finishTraining repairs iv, built from the rows as seen, to match the rows
// now, and swaps it in. A row keeps its slot only if it still holds the key
// seen there and that key was not written since training began (a written or
// moved key is always in touched); every other row is placed afresh.
func (ix *Index) finishTraining(iv *ivf, seen []int64) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := len(ix.keys)
	var redo []int32
	for r, key := range seen {
		if r < n && ix.keys[r] == key {
			if _, t := ix.touched[key]; !t {
				continue
			}
		}
		iv.unlink(int32(r))
		if r < n {
			redo = append(redo, int32(r))
		}
	}
	if n < len(seen) {
		iv.where = iv.where[:n]
	}
	for r := len(seen); r < n; r++ {
		iv.where = append(iv.where, loc{})
		redo = append(redo, int32(r))
	}
	to := make([]int32, len(redo))
	workpool.Run(ix.workers, len(redo), func(_, i int) { to[i] = iv.nearest(ix.row(redo[i])) })
	for i, r := range redo {
		iv.insert(r, to[i], ix.row(r), ix.groups[r])
	}
	// A kept row's group may have changed during the training as well.
	iv.setGroups(ix.groups)
	iv.setLimit()
	ix.ivf = iv
	ix.touched = nil
}
