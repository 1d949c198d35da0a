package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

func TestQueryMetrics(t *testing.T) {
	eng := queryTestEngine(t, nil)
	_, nc, _ := natsembed.StartTest(t)
	reg := prometheus.NewRegistry()
	svc := New(nc, eng, DefaultConfig(), reg, queryTestLog(t))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	// A second replica in the same process shares the series.
	svc2 := New(nc, eng, DefaultConfig(), reg, queryTestLog(t))
	if err := svc2.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc2.Stop()
	queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), nil)
	queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), nil)
	queryWantError(t, nc, querySubj("main", "recall"), `{}`, schemas.CodeInvalid)

	counts, observed := queryGather(t, reg)
	if counts["stats/ok"] != 2 || counts["recall/invalid"] != 1 || observed != 3 {
		t.Fatalf("counters %v, %d durations observed", counts, observed)
	}
}

// queryGather reads the request counters by op/result and the number of
// durations observed.
func queryGather(t *testing.T, reg *prometheus.Registry) (map[string]float64, uint64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var observed uint64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetName() {
			case "clawmem_query_requests_total":
				counts[labels["op"]+"/"+labels["result"]] = m.GetCounter().GetValue()
			case "clawmem_query_duration_seconds":
				observed += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return counts, observed
}

// BenchmarkRecallNATS compares recall through the service (request-reply
// over loopback NATS) with calling the engine directly, on 10,000 memories
// with the local embedder.
func BenchmarkRecallNATS(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds 10,000 memories")
	}
	const agent, n = "bench", 10_000
	eng := queryTestEngine(b, nil)
	nc, svc := queryStart(b, eng, DefaultConfig())
	ctx := context.Background()
	texts := queryBenchTexts(n)
	emb := eng.Embedder()
	for start := 0; start < n; start += 500 {
		batch := texts[start:min(start+500, n)]
		vecs, err := emb.EmbedPassages(ctx, batch)
		if err != nil {
			b.Fatal(err)
		}
		ms := make([]schemas.Memory, len(batch))
		for i, text := range batch {
			ms[i] = schemas.Memory{Text: text, Vector: vecs[i], Category: schemas.CategoryFact, Scope: "agent:" + agent, Importance: 0.7}
		}
		if _, err := eng.Backend().Add(ctx, ms...); err != nil {
			b.Fatal(err)
		}
	}
	queries := queryBenchTexts(64)
	for i := range queries {
		queries[i] = strings.Join(strings.Fields(queries[i])[1:5], " ")
	}
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		bodies[i], _ = json.Marshal(schemas.RecallRequest{Query: q})
	}
	subject := querySubj(agent, schemas.OpRecall)
	// Each iteration makes the same recall both ways, back to back, so that
	// load from elsewhere on the machine skews both series alike.
	direct := make([]time.Duration, 0, b.N)
	viaNATS := make([]time.Duration, 0, b.N)
	overhead := make([]time.Duration, 0, b.N)
	// A $SRV.PING round trip is the transport's share of the overhead:
	// micro answers it inline, with no decoding, pool or engine.
	ping := make([]time.Duration, 0, b.N)
	// The same recall through the service's handler without NATS: decoding,
	// engine, formatting and encoding.
	inProcess := make([]time.Duration, 0, b.N)
	pingSubject, err := micro.ControlSubject(micro.PingVerb, schemas.ServiceName, "")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		q := i % len(queries)
		start := time.Now()
		if _, err := eng.Recall(ctx, memory.Agent(agent), queries[q], memory.RecallOptions{Limit: defaultRecallLimit}); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		start = time.Now()
		msg, err := nc.Request(subject, bodies[q], 30*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		v := time.Since(start)
		if strings.Contains(string(msg.Data), `"isError":true`) {
			b.Fatalf("recall failed: %s", msg.Data)
		}
		direct, viaNATS, overhead = append(direct, d), append(viaNATS, v), append(overhead, v-d)
		start = time.Now()
		res, _ := svc.safeHandle(ctx, svc.endpoints[schemas.OpRecall], subject, bodies[q], start, false)
		if _, fits := svc.encode(res); res.IsError || !fits {
			b.Fatalf("in-process recall failed: %+v", res)
		}
		inProcess = append(inProcess, time.Since(start))
		start = time.Now()
		if _, err := nc.Request(pingSubject, nil, 30*time.Second); err != nil {
			b.Fatal(err)
		}
		ping = append(ping, time.Since(start))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(testkit.Percentile(direct, 0.5)), "direct-p50-ms")
	b.ReportMetric(ms(testkit.Percentile(direct, 0.99)), "direct-p99-ms")
	b.ReportMetric(ms(testkit.Percentile(viaNATS, 0.5)), "nats-p50-ms")
	b.ReportMetric(ms(testkit.Percentile(viaNATS, 0.99)), "nats-p99-ms")
	b.ReportMetric(ms(testkit.Percentile(overhead, 0.5)), "overhead-p50-ms")
	b.ReportMetric(ms(testkit.Percentile(inProcess, 0.5)), "handler-p50-ms")
	b.ReportMetric(ms(testkit.Percentile(ping, 0.5)), "ping-p50-ms")
}

