package query

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The pool runs every job; jobs that come one after another share one
// worker, jobs at once get one each; stop ends the workers.
func TestWorkerPool(t *testing.T) {
	before := runtime.NumGoroutine()
	p := newWorkerPool()
	var ran atomic.Int64
	for range 100 {
		done := make(chan struct{})
		p.run(func() { ran.Add(1); close(done) })
		<-done
		// Wait for the worker to be idle again before the next job.
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before+1 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	if n := runtime.NumGoroutine() - before; n > 1 {
		t.Fatalf("100 jobs one after another left %d workers, want 1", n)
	}
	release := make(chan struct{})
	var started sync.WaitGroup
	for range 8 {
		started.Add(1)
		p.run(func() { started.Done(); <-release; ran.Add(1) })
	}
	started.Wait()
	if n := runtime.NumGoroutine() - before; n != 8 {
		t.Fatalf("8 jobs at once run on %d workers", n)
	}
	close(release)
	p.stop()
	p.stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine() - before; n > 0 || ran.Load() != 108 {
		t.Fatalf("after stop: %d workers left, %d jobs ran", n, ran.Load())
	}
}
