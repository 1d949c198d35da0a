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
// logged (on log, or slog.Default when nil), naming what, and c is
// returned unregistered. A nil reg leaves every collector unregistered.
// It is clawmem's one way to register metrics: it never panics.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger, what string) C {
	if reg == nil {
		return c
	}
	if log == nil {
		log = slog.Default()
	}
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
