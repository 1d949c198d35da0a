package promreg

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegister(t *testing.T) {
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	tests := []struct {
		name string
		// first is registered before c (nil: nothing); c is what Register gets.
		first   prometheus.Collector
		c       prometheus.Collector
		nilReg  bool
		nilLog  bool
		wantOld bool   // Register returns first instead of c
		wantLog string // in the log; "" for no log line
	}{
		{name: "new", c: prometheus.NewCounter(opts)},
		{name: "same again reuses the first", first: prometheus.NewCounter(opts), c: prometheus.NewCounter(opts), wantOld: true},
		{name: "same again without a logger", first: prometheus.NewCounter(opts), c: prometheus.NewCounter(opts), nilLog: true, wantOld: true},
		{name: "nil registry", c: prometheus.NewCounter(opts), nilReg: true},
		{name: "clash of another type is logged", first: prometheus.NewCounter(opts),
			c: prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"}), wantLog: "test metrics not registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			if tt.first != nil {
				reg.MustRegister(tt.first)
			}
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			if tt.nilLog {
				log = nil
			}
			var r prometheus.Registerer = reg
			if tt.nilReg {
				r = nil
			}
			got := Register(r, tt.c, log, "test")
			want := tt.c
			if tt.wantOld {
				want = tt.first
			}
			if got != want {
				t.Fatalf("got collector %p, want %p", got, want)
			}
			if tt.wantLog == "" && buf.Len() > 0 || !strings.Contains(buf.String(), tt.wantLog) {
				t.Fatalf("log %q, want %q", buf.String(), tt.wantLog)
			}
			if !tt.nilReg && !tt.wantOld && tt.wantLog == "" && !reg.Unregister(tt.c) {
				t.Fatal("c was not registered")
			}
		})
	}
}

// A collector of the same description but another Go type cannot stand in
// for the new one: the caller gets its own, unregistered, and a log line.
func TestRegisterOtherTypeSameDescription(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	var buf bytes.Buffer
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "x"})
	if got := Register(reg, g, slog.New(slog.NewTextHandler(&buf, nil)), "test"); got != g {
		t.Fatalf("got %v, want the gauge given", got)
	}
	if !strings.Contains(buf.String(), "test metrics not registered") {
		t.Fatalf("log %q", buf.String())
	}
}
