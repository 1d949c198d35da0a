package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/memlog"
	"github.com/clawmem/clawmem/workers/query"
)

// ClusterOptions are `clawmem bench cluster`'s settings.
type ClusterOptions struct {
	N, Dim int
	// Nodes is the JetStream cluster's size (replicas = min(Nodes, 3)).
	Nodes int
	// Queries is how many top-10 searches the replica is checked with.
	Queries int
	// LoadSeconds is how long each recall throughput run lasts.
	LoadSeconds float64
	// Binary is the clawmem executable whose `worker store` processes
	// capture is measured with, one then two (empty: not measured).
	Binary string
	// Captured is how many memory candidates each capture run stores.
	Captured int
	Logf     func(format string, args ...any)
}

// ClusterReport is what `clawmem bench cluster` reports.
type ClusterReport struct {
	N, Dim, Nodes, Replicas int
	PublishPerSec           float64 `json:"logPublishPerSecond"`
	LogBytesPerMemory       float64 `json:"logBytesPerMemory"`
	CatchUpSeconds          float64 `json:"catchUpSeconds"`
	CatchUpPerSec           float64 `json:"catchUpPerSecond"`
	SameTop10               float64 `json:"sameTop10"` // share of queries whose top-10 equals the writer's
	FreshP50ms              float64 `json:"replicaFreshnessP50ms"`
	FreshP99ms              float64 `json:"replicaFreshnessP99ms"`
	Recall1PerSec           float64 `json:"recallPerSecond1Replica"`
	Recall2PerSec           float64 `json:"recallPerSecond2Replicas"`
	Capture1PerSec          float64 `json:"capturePerSecond1Writer,omitempty"`
	Capture2PerSec          float64 `json:"capturePerSecond2Writers,omitempty"`
}

