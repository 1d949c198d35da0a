package memory

import (
	"crypto/sha256"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/internal/lrucache"
	"github.com/clawmem/clawmem/schemas"
)

// The recall cache's defaults (retrieval.recallCache and
// retrieval.recallCacheSeconds). A turn recalls its prompt twice at most
// (auto-recall, then memory_recall of the same words) within seconds, and
// an answer's recency and decay scores barely move in 30 s; 256 answers
// cover that for many agents at once in a few MB.
const (
	DefaultRecallCacheSize = 256
	DefaultRecallCacheTTL  = 30 * time.Second
)

// WithRecallCache keeps up to size recall answers for at most ttl (size
// 0 or less: no cache, the default; ttl 0 or less:
// DefaultRecallCacheTTL), so that a query repeated within a turn does not
// pay for its embedding and retrieval twice. An answer is served again
// only to a recall with the same scope filter, query and options, while
// no write to one of its scopes has completed since it was computed.
func WithRecallCache(size int, ttl time.Duration) Option {
	return func(e *Engine) {
		if size <= 0 {
			e.recalls = nil
			return
		}
		if ttl <= 0 {
			ttl = DefaultRecallCacheTTL
		}
		e.recalls = &recallCache{lru: lrucache.New[recallKey, recallEntry](size, ttl)}
	}
}

// RecallCacheStats is the recall cache's use.
type RecallCacheStats = lrucache.Stats

// RecallCacheStats reports the recall cache's use; ok is false when the
// engine has none.
func (e *Engine) RecallCacheStats() (st RecallCacheStats, ok bool) {
	if e.recalls == nil {
		return RecallCacheStats{}, false
	}
	return e.recalls.lru.Stats(), true
}

// recallCache holds recall answers by everything they depend on but the
// store's contents, which the entry's write generation stands for, and the
// clock, which the LRU's TTL bounds.
type recallCache struct {
	lru *lrucache.Cache[recallKey, recallEntry]
}

// recallKey is what a recall's answer depends on besides the store and
// the clock: the resolved scope filter exactly (so one agent's answer is
// never another's whose filter differs), the query as it is embedded and
// searched, and every option that reaches retrieve.Query.
// TestRecallKeyCoversOptions fails when an option is added without it.
type recallKey struct {
	all    bool
	scopes string // the filter's scopes, sorted, NUL-separated
	// query is the SHA-256 of the query text: an auto-recall prompt may be
	// long, and a collision is out of reach.
	query    [sha256.Size]byte
	limit    int
	category schemas.Category
	// minScore is the bits of RecallOptions.MinScore when hasMinScore
	// (bits, so that a NaN is a key like any other).
	minScore    uint64
	hasMinScore bool
	direct      bool
	history     bool
}

func newRecallKey(f engine.ScopeFilter, query string, o RecallOptions) recallKey {
	k := recallKey{all: f.All(), scopes: strings.Join(f.Scopes(), "\x00"), query: sha256.Sum256([]byte(query)),
		limit: o.Limit, category: o.Category, direct: o.Direct, history: o.History}
	if o.MinScore != nil {
		k.minScore, k.hasMinScore = math.Float64bits(*o.MinScore), true
	}
	return k
}

// recallEntry is an answer and the write generation of its scopes read
// before the retrieval that made it started: a write that completed after
// that read changes the generation, so the entry cannot outlive it, even
// when the write raced the retrieval.
type recallEntry struct {
	gen uint64
	res retrieve.Result
}

// get returns a copy of the answer for k when it was computed at
// generation gen.
func (c *recallCache) get(k recallKey, gen uint64) (retrieve.Result, bool) {
	ent, ok := c.lru.Get(k, func(e recallEntry) bool { return e.gen == gen })
	if !ok {
		return retrieve.Result{}, false
	}
	return cloneResult(ent.res), true
}

// add keeps a copy of res, computed at generation gen, for k.
func (c *recallCache) add(k recallKey, gen uint64, res retrieve.Result) {
	c.lru.Add(k, recallEntry{gen: gen, res: cloneResult(res)})
}

// cloneResult copies every slice a caller could change in place (a
// caller stripping or scaling a vector, filtering candidates), so the
// cache's copy stays as it was computed.
func cloneResult(r retrieve.Result) retrieve.Result {
	r.Candidates = slices.Clone(r.Candidates)
	for i := range r.Candidates {
		m := &r.Candidates[i].Memory
		m.Vector = slices.Clone(m.Vector)
		m.Metadata = slices.Clone(m.Metadata)
	}
	return r
}
