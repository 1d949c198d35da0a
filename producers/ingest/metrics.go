package ingest

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/promreg"
)

type metrics struct {
	events  *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// newMetrics registers the endpoint's collectors. A second Server on the
// same registry (a restart inside one process, tests) shares the first
// one's collectors instead of failing.
func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "clawmem", Subsystem: "ingest", Name: "events_total",
			Help: "Hook requests by event kind and result (accepted, duplicate, invalid, too_large, unauthorized, unavailable, method_not_allowed).",
		}, []string{"kind", "result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "clawmem", Subsystem: "ingest", Name: "request_duration_seconds",
			Help: "Time from a hook request's arrival to its answer, including the JetStream ack, by result.",
			// From a local ack (sub-millisecond) to a publish timeout.
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"result"}),
	}
	m.events = promreg.Register(reg, m.events, log, "ingest")
	m.latency = promreg.Register(reg, m.latency, log, "ingest")
	return m
}
