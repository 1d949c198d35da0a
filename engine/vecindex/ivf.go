package vecindex

import (
	"cmp"
	"math"
	"slices"

	"github.com/clawmem/clawmem/internal/workpool"
)

// minIVFRows is the default size below which IVF searches scan exactly: a
// few thousand rows stream in well under a millisecond, and k-means on so
// few points would give clusters too small to be worth probing.
const minIVFRows = 4096

// exactBelow is the index's size below which IVF mode scans exactly.
func (ix *Index) exactBelow() int { return max(ix.exactRows, minIVFRows) }

// ivf is a trained clustering of the rows plus a compressed code of every
// vector (int8, or bits with a rotation: see Codes), stored contiguously per
// cluster so probing a cluster is one linear read.
type ivf struct {
	dim       int
	nlist     int
	cent      []float32 // nlist×dim unit centroids
	cw        int       // code bytes per row
	rot       *rotation // bit codes' rotation; nil for int8 codes
	scratch   []float32 // encode's buffer for writers, who hold the lock
	clusters  []cluster
	where     []loc // per matrix row: its cluster and position in it
	trainedOn int   // rows at training; as many writes trigger a retraining
	// limit is a cluster's size past which the clustering no longer fits
	// the rows (writes piled into one region); skewed says one passed it,
	// which brings the retraining forward.
	limit  int
	skewed bool
}

// skewFactor: a cluster grown past twice the largest at training, and past
// this many times the fair share, skews the clustering.
const skewFactor = 8

// setLimit sets the skew limit from the clusters as they are now.
func (iv *ivf) setLimit() {
	largest, rows := 0, 0
	for c := range iv.clusters {
		largest = max(largest, len(iv.clusters[c].rows))
		rows += len(iv.clusters[c].rows)
	}
	iv.limit = max(2*largest, skewFactor*rows/max(iv.nlist, 1), 64)
	iv.skewed = false
}

// cluster holds its members' rows and codes: int8 codes with their scales
// (vector ≈ scale·code), or bit codes with their estimator's factors.
// Members are ordered by scope group, so a filtered scan reads only the
// codes of the groups it allows (runs): one agent's recall among many
// agents' memories streams its own rows' codes, not everyone's.
type cluster struct {
	rows   []int32
	codes  []int8 // len(rows)×cw
	scales []float32
	// groups are the members' scope groups, ascending: a copy of
	// Index.groups kept beside the codes, where Index.groups, indexed by
	// matrix row, cost a cache miss per member at a million rows.
	groups []uint32
}

// runs calls f with each run [lo, hi) of members of a group allow has
// (every member at once when allow is nil).
func (c *cluster) runs(allow *Groups, f func(lo, hi int)) {
	n := len(c.groups)
	if allow == nil {
		if n > 0 {
			f(0, n)
		}
		return
	}
	for lo := 0; lo < n; {
		hi := runEnd(c.groups, lo)
		if allow.Has(c.groups[lo]) {
			f(lo, hi)
		}
		lo = hi
	}
}

// runEnd is the end of the run holding groups[lo]: the index of the first
// greater group, found by a binary search (a run can be thousands of
// members long), so groups must ascend from lo on.
func runEnd(groups []uint32, lo int) int {
	g := groups[lo]
	if g == math.MaxUint32 {
		return len(groups)
	}
	hi, _ := slices.BinarySearch(groups[lo:], g+1)
	return lo + hi
}

// swap exchanges the members at positions a and b of cluster c.
func (iv *ivf) swap(c int32, a, b int32) {
	if a == b {
		return
	}
	cl := &iv.clusters[c]
	cl.rows[a], cl.rows[b] = cl.rows[b], cl.rows[a]
	cl.groups[a], cl.groups[b] = cl.groups[b], cl.groups[a]
	cl.scales[a], cl.scales[b] = cl.scales[b], cl.scales[a]
	x, y := cl.code(a, iv.cw), cl.code(b, iv.cw)
	for i := range x {
		x[i], y[i] = y[i], x[i]
	}
	iv.where[cl.rows[a]].pos = a
	iv.where[cl.rows[b]].pos = b
}

