package promreg

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterReusesExisting(t *testing.T) {
	reg := prometheus.NewRegistry()
	log := slog.New(slog.DiscardHandler)
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	a := Register(reg, prometheus.NewCounter(opts), log, "test")
	b := Register(reg, prometheus.NewCounter(opts), log, "test")
	if a != b {
		t.Fatal("a second registration did not return the first collector")
	}
	// A clash that is not the same collector type leaves c unregistered.
	g := Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"}), log, "test")
	if g == nil {
		t.Fatal("nil collector")
	}
}
