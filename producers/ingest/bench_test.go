package ingest_test

import (
	"context"
	"testing"

	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
)

func TestBenchLocal(t *testing.T) {
	e := setup(t, ingest.Config{})
	res, err := ingest.BenchLocal(context.Background(), e.pub, producers.BenchOptions{Events: 200, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 200 || res.EventsPerSec <= 0 {
		t.Fatalf("%+v", res)
	}
	if n := e.msgs(t); n != 200 {
		t.Fatalf("%d messages, want 200", n)
	}
}

// BenchmarkIngestHTTP: 32 keep-alive clients POSTing agent_end hooks over
// loopback TCP; each 202 is an event JetStream persisted.
func BenchmarkIngestHTTP(b *testing.B) {
	e := setup(b, ingest.Config{})
	b.ResetTimer()
	res, err := ingest.BenchLocal(context.Background(), e.pub, producers.BenchOptions{Events: max(b.N, 1), Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99Ms, "p99-ms")
}