// settle moves the member at pos of cluster c, the only one whose group
// may be out of order, to a place in its group's run: past each run of a
// greater group before it (or a lesser one after it), one swap per run.
func (iv *ivf) settle(c int32, pos int32) {
	cl := &iv.clusters[c]
	g := cl.groups[pos]
	// The members before pos ascend, as do those after it.
	for pos > 0 && cl.groups[pos-1] > g {
		start, _ := slices.BinarySearch(cl.groups[:pos], cl.groups[pos-1])
		iv.swap(c, pos, int32(start))
		pos = int32(start)
	}
	for int(pos) < len(cl.groups)-1 && cl.groups[pos+1] < g {
		end := int32(runEnd(cl.groups, int(pos)+1)) - 1
		iv.swap(c, pos, end)
		pos = end
	}
}

type loc struct{ cluster, pos int32 }

func (c *cluster) code(pos int32, cw int) []int8 {
	i := int(pos) * cw
	return c.codes[i : i+cw : i+cw]
}

// setCodes sets the clustering's kind of code.
func (iv *ivf) setCodes(c Codes) {
	iv.rot = nil
	if c == CodesBits {
		iv.rot = newRotation(iv.dim)
	}
	iv.cw = codeWidth(iv.dim, c)
}

// codeWidth is the bytes per row of codes c at dimension dim.
func codeWidth(dim int, c Codes) int {
	if c == CodesBits {
		return 8 * bitWords(ceilPow2(dim))
	}
	return dim
}

// codes is the clustering's kind of code.
func (iv *ivf) codes() Codes {
	if iv.rot != nil {
		return CodesBits
	}
	return CodesInt8
}

// encode writes the code of unit vector v, a member of cluster c, and
// returns its scale or factor. buf is scratch of the rotation's size for
// bit codes; nil uses the writers' own.
func (iv *ivf) encode(code []int8, v []float32, c int32, buf []float32) float32 {
	if iv.rot == nil {
		return quantize(code, v)
	}
	if buf == nil {
		if iv.scratch == nil {
			iv.scratch = make([]float32, iv.rot.d)
		}
		buf = iv.scratch
	}
	return iv.rot.encodeBits(code, v, iv.cent[int(c)*iv.dim:(int(c)+1)*iv.dim], buf)
}

// nearest is the cluster whose centroid is most similar to v.
func (iv *ivf) nearest(v []float32) int32 {
	bi, bs := int32(0), float32(math.Inf(-1))
	for c := range iv.nlist {
		if s := dot(iv.cent[c*iv.dim:(c+1)*iv.dim], v); s > bs {
			bi, bs = int32(c), s
		}
	}
	return bi
}

// place files row r (vector v; scope group g, for a new slot) under its nearest cluster;
// exists says the row already had a place, which it may keep.
func (iv *ivf) place(r int32, v []float32, g uint32, exists bool) {
	c := iv.nearest(v)
	if exists {
		at := iv.where[r]
		if at.cluster == c {
			cl := &iv.clusters[c]
			cl.scales[at.pos] = iv.encode(cl.code(at.pos, iv.cw), v, c, nil)
			return // its group: regroup, which Upsert calls first
		}
		iv.unlink(r)
	} else {
		iv.where = append(iv.where, loc{})
	}
	iv.insert(r, c, v, g)
}

// insert adds row r (vector v, group g), which has no slot, to cluster c,
// in its group's run.
func (iv *ivf) insert(r, c int32, v []float32, g uint32) {
	cl := &iv.clusters[c]
	pos := int32(len(cl.rows))
	cl.rows = append(cl.rows, r)
	cl.groups = append(cl.groups, g)
	cl.codes = slices.Grow(cl.codes, iv.cw)[:len(cl.codes)+iv.cw]
	cl.scales = append(cl.scales, iv.encode(cl.code(pos, iv.cw), v, c, nil))
	iv.where[r] = loc{c, pos}
	iv.settle(c, pos)
	if iv.limit > 0 && len(cl.rows) > iv.limit {
		iv.skewed = true
	}
}

// unlink takes row r out of its cluster: it moves past the runs after it
// to the end, which keeps the others in order, and is cut off there.
func (iv *ivf) unlink(r int32) {
	at := iv.where[r]
	cl := &iv.clusters[at.cluster]
	cl.groups[at.pos] = math.MaxUint32
	iv.settle(at.cluster, at.pos)
	last := int32(len(cl.rows) - 1)
	cl.rows = cl.rows[:last]
	cl.groups = cl.groups[:last]
	cl.codes = cl.codes[:int(last)*iv.cw]
	cl.scales = cl.scales[:last]
}

