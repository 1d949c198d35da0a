package stage

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/promreg"
)

// Metrics are the per-stage Prometheus series.
type Metrics struct {
	Messages *prometheus.CounterVec   // stage, result: ok, retry, unavailable, dlq
	Duration *prometheus.HistogramVec // stage
	// Stalled is 1 while a stage's consumer (stage: its name, store-3)
	// has messages waiting and the stage settled none for StallAfter.
	Stalled *prometheus.GaugeVec
}

// NewMetrics registers the stage series with reg (nil: unregistered),
// reusing the ones registered before.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Messages: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "stage_messages_total",
			Help: "Messages handled by each pipeline stage, by result."}, []string{"stage", "result"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "clawmem", Name: "stage_batch_seconds",
			Help: "Time to handle one batch, per stage.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"stage"}),
		Stalled: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "clawmem", Name: "stage_stalled",
			Help: "1 while a stage's consumer has messages waiting and the stage has settled none for longer than its bound " +
				"(twice its ack wait)."}, []string{"stage"}),
	}
	m.Messages = promreg.Register(reg, m.Messages, nil, "stage")
	m.Duration = promreg.Register(reg, m.Duration, nil, "stage")
	m.Stalled = promreg.Register(reg, m.Stalled, nil, "stage")
	return m
}
