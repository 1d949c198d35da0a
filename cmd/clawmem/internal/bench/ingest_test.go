package bench

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
	"github.com/clawmem/clawmem/schemas"
)

// ingestEnv is an events stream on an embedded server and a hook ingest
// endpoint in front of it on a loopback port.
type ingestEnv struct {
	js    jetstream.JetStream
	pub   *producers.Publisher
	url   string
	token string
}

func startIngest(tb testing.TB) ingestEnv {
	tb.Helper()
	_, _, js := natsembed.StartTest(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	// With a token, as every hook sends one: its check is part of the path.
	token := authdir.NewToken()
	pub := producers.New(js)
	srv := ingest.New(ingest.Config{Addr: ln.Addr().String(), Token: token}, pub, prometheus.NewRegistry(), nil)
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	tb.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			tb.Error(err)
		}
	})
	return ingestEnv{js: js, pub: pub, url: "http://" + ln.Addr().String(), token: token}
}

func (e ingestEnv) streamMsgs(t *testing.T) uint64 {
	t.Helper()
	return testkit.StreamMsgs(t, e.js, schemas.StreamEvents)
}

// Both ingest benchmarks persist every event they count, and a second run
// within the stream's duplicate window persists new events rather than
// being deduplicated against the first.
func TestIngestBenches(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(context.Context, ingestEnv, IngestOptions) (IngestResult, error)
	}{
		{"direct publish", func(ctx context.Context, e ingestEnv, o IngestOptions) (IngestResult, error) {
			return publishBench(ctx, e.pub, o)
		}},
		{"HTTP", func(ctx context.Context, e ingestEnv, o IngestOptions) (IngestResult, error) {
			return httpBench(ctx, e.url, e.token, o)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startIngest(t)
			o := IngestOptions{Events: 300, Concurrency: 8}
			for run := 1; run <= 2; run++ {
				res, err := tc.run(context.Background(), e, o)
				if err != nil {
					t.Fatal(err)
				}
				if res.Events != 300 || res.Duplicates != 0 || res.EventsPerSec <= 0 || res.P99Ms < res.P50Ms {
					t.Fatalf("run %d: %+v", run, res)
				}
				if n := e.streamMsgs(t); n != uint64(300*run) {
					t.Fatalf("run %d: %d messages in the stream, want %d", run, n, 300*run)
				}
			}
		})
	}
}

// The HTTP benchmark refuses what is not an http://host:port URL, and a
// refused hook (a wrong token) fails the run instead of being counted.
func TestHTTPBenchRefusals(t *testing.T) {
	e := startIngest(t)
	for _, tc := range []struct {
		name, url, token, want string
	}{
		{"not http", "https://127.0.0.1:1", e.token, "want an http://host:port URL"},
		{"no host", "http://", e.token, "want an http://host:port URL"},
		{"wrong token", e.url, "not-the-token", "status 401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := httpBench(context.Background(), tc.url, tc.token, IngestOptions{Events: 10, Concurrency: 2})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if res.Events != 0 {
				t.Fatalf("%d events counted", res.Events)
			}
		})
	}
	if n := e.streamMsgs(t); n != 0 {
		t.Fatalf("%d messages in the stream, want none", n)
	}
}

// BenchmarkPublishDirect: parallel synchronous publishes, each waiting for
// its JetStream ack, against an embedded server.
func BenchmarkPublishDirect(b *testing.B) {
	e := startIngest(b)
	b.ResetTimer()
	res, err := publishBench(context.Background(), e.pub, IngestOptions{Events: max(b.N, 1), Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99Ms, "p99-ms")
}

// BenchmarkIngestHTTP: 32 keep-alive clients POSTing agent_end hooks over
// loopback TCP; each 202 is an event JetStream persisted.
func BenchmarkIngestHTTP(b *testing.B) {
	e := startIngest(b)
	b.ResetTimer()
	res, err := httpBench(context.Background(), e.url, e.token, IngestOptions{Events: max(b.N, 1), Concurrency: 32})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.EventsPerSec, "events/s")
	b.ReportMetric(res.P99Ms, "p99-ms")
}