// setGroups fills every cluster's copy of the members' groups from
// groups, indexed by matrix row, and orders the members by group: after a
// training or a segment's load (a segment written in order loads in
// order, and nothing moves).
func (iv *ivf) setGroups(groups []uint32) {
	for c := range iv.clusters {
		cl := &iv.clusters[c]
		cl.groups = make([]uint32, len(cl.rows))
		for j, r := range cl.rows {
			cl.groups[j] = groups[r]
		}
		if !slices.IsSorted(cl.groups) {
			iv.order(int32(c))
		}
	}
}

// order sorts cluster c's members by group, keeping the order within a
// group.
func (iv *ivf) order(c int32) {
	cl := &iv.clusters[c]
	perm := make([]int32, len(cl.rows))
	for i := range perm {
		perm[i] = int32(i)
	}
	slices.SortStableFunc(perm, func(a, b int32) int { return cmp.Compare(cl.groups[a], cl.groups[b]) })
	rows, groups, scales, codes := slices.Clone(cl.rows), slices.Clone(cl.groups), slices.Clone(cl.scales), slices.Clone(cl.codes)
	cw := iv.cw
	for to, from := range perm {
		cl.rows[to], cl.groups[to], cl.scales[to] = rows[from], groups[from], scales[from]
		copy(cl.codes[to*cw:(to+1)*cw], codes[int(from)*cw:int(from+1)*cw])
		iv.where[cl.rows[to]] = loc{c, int32(to)}
	}
}

// regroup records that row r's group is now g, moving it to g's run.
func (iv *ivf) regroup(r int32, g uint32) {
	if int(r) < len(iv.where) {
		at := iv.where[r]
		iv.clusters[at.cluster].groups[at.pos] = g
		iv.settle(at.cluster, at.pos)
	}
}

// relink records that the matrix moved row from to row to.
func (iv *ivf) relink(from, to int32) {
	at := iv.where[from]
	iv.where[to] = at
	iv.clusters[at.cluster].rows[at.pos] = to
}

// closest returns the p clusters whose centroids are most similar to q.
func (iv *ivf) closest(q []float32, p int) []int32 {
	t := newTopk(p)
	for c := range iv.nlist {
		s := dot(iv.cent[c*iv.dim:(c+1)*iv.dim], q)
		if t.admits(s) {
			t.push(cand{s, int64(c)})
		}
	}
	out := make([]int32, len(t.h))
	for i, c := range t.h {
		out[i] = int32(c.id)
	}
	return out
}

// scanCluster scores cl's members with their int8 codes against the
// quantised query q.
func (iv *ivf) scanCluster(cl *cluster, q []int16, allow *Groups, t *rowTopk) {
	dim := iv.dim
	cl.runs(allow, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			s := float32(dot8(cl.codes[j*dim:(j+1)*dim:(j+1)*dim], q)) * cl.scales[j]
			t.push(s, cl.rows[j])
		}
	})
}

// scanBits scores cluster c's members with their bit codes: the centroid's
// similarity to the query plus the estimate of the member's offset's, plus
// bitBound factors: an upper bound on the member's similarity that holds
// but for an error of 2.5 standard deviations.
func (iv *ivf) scanBits(c int32, q []float32, bq *bitQuery, allow *Groups, found *[]uint64, buf *[]uint64, minSim float32) {
	cl := &iv.clusters[c]
	cq := dot(iv.cent[int(c)*iv.dim:(int(c)+1)*iv.dim], q)
	n := len(cl.rows)
	if cap(*buf) < n {
		*buf = make([]uint64, n)
	}
	w := iv.cw / 8
	cl.runs(allow, func(lo, hi int) {
		scans := (*buf)[lo:hi]
		bitScan(words(cl.codes[lo*iv.cw:hi*iv.cw]), w, bq.planes, scans)
		for j, sc := range scans {
			f := cl.scales[lo+j]
			s := cq + bq.estimate(sc, f) + bitBound*f
			if s >= minSim {
				*found = append(*found, packRow(s, cl.rows[lo+j]))
			}
		}
	})
}

