package embed

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// vectorCache is an LRU with TTL in front of a paid, rate-limited API: agents
// re-embed the same recall queries and re-captured passages constantly.
type vectorCache struct {
	lru    *expirable.LRU[string, []float32]
	hits   atomic.Uint64
	misses atomic.Uint64
}

func newVectorCache(size int, ttl time.Duration) *vectorCache {
	return &vectorCache{lru: expirable.NewLRU[string, []float32](size, nil, ttl)}
}

// cacheKey includes the task so a query and a passage embedding of the same
// text, which differ for task-aware models, never share an entry. 96 bits of
// SHA-256 keep keys short with no realistic chance of collision.
func cacheKey(task, text string) string {
	h := sha256.New()
	h.Write([]byte(task))
	h.Write([]byte{':'})
	h.Write([]byte(text))
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:12])
}

// get and add copy vectors so a caller scaling or normalising its result in
// place cannot corrupt what later callers receive.
func (c *vectorCache) get(key string) ([]float32, bool) {
	v, ok := c.lru.Get(key)
	if !ok {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return slices.Clone(v), true
}

func (c *vectorCache) add(key string, vec []float32) {
	c.lru.Add(key, slices.Clone(vec))
}

func (c *vectorCache) stats() CacheStats {
	s := CacheStats{Size: c.lru.Len(), Hits: c.hits.Load(), Misses: c.misses.Load()}
	if total := s.Hits + s.Misses; total > 0 {
		s.HitRate = float64(s.Hits) / float64(total)
	}
	return s
}
