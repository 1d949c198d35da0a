package watcher

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
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
	m.entries = register(reg, m.entries, log)
	m.skipped = register(reg, m.skipped, log)
	m.restarts = register(reg, m.restarts, log)
	m.failures = register(reg, m.failures, log)
	return m
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		log.Warn("watcher metrics not registered", "err", err)
	}
	return c
}