// bitBound is the estimate's error bound in units of a row's factor f. For
// a rotated offset o, a = ‖o‖₁/(√d‖o‖) is ≈ 0.8 (√(2/π) for Gaussian
// coordinates), and the estimate of ⟨o, q⟩ for a unit query errs with a
// standard deviation of about f·√(1−a²) ≈ 0.6·f (TestBitEstimate measures
// it); 1.5·f is about two and a half of them. Measured at 1,000,000 × 1024
// on the bench's clustered rows (a thousand rows per topic, all nearly as
// similar to the query): 1.5 re-scores 646 rows per query for recall@10
// 0.997 at 2.3 ms; 2 re-scores 844 for 1.000 at 3.7 ms; 1.2 gives 0.987.
const bitBound = 1.5

// rescoreBits re-scores the candidates, best upper bound first, until the
// next one's bound is below the k-th best exact score, or below minSim:
// none after it can enter the top k. Where rows are close together (a million rows of one
// topic) this re-scores many, where they are not, few. Blocks of
// candidates are re-scored on all workers.
func (ix *Index) rescoreBits(src *rowQueue, q []float32, k int, minSim float32) []cand {
	const block = 64
	t := newTopk(k)
	scores := make([]float32, block)
	cs := make([]cand, 0, block)
	bufs := make([][]float32, ix.workers)
	if ix.cold.file != nil {
		for w := range bufs {
			bufs[w] = make([]float32, ix.dim)
		}
	}
	for src.left > 0 {
		if next := src.peek(); next < minSim || (len(t.h) == k && next < t.h[0].s) {
			break
		}
		cs = cs[:0]
		for len(cs) < block && src.left > 0 {
			cs = append(cs, src.pop())
		}
		n := len(cs)
		if n >= 16 && ix.workers > 1 {
			per := (n + ix.workers - 1) / ix.workers
			workpool.Run(ix.workers, ix.workers, func(_, w int) {
				for i := w * per; i < min((w+1)*per, n); i++ {
					scores[i] = dot(ix.rescoreRow(int32(cs[i].id), bufs[w]), q)
				}
			})
		} else {
			for i := range n {
				scores[i] = dot(ix.rescoreRow(int32(cs[i].id), bufs[0]), q)
			}
		}
		for i := range n {
			t.push(cand{scores[i], ix.keys[cs[i].id]})
		}
	}
	return best([]topk{t}, k)
}

func (iv *ivf) bytes() int64 {
	b := int64(len(iv.cent))*4 + int64(cap(iv.where))*8
	for i := range iv.clusters {
		cl := &iv.clusters[i]
		b += int64(cap(cl.rows))*4 + int64(cap(cl.codes)) + int64(cap(cl.scales))*4 + int64(cap(cl.groups))*4
	}
	return b
}

// scanBufs are one scanning worker's buffers: the candidates it found
// (packed by packRow) and the scores of the cluster it scans, and floor,
// the bound below which a candidate it scans next cannot be among the
// search's best (see compact).
type scanBufs struct {
	found, scans []uint64
	floor        float32
}

// compactAt is how many candidates a scanning worker holds before it
// compacts them to the best limit (at least limit, and 4×limit by
// default: each compaction then drops at least three for every one it
// keeps).
func (ix *Index) compactAt(limit int) int {
	if ix.compactEvery > 0 {
		return max(ix.compactEvery, limit)
	}
	return 4 * limit
}

// compact keeps the best limit of the worker's candidates (with the rest
// of the lowest score bucket they reach: topRows) and raises its floor to
// the lowest kept bound. At least limit candidates have a bound at or
// above the floor, so one whose bound is below it is not among the best
// limit, which is all the re-scoring queue takes (newRowQueue): the scan
// need not keep it. The re-scoring sees the same candidates, so results
// are exactly those without compaction. Clusters are probed nearest first,
// so the floor rises early, and most of the million-row scan's rows (some
// 97,000 a search) are then neither queued nor selected from.
func (b *scanBufs) compact(limit int) {
	b.found = topRows(b.found, limit)
	low := b.found[0]
	for _, x := range b.found[1:] {
		low = min(low, x)
	}
	b.floor = max(b.floor, unpackRow(low).s)
}

