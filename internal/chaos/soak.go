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
}

// Soak runs a fixed ingest and recall load for Duration, sampling the
// process's resident memory, goroutines and open files and the streams'
// sizes each second, and passes when, after the warm-up, they stay flat:
// the median of the last ten samples against the first ten after warm-up.
func Soak(ctx context.Context, env Env, o SoakOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "soak"}
	up, nc, err := env.start(ctx, "soak", nil)
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	// The texts cycle after the warm-up: from then on every event is a
	// duplicate (stored memories stay as many), so what grows after it
	// is retained by design (the events stream, the capture cursors) or
	// leaked.
	n := int(o.Rate * o.Duration.Seconds())
	warmup := max(10*time.Second, o.Duration/5)
	load := NewPooledLoad(up.Ingest(), n, int(o.Rate*warmup.Seconds()), o.Rate, env.Seed)
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
	rss0, rss1 := med(first, rss), med(last, rss)
	g0, g1 := med(first, gor), med(last, gor)
	f0, f1 := med(first, fds), med(last, fds)
	w1 := med(last, work)
	if rss1 > rss0*1.15+16 {
		r.fail("resident memory grew from %.0f to %.0f MB (bound: ×1.15 + 16 MB)", rss0, rss1)
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
		"rssMB": [2]float64{rss0, rss1}, "goroutines": [2]float64{g0, g1}, "openFiles": [2]float64{f0, f1}, "workBacklog": w1,
		"eventsMB": end.EventsMB, "kvMB": end.KVMB, "recalls": len(lat), "recallP50ms": p50, "recallP99ms": p99, "samples": samples}
	r.Summary = fmt.Sprintf("%.0f s at %.0f events/s + %.0f recalls/s: RSS %.0f→%.0f MB, goroutines %.0f→%.0f, open files %.0f→%.0f, work backlog %.0f, events stream %.1f MB, KV %.2f MB, recall p50 %.1f ms p99 %.1f ms",
		o.Duration.Seconds(), o.Rate, o.RecallRate, rss0, rss1, g0, g1, f0, f1, w1, end.EventsMB, end.KVMB, p50, p99)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}
