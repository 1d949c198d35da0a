package embed

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"time"

	"github.com/clawmem/clawmem/internal/lrucache"
)

// vectorCache is an LRU with TTL in front of a paid, rate-limited API: agents
// re-embed the same recall queries and re-captured passages constantly.
type vectorCache struct {
	lru *lrucache.Cache[string, []float32]
}

func newVectorCache(size int, ttl time.Duration) *vectorCache {
	return &vectorCache{lru: lrucache.New[string, []float32](size, ttl)}
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
	v, ok := c.lru.Get(key, nil)
	return slices.Clone(v), ok
}

func (c *vectorCache) add(key string, vec []float32) {
	c.lru.Add(key, slices.Clone(vec))
}

func (c *vectorCache) stats() CacheStats { return c.lru.Stats() }
