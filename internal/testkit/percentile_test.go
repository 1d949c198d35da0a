package testkit

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50}, {0.99, 99}, {1, 100}, {0.001, 1}} {
		if got := Percentile(ds, tc.q); got != tc.want {
			t.Errorf("q=%v: %v, want %v", tc.q, got, tc.want)
		}
	}
	if Percentile(nil, 0.5) != 0 || Percentile([]time.Duration{7}, 0.99) != 7 {
		t.Error("degenerate inputs")
	}
}
