// Package textindex is an in-memory inverted index that ranks documents by
// BM25, the store's full-text search without SQLite on the read path.
//
// FTS5 scored every matching row through its bm25() function, which reads
// the row's size from a B-tree per match: at 100,000 memories that was a
// third of a recall's CPU. Here a posting list holds each term's documents
// and term frequencies, a document's length and scope group are an array
// lookup, and a query adds up scores in a dense array.
//
// The score is FTS5's bm25() with its defaults (k1 = 1.2, b = 0.75, the
// same IDF and its floor), so rankings and score normalisation stay what
// they were; only the tokenizer is this package's (fts.Tokens), not
// unicode61's.
package textindex

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/clawmem/clawmem/engine/fts"
	"github.com/clawmem/clawmem/engine/vecindex"
)

// BM25's parameters, FTS5's defaults.
const (
	k1 = 1.2
	b  = 0.75
)

// Hit is a matching document and its BM25 score (higher is better).
type Hit struct {
	Key   int64
	Score float64
}

// Index is safe for concurrent use: searches share a read lock, changes
// take the write lock for the time of a few slice updates.
type Index struct {
	mu     sync.RWMutex
	ids    map[string]int32 // token → term id
	terms  []postings       // by term id
	docs   []doc            // by ordinal; ordinals are not reused before compaction
	meta   []docMeta        // by ordinal, what a search reads per posting
	ords   map[int64]int32  // key → ordinal of its live document
	tokens int64            // total length of live documents
	dead   int              // ordinals of removed documents

	scratch sync.Pool // *accumulator
}

// postings are a term's documents in the order they were added. Removed
// documents stay in the list until it is compacted; df counts live ones.
type postings struct {
	ords []int32
	tfs  []uint16 // a memory is at most 64 KiB: fewer tokens than this holds
	df   int32
}

type doc struct {
	key   int64
	terms []int32 // distinct term ids; nil once removed
}

// docMeta is the part of a document a search reads for every posting,
// kept apart from doc in 8 bytes: at a million documents the postings of
// a query's terms land all over the array, and a cache line then holds
// eight documents' rather than one and a half.
type docMeta struct {
	group uint32
	len   uint32 // tokens; removed once removed
}

// removed is a removed document's length: no memory holds that many tokens.
const removed = math.MaxUint32

// New returns an empty index.
func New() *Index {
	return &Index{ids: map[string]int32{}, ords: map[int64]int32{}}
}

// Len is the number of documents.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ords)
}

// Put indexes text (already prepared by fts.IndexText) under key in
// group, replacing what key held.
func (x *Index) Put(key int64, group uint32, text string) {
	counts := map[string]uint32{}
	var n uint32
	fts.Tokens(text, func(t string) {
		counts[t]++
		n++
	})
	x.mu.Lock()
	defer x.mu.Unlock()
	x.remove(key)
	ord := int32(len(x.docs))
	d := doc{key: key, terms: make([]int32, 0, len(counts))}
	for t, tf := range counts {
		id, ok := x.ids[t]
		if !ok {
			id = int32(len(x.terms))
			x.ids[t] = id
			x.terms = append(x.terms, postings{})
		}
		p := &x.terms[id]
		p.ords = append(p.ords, ord)
		p.tfs = append(p.tfs, uint16(min(tf, math.MaxUint16)))
		p.df++
		d.terms = append(d.terms, id)
	}
	x.docs = append(x.docs, d)
	x.meta = append(x.meta, docMeta{group: group, len: n})
	x.ords[key] = ord
	x.tokens += int64(n)
}

// SetGroup moves key to group (its scope or state changed, its text did
// not). It reports whether key is indexed.
func (x *Index) SetGroup(key int64, group uint32) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	ord, ok := x.ords[key]
	if ok {
		x.meta[ord].group = group
	}
	return ok
}

// Remove drops key; it reports whether key was indexed.
func (x *Index) Remove(key int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.remove(key)
}

func (x *Index) remove(key int64) bool {
	ord, ok := x.ords[key]
	if !ok {
		return false
	}
	d := &x.docs[ord]
	for _, id := range d.terms {
		p := &x.terms[id]
		p.df--
		// A list mostly of removed documents is compacted, so churn costs
		// searches nothing and memory at most twice the live postings.
		if dead := len(p.ords) - int(p.df); dead > 16 && dead > int(p.df) {
			x.compact(p, ord)
		}
	}
	x.tokens -= int64(x.meta[ord].len)
	d.terms = nil
	x.meta[ord].len = removed
	delete(x.ords, key)
	x.dead++
	if x.dead > 1024 && x.dead > len(x.ords) {
		x.renumber()
	}
	return true
}