// queryBenchTexts makes n distinct, fact-like sentences from a small
// vocabulary, so that queries share words with many memories.
func queryBenchTexts(n int) []string {
	subjects := []string{"staging database", "release checklist", "team retro", "build server", "payment service",
		"mobile app", "search index", "backup job", "design review", "support rota", "vpn gateway", "data pipeline"}
	verbs := []string{"runs on", "moved to", "depends on", "is owned by", "is documented in", "fails without", "was migrated to"}
	objects := []string{"kubernetes", "the wiki", "postgres", "the platform team", "friday afternoons", "terraform",
		"the blue notebook", "object storage", "the on-call engineer", "grafana", "a cron job", "the eu region"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("The %s %s %s since sprint %d, ticket %d",
			subjects[rng.IntN(len(subjects))], verbs[rng.IntN(len(verbs))], objects[rng.IntN(len(objects))], rng.IntN(200), i)
	}
	return out
}

// TestRecallCacheMetrics: the recall cache's hits and misses, summed over
// the distinct engines the registry's services answer with, and in
// memory_stats.
func TestRecallCacheMetrics(t *testing.T) {
	base := queryTestEngine(t, nil)
	cached := func() *memory.Engine {
		return memory.New(base.Backend(), base.Embedder(), base.Retriever(), base.Scopes(), memory.WithRecallCache(8, time.Minute))
	}
	e1, e2 := cached(), cached()
	_, nc, _ := natsembed.StartTest(t)
	reg := prometheus.NewRegistry()
	svc := New(nc, e1, DefaultConfig(), reg, queryTestLog(t))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	New(nc, e1, DefaultConfig(), reg, queryTestLog(t)) // a second service of the same engine counts it once
	New(nil, e2, DefaultConfig(), reg, queryTestLog(t))

	queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), map[string]any{"text": queryCorpus[3]})
	for range 2 {
		queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), map[string]any{"query": "green tea"})
	}
	if _, err := e2.Recall(context.Background(), memory.Agent("main"), "green tea", memory.RecallOptions{}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "clawmem_recall_cache_lookups_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if got["hit"] != 1 || got["miss"] != 2 {
		t.Errorf("recall cache lookups %v, want 1 hit (the repeat) and 2 misses (one per engine)", got)
	}
	_, st := queryOKReply[schemas.StatsDetails](t, nc, querySubj("main", "stats"), nil)
	if st.RecallCache == nil || st.RecallCache.Hits != 1 || st.RecallCache.Misses != 1 || st.RecallCache.Size != 1 {
		t.Errorf("memory_stats recall cache %+v, want 1 answer kept, 1 hit and 1 miss", st.RecallCache)
	}
}
