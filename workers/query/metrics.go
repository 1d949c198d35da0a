package query

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine/memory"
)

// recallCacheMetrics exports the recall cache's lookups, hits and misses,
// read from the engines at each scrape. One collector serves a registry:
// every query service registered with it adds its engine, and the counts
// are summed over the distinct engines (a writer and a replica in one
// process each have theirs; a writer's several services share one).
type recallCacheMetrics struct {
	desc *prometheus.Desc

	mu      sync.Mutex
	engines []*memory.Engine
}

func newRecallCacheMetrics() *recallCacheMetrics {
	return &recallCacheMetrics{desc: prometheus.NewDesc("clawmem_recall_cache_lookups_total",
		"Recalls looked up in the recall cache (retrieval.recallCache), by result: hit (answered from it) or miss (computed).",
		[]string{"result"}, nil)}
}

func (m *recallCacheMetrics) add(e *memory.Engine) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.engines, e) {
		m.engines = append(m.engines, e)
	}
}

// Describe implements prometheus.Collector.
func (m *recallCacheMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.desc }

// Collect implements prometheus.Collector.
func (m *recallCacheMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	engines := slices.Clone(m.engines)
	m.mu.Unlock()
	var hits, misses uint64
	for _, e := range engines {
		if st, ok := e.RecallCacheStats(); ok {
			hits, misses = hits+st.Hits, misses+st.Misses
		}
	}
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(hits), "hit")
	ch <- prometheus.MustNewConstMetric(m.desc, prometheus.CounterValue, float64(misses), "miss")
}
