package query

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitCounts waits until the pool's idle and ended workers are as wanted.
func waitCounts(t *testing.T, p *workerPool, idle, ended int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, i, e := p.counts()
		if i == idle && e == ended {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers idle and %d ended, want %d and %d", i, e, idle, ended)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// The pool runs every job; a job that comes after the previous one is done
// reuses its worker, jobs at once get one each; stop ends the idle workers
// at once and a busy one when its job is done; a job run after stop still
// runs. The counts come from the pool, not runtime.NumGoroutine, which
// counts whatever else the test binary still runs.
func TestWorkerPool(t *testing.T) {
	p := newWorkerPool()
	var ran atomic.Int64
	for range 100 {
		done := make(chan struct{})
		p.run(func() { ran.Add(1); close(done) })
		<-done
		waitCounts(t, p, 1, 0)
	}
	if started, _, _ := p.counts(); started != 1 {
		t.Fatalf("100 jobs one after another started %d workers, want 1", started)
	}

	release := make(chan struct{})
	var running sync.WaitGroup
	for range 8 {
		running.Add(1)
		p.run(func() { running.Done(); <-release; ran.Add(1) })
	}
	running.Wait()
	if started, idle, _ := p.counts(); started != 8 || idle != 0 {
		t.Fatalf("8 jobs at once: %d workers started, %d idle; want 8 and 0", started, idle)
	}
	close(release)
	waitCounts(t, p, 8, 0)

	busy := make(chan struct{})
	gate := make(chan struct{})
	p.run(func() { close(busy); <-gate; ran.Add(1) })
	<-busy
	p.stop()
	p.stop()
	waitCounts(t, p, 0, 7)
	close(gate)
	waitCounts(t, p, 0, 8)

	after := make(chan struct{})
	p.run(func() { ran.Add(1); close(after) })
	select {
	case <-after:
	case <-time.After(10 * time.Second):
		t.Fatal("a job run after stop never ran")
	}
	if started, _, _ := p.counts(); started != 8 || ran.Load() != 110 {
		t.Fatalf("%d workers started, %d jobs ran; want 8 and 110", started, ran.Load())
	}
}
