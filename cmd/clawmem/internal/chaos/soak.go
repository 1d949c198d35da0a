package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clawmem/clawmem/schemas"
)

// SoakOptions size the soak.
type SoakOptions struct {
	Duration   time.Duration
	Rate       float64 // events per second
	RecallRate float64 // recalls per second
	// Distinct keeps every event's text distinct for the whole run, so
	// the store grows by one memory an event; otherwise the texts cycle
	// after the warm-up and the store stops growing.
	Distinct bool
}

// Sample is one second of the soak.
type Sample struct {
	Sec  float64 `json:"sec"`
	Proc Proc    `json:"proc"`
	// Work is the work queue's backlog; EventsMB and KVMB the events
	// stream's and the KV buckets' sizes.
	Work     uint64  `json:"work"`
	EventsMB float64 `json:"eventsMB"`
	KVMB     float64 `json:"kvMB"`
	// Memories is the store's count (current and history).
	Memories int `json:"memories"`
}

// Soak runs a fixed ingest and recall load for Duration, sampling the
// process's resident memory, goroutines and open files and the streams'
// sizes each second, and passes when, after the warm-up, they stay flat:
// the median of the last ten samples against the first ten after warm-up.
// With Distinct the store grows all along and resident memory is held to
// a bound per memory stored (rssGrowth.check).
func Soak(ctx context.Context, env Env, o SoakOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "soak"}
	up, nc, err := env.start(ctx, "soak", nil)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	// The texts and the sessions cycle after the warm-up: from then on
	// every event is a duplicate (stored memories stay as many) in a
	// session seen before (capture cursors stay as many), so what grows
	// after it is retained by design (the events stream, the duplicate
	// window's Msg-Ids until it is full) or leaked. With distinct texts
	// the store grows all along, and so may the memory it takes, by a
	// bound per memory.
	n := int(o.Rate * o.Duration.Seconds())
	warmup := max(10*time.Second, o.Duration/5)
	pool := int(o.Rate * warmup.Seconds())
	if o.Distinct {
		pool = n
	}
	load := NewPooledLoad(up.Ingest(), n, pool, o.Rate, env.Seed)
	var dims int
	if _, err := request(ctx, nc, schemas.AdminSubject(schemas.OpStats), []byte(`{}`), &struct {
		Dimensions *int `json:"dimensions"`
	}{&dims}); err != nil || dims < 1 {
		return r, fmt.Errorf("reading the store's dimensions: %d, %v", dims, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(runCtx); close(loaded) }()

	var mu sync.Mutex
	var lat []float64
	recallErrs := 0
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Duration(float64(time.Second) / o.RecallRate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			t0 := time.Now()
			_, failed := recallOnce(runCtx, nc, fmt.Sprintf("%s, asked %d", load.Text(i), i))
			if runCtx.Err() != nil {
				return
			}
			mu.Lock()
			lat = append(lat, float64(time.Since(t0).Microseconds())/1000)
			if failed {
				recallErrs++
			}
			mu.Unlock()
		}
	})

	pid := up.PID()
	metrics := up.IngestURL() + "/metrics"
	var samples []Sample
	tick := time.NewTicker(time.Second)
	for sampling := true; sampling; {
		select {
		case <-runCtx.Done():
			sampling = false
			continue
		case <-tick.C:
		}
		p, err := ReadProc(pid, metrics)
		if err != nil {
			r.fail("sampling the process: %v", err)
			break
		}
		s := Sample{Sec: time.Since(start).Seconds(), Proc: p}
		sctx, done := context.WithTimeout(ctx, 5*time.Second)
		st, err := Streams(sctx, nc)
		done()
		if err != nil {
			r.fail("sampling the streams: %v", err)
			break
		}
		var count struct {
			Total   int `json:"total"`
			History int `json:"history"`
		}
		if _, err := request(ctx, nc, schemas.AdminSubject(schemas.OpStats), []byte(`{}`), &count); err != nil {
			r.fail("counting the memories: %v", err)
			break
		}
		s.Memories = count.Total + count.History
		s.Work = st[schemas.StreamWork].Msgs
		s.EventsMB = float64(st[schemas.StreamEvents].Bytes) / (1 << 20)
		for name, sz := range st {
			if strings.HasPrefix(name, "KV_") {
				s.KVMB += float64(sz.Bytes) / (1 << 20)
			}
		}
		samples = append(samples, s)
	}
	tick.Stop()
	wg.Wait()
	<-loaded
	t, err := load.Settle(ctx, nc, 30*time.Second)
	if err != nil {
		r.fail("counting the store: %v", err)
	}
	// The load may not have offered every event if the run ended first:
	// what was offered is what counts.
	t.Offered = t.Acked
	r.checkNoDLQ(ctx, nc, t)
	if recallErrs > 0 {
		r.fail("%d recalls failed", recallErrs)
	}
	if err := up.Stop(); err != nil {
		r.fail("graceful stop: %v", err)
	}

	warm := int(warmup / time.Second)
	if len(samples) < warm+20 {
		r.fail("only %d samples: run the soak for at least %d s", len(samples), warm+20)
		r.Seconds = time.Since(start).Seconds()
		r.finish()
		return r, nil
	}
	first, last := samples[warm:warm+10], samples[len(samples)-10:]
	med := func(s []Sample, f func(Sample) float64) float64 {
		v := make([]float64, len(s))
		for i := range s {
			v[i] = f(s[i])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	rss := func(s Sample) float64 { return s.Proc.RSSMB }
	gor := func(s Sample) float64 { return float64(s.Proc.Goroutines) }
	fds := func(s Sample) float64 { return float64(s.Proc.OpenFiles) }
	work := func(s Sample) float64 { return float64(s.Work) }
	mems := func(s Sample) float64 { return float64(s.Memories) }
	rss0, rss1 := med(first, rss), med(last, rss)
	m0, m1 := med(first, mems), med(last, mems)
	g0, g1 := med(first, gor), med(last, gor)
	f0, f1 := med(first, fds), med(last, fds)
	w1 := med(last, work)
	growth := rssGrowth{MB: [2]float64{rss0, rss1}, Memories: [2]float64{m0, m1}}
	if f := growth.check(o.Distinct, dims); f != "" {
		r.fail("%s", f)
	}
	if g1 > g0+max(10, g0/10) {
		r.fail("goroutines grew from %.0f to %.0f (bound: +10%% or +10)", g0, g1)
	}
	if f1 > f0+8 {
		r.fail("open files grew from %.0f to %.0f (bound: +8)", f0, f1)
	}
	if w1 > max(50, 2*o.Rate) {
		r.fail("the work queue's backlog is %.0f at the end: capture is falling behind", w1)
	}
	slices.Sort(lat)
	p50, p99 := 0.0, 0.0
	if len(lat) > 0 {
		p50, p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	end := samples[len(samples)-1]
	r.Figures = map[string]any{"durationSec": o.Duration.Seconds(), "rate": o.Rate, "recallRate": o.RecallRate, "warmupSec": warm,
		"distinct": o.Distinct, "dimensions": dims, "memories": [2]float64{m0, m1}, "bytesPerMemory": growth.perMemory(),
		"rssMB": [2]float64{rss0, rss1}, "goroutines": [2]float64{g0, g1}, "openFiles": [2]float64{f0, f1}, "workBacklog": w1,
		"eventsMB": end.EventsMB, "kvMB": end.KVMB, "recalls": len(lat), "recallP50ms": p50, "recallP99ms": p99, "samples": samples}
	r.Summary = fmt.Sprintf("%.0f s at %.0f events/s + %.0f recalls/s: RSS %.0f→%.0f MB for %.0f→%.0f memories (%.0f bytes each), goroutines %.0f→%.0f, open files %.0f→%.0f, work backlog %.0f, events stream %.1f MB, KV %.2f MB, recall p50 %.1f ms p99 %.1f ms",
		o.Duration.Seconds(), o.Rate, o.RecallRate, rss0, rss1, m0, m1, growth.perMemory(), g0, g1, f0, f1, w1, end.EventsMB, end.KVMB, p50, p99)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}

// rssGrowth is the resident memory (MB) and the memories stored in the
// first window after the warm-up and in the last.
type rssGrowth struct {
	MB, Memories [2]float64
}

// perMemory is the growth in bytes per memory stored meanwhile, 0 when
// none was.
func (g rssGrowth) perMemory() float64 {
	if g.Memories[1] <= g.Memories[0] {
		return 0
	}
	return (g.MB[1] - g.MB[0]) * (1 << 20) / (g.Memories[1] - g.Memories[0])
}

// check says how g broke its bound, "" if it did not. With distinct texts
// resident memory may grow by soakPerMemory a memory stored, plus
// soakCachesMB; otherwise the store does not grow after the warm-up and
// neither may resident memory, but for ×1.15 + 16 MB.
func (g rssGrowth) check(distinct bool, dims int) string {
	grew := g.MB[1] - g.MB[0]
	if !distinct {
		if g.MB[1] > g.MB[0]*1.15+16 {
			return fmt.Sprintf("resident memory grew from %.0f to %.0f MB (bound: ×1.15 + 16 MB)", g.MB[0], g.MB[1])
		}
		return ""
	}
	n := max(0, g.Memories[1]-g.Memories[0])
	if per := soakPerMemory(dims); grew > n*per/(1<<20)+soakCachesMB {
		return fmt.Sprintf("resident memory grew from %.0f to %.0f MB for %.0f memories, %.0f bytes each (bound: %.0f bytes a memory + %d MB)",
			g.MB[0], g.MB[1], n, g.perMemory(), per, soakCachesMB)
	}
	return ""
}

// soakPerMemory is how much resident memory a stored memory may add: its
// float32 vector, which lives in RAM, and 2 KB for the rest (its share of
// SQLite's pages and the full-text index as far as they are cached, the
// index's maps, the heap's headroom).
func soakPerMemory(dims int) float64 { return float64(4*dims + 2048) }

// soakCachesMB absorbs what moves without the memories: a collection's
// timing, a retraining's buffers.
const soakCachesMB = 8