// compact drops the removed documents (and gone, being removed) from p.
func (x *Index) compact(p *postings, gone int32) {
	n := 0
	for i, o := range p.ords {
		if o != gone && x.docs[o].terms != nil {
			p.ords[n], p.tfs[n] = o, p.tfs[i]
			n++
		}
	}
	p.ords, p.tfs = slices.Clip(p.ords[:n]), slices.Clip(p.tfs[:n])
}

// renumber gives the live documents ordinals 0..n-1 and rebuilds every
// posting list without the removed ones, once removed documents outnumber
// live ones.
func (x *Index) renumber() {
	next := make([]int32, len(x.docs))
	docs := make([]doc, 0, len(x.ords))
	meta := make([]docMeta, 0, len(x.ords))
	for o, d := range x.docs {
		next[o] = -1
		if d.terms != nil {
			next[o] = int32(len(docs))
			x.ords[d.key] = int32(len(docs))
			docs = append(docs, d)
			meta = append(meta, x.meta[o])
		}
	}
	for id := range x.terms {
		p := &x.terms[id]
		n := 0
		for i, o := range p.ords {
			if no := next[o]; no >= 0 {
				p.ords[n], p.tfs[n] = no, p.tfs[i]
				n++
			}
		}
		p.ords, p.tfs = slices.Clip(p.ords[:n]), slices.Clip(p.tfs[:n])
	}
	x.docs, x.meta, x.dead = docs, meta, 0
}

// DocFreq is how many documents hold token (a token of fts.Tokens).
func (x *Index) DocFreq(token string) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if id, ok := x.ids[token]; ok {
		return int(x.terms[id].df)
	}
	return 0
}

// accumulator is a search's scratch: a score per ordinal and the
// ordinals touched, reused between searches.
type accumulator struct {
	score   []float64
	touched []int32
}

// Search returns the k best documents in the allowed groups (nil allows
// all) for the query tokens, best first; ties go to the lower key. Each
// token is one BM25 term: a token given twice counts twice, as a phrase
// repeated in an FTS5 query does.
func (x *Index) Search(tokens []string, k int, allow *vecindex.Groups) []Hit {
	if k <= 0 || len(tokens) == 0 {
		return nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := float64(len(x.ords))
	if n == 0 {
		return nil
	}
	avgdl := float64(x.tokens) / n
	if avgdl <= 0 {
		avgdl = 1
	}
	acc, _ := x.scratch.Get().(*accumulator)
	if acc == nil {
		acc = &accumulator{}
	}
	if len(acc.score) < len(x.docs) {
		acc.score = make([]float64, len(x.docs)+len(x.docs)/4)
	}
	for _, t := range tokens {
		id, ok := x.ids[t]
		if !ok || x.terms[id].df == 0 {
			continue
		}
		p := &x.terms[id]
		df := float64(p.df)
		idf := math.Log((n - df + 0.5) / (df + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for i, o := range p.ords {
			m := x.meta[o]
			if m.len == removed || !allow.Has(m.group) {
				continue
			}
			tf := float64(p.tfs[i])
			s := idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(m.len)/avgdl))
			if acc.score[o] == 0 {
				acc.touched = append(acc.touched, o)
			}
			acc.score[o] += s
		}
	}
	if len(acc.touched) == 0 {
		x.scratch.Put(acc)
		return nil
	}
	hits := make([]Hit, 0, min(k, len(acc.touched)))
	for _, o := range acc.touched {
		sc := acc.score[o]
		acc.score[o] = 0
		// Most documents score below the k-th kept: they are passed over
		// without reading their key from the documents.
		if len(hits) == k && sc < hits[k-1].Score {
			continue
		}
		h := Hit{Key: x.docs[o].key, Score: sc}
		if len(hits) < k {
			hits = append(hits, h)
			if len(hits) == k {
				slices.SortFunc(hits, better)
			}
			continue
		}
		if better(h, hits[k-1]) < 0 {
			i, _ := slices.BinarySearchFunc(hits, h, better)
			copy(hits[i+1:], hits[i:k-1])
			hits[i] = h
		}
	}
	if len(hits) < k {
		slices.SortFunc(hits, better)
	}
	acc.touched = acc.touched[:0]
	x.scratch.Put(acc)
	return hits
}

// better orders hits best first: higher score, then lower key.
func better(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}