// Cluster measures the memory log on a JetStream cluster in process: the
// writer publishing N memories, a new replica catching up, whether it
// answers as the writer does, how fresh it stays, and recall throughput
// with one and two replicas.
func Cluster(ctx context.Context, o ClusterOptions) (ClusterReport, error) {
	rep := ClusterReport{N: o.N, Dim: o.Dim, Nodes: max(o.Nodes, 1), Replicas: min(max(o.Nodes, 1), 3)}
	logf := o.Logf
	dir, err := os.MkdirTemp("", "clawmem-bench-cluster-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	c, err := natsembed.StartCluster(dir+"/nats", rep.Nodes)
	if err != nil {
		return rep, err
	}
	defer c.Shutdown()
	nc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1))
	if err != nil {
		return rep, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if err := topology.Ensure(ctx, js, topology.Config{Replicas: rep.Replicas}); err != nil {
		return rep, err
	}

	writer, err := sqlitestore.Open(ctx, dir+"/writer", sqlitestore.Options{Dimensions: o.Dim})
	if err != nil {
		return rep, err
	}
	defer writer.Close()
	logf("writer: storing %d memories...", o.N)
	rng := rand.New(rand.NewPCG(7, 7))
	for done := 0; done < o.N; done += batch {
		if _, err := writer.Add(ctx, Memories(rng, done, min(batch, o.N-done), o.Dim)...); err != nil {
			return rep, err
		}
	}
	logf("writer: publishing them to the memory log (R%d on %d nodes)...", rep.Replicas, rep.Nodes)
	pub := memlog.NewPublisher(js, writer, schemas.DefaultPartitions, nil)
	start := time.Now()
	if _, err := pub.Flush(ctx); err != nil {
		return rep, err
	}
	rep.PublishPerSec = float64(o.N) / time.Since(start).Seconds()
	if s, err := js.Stream(ctx, schemas.StreamMemories); err == nil {
		if info, err := s.Info(ctx); err == nil && o.N > 0 {
			rep.LogBytesPerMemory = float64(info.State.Bytes) / float64(o.N)
		}
	}

	logf("replica: catching up...")
	replicas := make([]*sqlitestore.Store, 2)
	for i := range replicas {
		if replicas[i], err = sqlitestore.Open(ctx, fmt.Sprintf("%s/replica%d", dir, i), sqlitestore.Options{Dimensions: o.Dim, NoChangeLog: true}); err != nil {
			return rep, err
		}
		defer replicas[i].Close()
	}
	start = time.Now()
	if _, err := memlog.NewFollower(js, replicas[0], nil).CatchUp(ctx); err != nil {
		return rep, err
	}
	rep.CatchUpSeconds = time.Since(start).Seconds()
	rep.CatchUpPerSec = float64(replicas[0].Len()) / rep.CatchUpSeconds
	if rep.SameTop10, err = sameTop10(ctx, writer, replicas[0], o.Queries, o.Dim); err != nil {
		return rep, err
	}

	logf("replica: freshness while following...")
	if rep.FreshP50ms, rep.FreshP99ms, err = freshness(ctx, js, pub, writer, replicas[0], o.Dim); err != nil {
		return rep, err
	}

	logf("recall throughput: one replica, then two...")
	if _, err := memlog.NewFollower(js, replicas[1], nil).CatchUp(ctx); err != nil {
		return rep, err
	}
	if rep.Recall1PerSec, err = recallLoad(ctx, nc, replicas[:1], o); err != nil {
		return rep, err
	}
	if rep.Recall2PerSec, err = recallLoad(ctx, nc, replicas, o); err != nil {
		return rep, err
	}
	if o.Binary != "" && o.Captured > 0 {
		for k, into := range []*float64{&rep.Capture1PerSec, &rep.Capture2PerSec} {
			if *into, err = captureRun(ctx, js, c.URLs(), o.Binary, dir, k+1, o.Captured, rep.Replicas, logf); err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

// sameTop10 is the share of queries whose exact top-10 ids are the same,
// in the same order, on both stores.
func sameTop10(ctx context.Context, a, b engine.Store, queries, dim int) (float64, error) {
	rng := rand.New(rand.NewPCG(11, 5))
	same := 0
	for range queries {
		q := Memories(rng, 0, 1, dim)[0].Vector
		var ids [2][]string
		for i, s := range []engine.Store{a, b} {
			hits, err := s.VectorSearch(ctx, q, engine.SearchOptions{Scopes: engine.AllScopes(), Limit: 10})
			if err != nil {
				return 0, err
			}
			for _, h := range hits {
				ids[i] = append(ids[i], h.Memory.ID)
			}
		}
		if slices.Equal(ids[0], ids[1]) {
			same++
		}
	}
	return float64(same) / float64(max(queries, 1)), nil
}

// freshness writes memories one by one on the writer and times each until
// the following replica has it.
func freshness(ctx context.Context, js jetstream.JetStream, pub *memlog.Publisher, writer, replica *sqlitestore.Store, dim int) (p50, p99 float64, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = pub.Run(ctx) })
	wg.Go(func() { _ = memlog.NewFollower(js, replica, nil).Run(ctx) })
	rng := rand.New(rand.NewPCG(3, 9))
	var lat []time.Duration
	for i := range 200 {
		added, err := writer.Add(ctx, Memories(rng, 10_000_000+i, 1, dim)...)
		if err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		for ok, _ := replica.Has(ctx, added[0].ID); !ok; ok, _ = replica.Has(ctx, added[0].ID) {
			if time.Since(t0) > 30*time.Second {
				return 0, 0, fmt.Errorf("the replica did not get memory %d in 30 s", i)
			}
			time.Sleep(200 * time.Microsecond)
		}
		lat = append(lat, time.Since(t0))
	}
	return Ms(testkit.Percentile(lat, 0.5)), Ms(testkit.Percentile(lat, 0.99)), nil
}

// recallLoad serves recall from the given replica stores, one query
// service each in one queue group, and counts the recalls 8 callers get
// answered per second.
func recallLoad(ctx context.Context, nc *nats.Conn, stores []*sqlitestore.Store, o ClusterOptions) (float64, error) {
	emb, err := embed.New(embed.Config{Provider: embed.ProviderLocal, Dimensions: o.Dim})
	if err != nil {
		return 0, err
	}
	sm, _ := scopes.New(scopes.Config{})
	quiet := slog.New(slog.DiscardHandler)
	for _, st := range stores {
		ret, err := retrieve.New(st, retrieve.DefaultConfig())
		if err != nil {
			return 0, err
		}
		sc, err := natsembed.Reconnect(nc)
		if err != nil {
			return 0, err
		}
		defer sc.Close()
		svc := query.New(sc, memory.New(st, emb, ret, sm), query.DefaultConfig(), nil, quiet)
		if err := svc.Start(); err != nil {
			return 0, err
		}
		defer svc.Stop()
	}
	var done atomic.Int64
	deadline := time.Now().Add(time.Duration(o.LoadSeconds * float64(time.Second)))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for time.Now().Before(deadline) && ctx.Err() == nil {
				body := fmt.Appendf(nil, `{"query":%q}`, testkit.Sentence(rng, w))
				if _, err := nc.Request(schemas.ServiceSubject("main", schemas.OpRecall), body, 10*time.Second); err == nil {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / o.LoadSeconds, nil
}

// WriteText prints the figures for a person.
func (r ClusterReport) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "memory log, %d memories x %d, R%d on a %d-node JetStream cluster (in process)\n", r.N, r.Dim, r.Replicas, r.Nodes)
	fmt.Fprintf(w, "  writer -> log          %8.0f memories/s, %.0f log bytes per memory\n", r.PublishPerSec, r.LogBytesPerMemory)
	fmt.Fprintf(w, "  new replica catch-up   %8.0f memories/s (%.1f s)\n", r.CatchUpPerSec, r.CatchUpSeconds)
	fmt.Fprintf(w, "  same top-10 as writer  %8.1f%% of queries\n", 100*r.SameTop10)
	fmt.Fprintf(w, "  replica freshness      p50 %.1f ms  p99 %.1f ms (writer commit -> on the replica)\n", r.FreshP50ms, r.FreshP99ms)
	fmt.Fprintf(w, "  recall, 1 replica      %8.0f /s\n", r.Recall1PerSec)
	fmt.Fprintf(w, "  recall, 2 replicas     %8.0f /s (x%.2f; both in this process, on the same cores)\n", r.Recall2PerSec, r.Recall2PerSec/max(r.Recall1PerSec, 1))
	if r.Capture1PerSec > 0 {
		fmt.Fprintf(w, "  capture, 1 writer      %8.0f memories/s (candidates queued -> in the log)\n", r.Capture1PerSec)
		fmt.Fprintf(w, "  capture, 2 writers     %8.0f memories/s (x%.2f; separate processes, on the same cores)\n", r.Capture2PerSec, r.Capture2PerSec/max(r.Capture1PerSec, 1))
	}
	return nil
}
