package watcher

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/promreg"
)

type metrics struct {
	entries  *prometheus.CounterVec // result: published, duplicate
	skipped  *prometheus.CounterVec // reason: bad, too_long, too_large
	restarts *prometheus.CounterVec // reason: new, truncated, replaced
	failures prometheus.Counter
}

// newMetrics registers the watcher's collectors with reg when it is not
// nil. A second Watcher on the same registry (a restart inside one
// process, tests) shares the first one's collectors.
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	m := &metrics{
		entries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "clawmem", Subsystem: "watcher", Name: "entries_total",
			Help: "Transcript entries published, by result (published, duplicate: already in the stream).",
		}, []string{"result"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "clawmem", Subsystem: "watcher", Name: "lines_skipped_total",
			Help: "Transcript lines skipped, by reason (bad, too_long, too_large).",
		}, []string{"reason"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "clawmem", Subsystem: "watcher", Name: "file_generations_total",
			Help: "Session files read from byte 0, by reason (new, truncated, replaced).",
		}, []string{"reason"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "clawmem", Subsystem: "watcher", Name: "failures_total",
			Help: "Reads of a session file that stopped on an error and will be retried.",
		}),
	}
	if reg == nil {
		return m
	}
	m.entries = promreg.Register(reg, m.entries, log, "watcher")
	m.skipped = promreg.Register(reg, m.skipped, log, "watcher")
	m.restarts = promreg.Register(reg, m.restarts, log, "watcher")
	m.failures = promreg.Register(reg, m.failures, log, "watcher")
	return m
}
