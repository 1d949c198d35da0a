package producers_test

import (
	"context"
	"testing"

	"github.com/clawmem/clawmem/producers"
)

func TestRunPublishBench(t *testing.T) {
	_, js, pub := setup(t)
	o := producers.BenchOptions{Events: 300, Concurrency: 8}
	res, err := producers.RunPublishBench(context.Background(), pub, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Events != 300 || res.Duplicates != 0 || res.EventsPerSec <= 0 || res.P99Ms < res.P50Ms {
		t.Fatalf("%+v", res)
	}
	// A second run within the duplicate window must persist new events,
	// not be deduplicated against the first.
	if _, err := producers.RunPublishBench(context.Background(), pub, o); err != nil {
		t.Fatal(err)
	}
	if n := streamMsgs(t, js); n != 600 {
		t.Fatalf("%d messages in the stream, want 600", n)
	}
}

// BenchmarkPublishDirect: parallel synchronous publishes, each waiting for
// its JetStream ack, against an embedded server.
func BenchmarkPublishDirect(b *testing.B) {
	_, _, pub := setup(b)
	b.ResetTimer()
	res, err := producers.RunPublishBench(context.Background(), pub, producers.BenchOptions{Events: max(b.N, 1), Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99Ms, "p99-ms")
}
