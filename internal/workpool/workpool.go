// Package workpool runs independent tasks on a bounded number of
// goroutines: the one worker pool of the engine and the workers.
package workpool

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Run calls fn(w, t) for every task t in [0, tasks) on up to workers
// goroutines, the caller's included, and returns when all are done. w, in
// [0, workers), names the goroutine, so fn can keep per-worker state
// without locks. Tasks are handed out one at a time from a shared counter
// so that a goroutine that gets descheduled does not hold up the others
// with a fixed share of the work. With workers <= 1 the caller runs every
// task in order.
func Run(workers, tasks int, fn func(w, t int)) {
	workers = min(workers, tasks)
	if workers <= 1 {
		for t := range tasks {
			fn(0, t)
		}
		return
	}
	var next atomic.Int64
	work := func(w int) {
		for {
			t := int(next.Add(1) - 1)
			if t >= tasks {
				return
			}
			fn(w, t)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Go(func() { work(w) })
	}
	work(0)
	wg.Wait()
}

// Try is Run for tasks that can fail: once one has failed no further task
// starts, and Try returns the failures joined (nil when none failed).
func Try(workers, tasks int, fn func(t int) error) error {
	// A goroutine stops calling fn after its own failure, so each slot is
	// written at most once and only by its goroutine.
	errs := make([]error, max(min(workers, tasks), 1))
	var failed atomic.Bool
	Run(workers, tasks, func(w, t int) {
		if failed.Load() {
			return
		}
		if err := fn(t); err != nil {
			errs[w] = err
			failed.Store(true)
		}
	})
	return errors.Join(errs...)
}
