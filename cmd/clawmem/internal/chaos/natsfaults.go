package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/internal/natsembed"
)

// NATSOptions size the NATS-faults scenario.
type NATSOptions struct {
	Events   int           // events published across the server's restarts
	Rate     float64       // events per second
	Restarts int           // restarts of the server under load
	Down     time.Duration // how long the server stays down each time
	FullMB   int           // storage left free when the limit is set (MB)
	Flood    int           // recall requests fired at once
}

// natsServer is the external server the scenario restarts: same port,
// same store directory.
type natsServer struct {
	opts natsembed.Options
	srv  *natsembed.Server
}

func (s *natsServer) start(maxStore int64) error {
	s.opts.MaxStore = maxStore
	var err error
	for range 50 { // the port may linger a moment after a stop
		if s.srv, err = natsembed.Start(s.opts); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func (s *natsServer) stop() {
	if s.srv != nil {
		s.srv.Stop()
		s.srv = nil
	}
}

// NATSFaults runs `clawmem up` against an external NATS server (in this
// process) and, under load: restarts the server Restarts times; caps
// JetStream's storage just above what it holds and publishes big events
// until it is full, then lifts the cap with a restart; and fires Flood
// recall requests at once. It passes when ingest answered 503 (never lost
// or accepted and dropped) while the store was full, every acknowledged
// event is stored exactly once, recall answered while the store was full,
// and the query service answers normally after the flood: nothing wedged.
func NATSFaults(ctx context.Context, env Env, o NATSOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "nats faults"}
	ports, err := FreePorts(1)
	if err != nil {
		return r, err
	}
	dir, err := mkdirTemp(env.Scratch, "nats")
	if err != nil {
		return r, err
	}
	ns := &natsServer{opts: natsembed.Options{StoreDir: filepath.Join(dir, "jetstream"), Port: ports[0]}}
	if err := ns.start(0); err != nil {
		return r, err
	}
	defer ns.stop()
	url := fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
	up, nc, err := env.start(ctx, "nats-client", map[string]any{"nats": map[string]any{"url": url}})
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return r, err
	}

	// 1. Restarts under load.
	load := NewLoad(up.Ingest(), o.Events, o.Rate, env.Seed)
	loadCtx, cancel := context.WithTimeout(ctx, time.Duration(float64(o.Events)/o.Rate*float64(time.Second))+3*time.Minute)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()
	span := time.Duration(float64(o.Events) / o.Rate * float64(time.Second))
	for i := range o.Restarts {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Until(start.Add(span * time.Duration(i+1) / time.Duration(o.Restarts+1)))):
		}
		ns.stop()
		time.Sleep(o.Down)
		if err := ns.start(0); err != nil {
			return r, fmt.Errorf("restart %d: %w", i+1, err)
		}
	}
	<-loaded
	t1, err := load.Settle(ctx, nc, 60*time.Second)
	if err != nil {
		r.fail("counting after the restarts: %v", err)
	}

	// 2. A full store: the cap is what JetStream holds now plus FullMB.
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return r, fmt.Errorf("account info: %w", err)
	}
	used := int64(ai.Store)
	ns.stop()
	if err := ns.start(used + int64(o.FullMB)<<20); err != nil {
		return r, err
	}
	big := NewLoad(up.Ingest(), 4*o.FullMB*(1<<20)/(32<<10)+1, 40, env.Seed+1)
	big.Pad = 32 << 10
	for i := range big.texts { // other events than the first load's
		big.texts[i] = "Remember that the full-store batch " + big.texts[i][len("Remember that "):]
	}
	bigCtx, cancelBig := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelBig()
	bigDone := make(chan struct{})
	go func() { big.Run(bigCtx); close(bigDone) }()
	refusedAt := time.Time{}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if big.Codes()["503"] > 0 {
			refusedAt = time.Now()
			break
		}
	}
	var fullRecall string
	if refusedAt.IsZero() {
		r.fail("ingest never refused an event with JetStream's storage full")
	} else {
		// Full for a while: recall still answers.
		time.Sleep(3 * time.Second)
		if mode, failed := recallOnce(ctx, nc, load.Text(0)); failed {
			r.fail("recall failed while the store was full: %s", mode)
		} else {
			fullRecall = mode
		}
	}
	refused := big.Codes()["503"]
	ns.stop()
	if err := ns.start(0); err != nil {
		return r, err
	}
	<-bigDone
	t2, err := big.Settle(ctx, nc, 60*time.Second)
	if err != nil {
		r.fail("counting after the full store: %v", err)
	}
	for code, n := range big.Codes() {
		if code != "202" && code != "503" && code != "no answer" {
			r.fail("ingest answered %d events with %s while the store was full", n, code)
		}
	}

	// 3. A flood of requests: the service may shed some, then must answer.
	var answered, failedN atomic.Int64
	var wg sync.WaitGroup
	floodStart := time.Now()
	for i := range o.Flood {
		wg.Go(func() {
			if _, failed := recallOnce(ctx, nc, fmt.Sprintf("%s, flood %d", load.Text(i), i)); failed {
				failedN.Add(1)
			} else {
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	floodSec := time.Since(floodStart).Seconds()
	after := time.Now()
	if mode, failed := recallOnce(ctx, nc, load.Text(1)); failed || time.Since(after) > 5*time.Second {
		r.fail("recall after the flood: %s in %s", mode, time.Since(after))
	}
	var slow uint64
	if vz, err := ns.srv.Varz(nil); err == nil {
		slow = uint64(vz.SlowConsumers)
	}

	t := t1.plus(t2)
	r.checkNoDLQ(ctx, nc, t)
	if !up.Running() {
		r.fail("clawmem up exited:\n%s", up.LastLines(60))
	} else if err := up.Stop(); err != nil {
		r.fail("graceful stop: %v", err)
	}
	r.Figures = map[string]any{"restarts": o.Restarts, "downSec": o.Down.Seconds(), "restartEvents": t1, "fullEvents": t2,
		"refused503": refused, "recallWhileFull": fullRecall, "flood": o.Flood, "floodAnswered": answered.Load(),
		"floodFailed": failedN.Load(), "floodSec": floodSec, "slowConsumers": slow}
	r.Summary = fmt.Sprintf("server restarted %d× (down %.0f s) under %.0f events/s; store full: %d answers 503, recall %s, all stored after; flood of %d recalls: %d answered, %d shed in %.1f s, slow consumers %d, answering after",
		o.Restarts, o.Down.Seconds(), o.Rate, refused, fullRecall, o.Flood, answered.Load(), failedN.Load(), floodSec, slow)
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}

// plus adds two tallies of different events.
func (t Tally) plus(u Tally) Tally {
	return Tally{Offered: t.Offered + u.Offered, Acked: t.Acked + u.Acked, Texts: t.Texts + u.Texts, Stored: t.Stored + u.Stored, Lost: t.Lost + u.Lost,
		Dup: t.Dup + u.Dup, StoredUnacked: t.StoredUnacked + u.StoredUnacked, DLQ: t.DLQ + u.DLQ}
}

// ClusterOptions size the cluster scenario.
type ClusterOptions struct {
	Events   int
	Rate     float64
	Restarts int           // node restarts, one node at a time, in turn
	Down     time.Duration // how long a node stays down
}

// ClusterFaults runs `clawmem up` against a 3-node JetStream cluster in
// this process (streams and buckets replicated 3 times) and, while events
// are published, stops and restarts one node at a time, Restarts times in
// turn. It passes when every acknowledged event is stored exactly once,
// nothing is dead-lettered and clawmem up stops cleanly.
func ClusterFaults(ctx context.Context, env Env, o ClusterOptions) (Result, error) {
	start := time.Now()
	r := Result{Scenario: "nats cluster"}
	dir, err := mkdirTemp(env.Scratch, "cluster")
	if err != nil {
		return r, err
	}
	c, err := natsembed.StartCluster(dir, 3)
	if err != nil {
		return r, err
	}
	defer c.Shutdown()
	up, nc, err := env.start(ctx, "cluster-client", map[string]any{"nats": map[string]any{"url": c.URLs(), "replicas": 3}})
	if err != nil {
		return r, err
	}
	defer up.Kill()
	defer nc.Close()
	load := NewLoad(up.Ingest(), o.Events, o.Rate, env.Seed)
	span := time.Duration(float64(o.Events) / o.Rate * float64(time.Second))
	loadCtx, cancel := context.WithTimeout(ctx, span+5*time.Minute)
	defer cancel()
	loaded := make(chan struct{})
	go func() { load.Run(loadCtx); close(loaded) }()
	// An instance that died answers nothing more: the load stops at once
	// and the report says why, rather than after minutes of retries.
	go func() {
		select {
		case <-up.Exited():
			cancel()
		case <-loaded:
		}
	}()
	var ready []float64
	for i := range o.Restarts {
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(time.Until(start.Add(span * time.Duration(i+1) / time.Duration(o.Restarts+1)))):
		}
		node := i % c.Size()
		c.Stop(node)
		time.Sleep(o.Down)
		if err := c.Restart(node); err != nil {
			return r, fmt.Errorf("restart node %d: %w", node+1, err)
		}
		t0 := time.Now()
		if err := c.WaitReady(60 * time.Second); err != nil {
			r.fail("node %d back: %v", node+1, err)
		}
		ready = append(ready, time.Since(t0).Seconds())
	}
	<-loaded
	if !up.Running() {
		r.fail("clawmem up exited:\n%s", up.LastLines(60))
	} else {
		t, err := load.Settle(ctx, nc, 60*time.Second)
		if err != nil {
			r.fail("counting the store: %v", err)
		}
		r.checkNoDLQ(ctx, nc, t)
		if err := up.Stop(); err != nil {
			r.fail("graceful stop: %v", err)
		}
	}
	var worst float64
	for _, d := range ready {
		worst = max(worst, d)
	}
	r.Figures = map[string]any{"nodes": c.Size(), "restarts": o.Restarts, "downSec": o.Down.Seconds(), "rate": o.Rate, "maxRejoinSec": worst, "answers": load.Codes()}
	r.Summary = fmt.Sprintf("3 nodes, replicas 3: %d node restarts in turn (down %.0f s, current again within %.1f s) under %.0f events/s, ingest answers %v",
		o.Restarts, o.Down.Seconds(), worst, o.Rate, load.Codes())
	r.Seconds = time.Since(start).Seconds()
	r.finish()
	if !r.Pass {
		up.SaveLogs()
	}
	return r, nil
}