// searchIVF probes the clusters nearest q with the codes, keeps the best
// candidates and re-scores them against the float32 matrix. Callers hold mu
// for reading.
func (ix *Index) searchIVF(q []float32, k int, allow *Groups, probes int, minSim float32) []Hit {
	iv := ix.ivf
	n := len(ix.keys)
	allowed := ix.allowedRows(allow)
	if allowed == 0 {
		return []Hit{}
	}
	// A filter keeping a fraction f of the rows keeps about f of each cluster,
	// so probe nprobe/f clusters to see as many candidates. When that reaches
	// every cluster, scoring just the allowed rows exactly is cheaper.
	if probes <= 0 {
		probes = ix.probes(iv)
	}
	probe := (min(probes, iv.nlist)*n + allowed - 1) / allowed
	if probe >= iv.nlist {
		return ix.exact(q, k, allow)
	}
	order := iv.closest(q, probe)
	nc := max(k, ix.rescoreFor(k, iv))
	workers := min(ix.workers, len(order))
	// Too few candidates to fill the top k from a search that set no
	// bound: the filter's rows sit outside the probed clusters.
	tooFew := func(found int) bool { return found < k && found < allowed && math.IsInf(float64(minSim), -1) }
	if iv.rot != nil {
		// Every candidate goes into one queue, of which the re-scoring
		// takes the best nc at most, and usually stops after a few
		// hundred: a heap of nc kept while scanning cost a push per
		// candidate, a tenth of a recall's CPU.
		bq := iv.rot.prepare(q)
		bufs := make([]*scanBufs, workers)
		for w := range bufs {
			if bufs[w], _ = ix.scanBufs.Get().(*scanBufs); bufs[w] == nil {
				bufs[w] = new(scanBufs)
			}
			bufs[w].found = bufs[w].found[:0]
			bufs[w].floor = minSim
		}
		defer func() {
			for _, b := range bufs {
				ix.scanBufs.Put(b)
			}
		}()
		compactAt := ix.compactAt(nc)
		workpool.Run(workers, len(order), func(w, j int) {
			b := bufs[w]
			iv.scanBits(order[j], q, &bq, allow, &b.found, &b.scans, b.floor)
			if len(b.found) >= compactAt {
				b.compact(nc)
			}
		})
		found := bufs[0].found
		for _, b := range bufs[1:] {
			found = append(found, b.found...)
		}
		bufs[0].found = found
		src := newRowQueue(found, nc)
		if tooFew(src.left) {
			return ix.exact(q, k, allow)
		}
		return hits(ix.rescoreBits(src, q, k, minSim))
	}
	tops := make([]rowTopk, workers)
	for w := range tops {
		tops[w] = newRowTopk(nc)
	}
	qc := quantizeQuery(q)
	workpool.Run(workers, len(order), func(w, j int) {
		iv.scanCluster(&iv.clusters[order[j]], qc, allow, &tops[w])
	})
	cs := bestRows(tops, nc)
	if tooFew(len(cs)) {
		return ix.exact(q, k, allow)
	}
	t := newTopk(k)
	var buf []float32
	if ix.cold.file != nil {
		buf = make([]float32, ix.dim)
	}
	for _, c := range cs {
		r := int32(c.id)
		t.push(cand{dot(ix.rescoreRow(r, buf), q), ix.keys[r]})
	}
	return hits(best([]topk{t}, k))
}

// nlistFor is the cluster count for n rows. About √n balances the two costs
// of a query, scoring every centroid and scanning the probed clusters.
func (ix *Index) nlistFor(n int) int {
	if ix.nlist > 0 {
		return min(ix.nlist, n)
	}
	return max(16, int(math.Round(0.8*math.Sqrt(float64(n)))))
}

// probes is the clusters probed per unfiltered query: a sixteenth of them
// from 16 up to 32. Past ~100k rows the clusters grow too (≈1.25·√n rows
// each), so 32 of them still hold enough candidates; probing a fixed
// sixteenth would scan 64 MB of codes per query at a million rows.
func (ix *Index) probes(iv *ivf) int {
	if ix.nprobe > 0 {
		return min(ix.nprobe, iv.nlist)
	}
	return min(iv.nlist, max(16, min(32, iv.nlist/16)))
}

// Bit codes keep max(bitRescoreMin, bitRescorePerK·k) candidates for
// re-scoring, which re-scores those of them that can still enter the top k
// (rescoreBits).
const (
	bitRescoreMin  = 1024
	bitRescorePerK = 64
)

// rescoreFor is the candidates kept for exact re-scoring for a top k: bit
// codes rank more roughly than int8 ones, so they hand on more.
func (ix *Index) rescoreFor(k int, iv *ivf) int {
	if ix.rescore > 0 {
		return ix.rescore
	}
	if iv.rot != nil {
		return max(bitRescoreMin, bitRescorePerK*k)
	}
	return max(64, 8*k)
}
