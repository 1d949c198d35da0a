// Package lrucache is an LRU cache whose entries expire, counting its hits
// and misses: the embedding cache's and the recall cache's mechanism, and
// the use `memory_stats` reports for both.
package lrucache

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Cache holds up to size entries, each for at most ttl. It is safe for
// concurrent use. Values are stored as given: a caller that hands out
// slices copies them on the way in and out.
type Cache[K comparable, V any] struct {
	lru          *expirable.LRU[K, V]
	hits, misses atomic.Uint64
}

// New returns an empty cache.
func New[K comparable, V any](size int, ttl time.Duration) *Cache[K, V] {
	return &Cache[K, V]{lru: expirable.NewLRU[K, V](size, nil, ttl)}
}

// Get returns k's value when it is there and usable says it may serve (nil:
// any value), counting a hit; otherwise a miss.
func (c *Cache[K, V]) Get(k K, usable func(V) bool) (V, bool) {
	v, ok := c.lru.Get(k)
	if ok && (usable == nil || usable(v)) {
		c.hits.Add(1)
		return v, true
	}
	c.misses.Add(1)
	var zero V
	return zero, false
}

// Add keeps v for k.
func (c *Cache[K, V]) Add(k K, v V) { c.lru.Add(k, v) }

// Stats is a cache's use.
type Stats struct {
	Size    int     `json:"size"`
	Hits    uint64  `json:"hits"`
	Misses  uint64  `json:"misses"`
	HitRate float64 `json:"hitRate"`
}

// Stats reports the entries held and the lookups so far.
func (c *Cache[K, V]) Stats() Stats {
	s := Stats{Size: c.lru.Len(), Hits: c.hits.Load(), Misses: c.misses.Load()}
	if total := s.Hits + s.Misses; total > 0 {
		s.HitRate = float64(s.Hits) / float64(total)
	}
	return s
}
