// Package promreg registers Prometheus collectors tolerantly: a component
// started twice in one process (tests, a restarted role) reuses the series
// already registered instead of failing.
package promreg

import (
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c with reg and returns the collector to use: c, or
// the one of the same description registered before. Any other failure is
// logged, naming what, and c is returned unregistered.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger, what string) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		log.Warn(what+" metrics not registered", "err", err)
	}
	return c
}
