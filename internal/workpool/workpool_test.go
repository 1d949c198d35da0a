package workpool

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every task runs once, on a goroutine named within bounds, and never more
// goroutines at once than asked for.
func TestRun(t *testing.T) {
	tests := []struct{ workers, tasks, wantGoroutines int }{
		{0, 0, 1}, {0, 5, 1}, {1, 5, 1}, {4, 0, 1}, {4, 3, 3}, {4, 100, 4}, {16, 1000, 16},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d workers %d tasks", tt.workers, tt.tasks), func(t *testing.T) {
			runs := make([]atomic.Int32, tt.tasks)
			var running, peak atomic.Int32
			var badWorker atomic.Int32
			Run(tt.workers, tt.tasks, func(w, task int) {
				if w < 0 || w >= tt.wantGoroutines {
					badWorker.Store(int32(w) + 1)
				}
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				runs[task].Add(1)
				running.Add(-1)
			})
			for task := range runs {
				if n := runs[task].Load(); n != 1 {
					t.Fatalf("task %d ran %d times", task, n)
				}
			}
			if w := badWorker.Load(); w != 0 {
				t.Fatalf("worker %d out of [0, %d)", w-1, tt.wantGoroutines)
			}
			if p := int(peak.Load()); p > tt.wantGoroutines {
				t.Fatalf("%d tasks at once, want at most %d", p, tt.wantGoroutines)
			}
		})
	}
}

// Run really runs workers tasks at once, the caller's goroutine among
// them: each task waits for all the others, which a pool of fewer
// goroutines never lets happen.
func TestRunIsConcurrent(t *testing.T) {
	const workers = 4
	var arrived sync.WaitGroup
	arrived.Add(workers)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	var late atomic.Bool
	Run(workers, workers, func(_, _ int) {
		arrived.Done()
		select {
		case <-all:
		case <-time.After(5 * time.Second):
			late.Store(true)
		}
	})
	if late.Load() {
		t.Fatalf("fewer than %d tasks ran at once", workers)
	}
}

func TestTry(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name           string
		workers, tasks int
		failAt         int // -1: none fails
		wantRuns       int // -1: not checked (concurrent workers may start a few more)
	}{
		{"none fail", 4, 50, -1, 50},
		{"no tasks", 4, 0, -1, 0},
		{"serial stops at the failure", 1, 10, 3, 4},
		{"first of many fails", 4, 1000, 0, -1},
		{"last fails", 2, 10, 9, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var runs atomic.Int32
			err := Try(tt.workers, tt.tasks, func(task int) error {
				runs.Add(1)
				if task == tt.failAt {
					return fmt.Errorf("task %d: %w", task, boom)
				}
				return nil
			})
			if (tt.failAt >= 0) != errors.Is(err, boom) {
				t.Fatalf("err %v, want failure: %v", err, tt.failAt >= 0)
			}
			if tt.wantRuns >= 0 && int(runs.Load()) != tt.wantRuns {
				t.Fatalf("%d tasks ran, want %d", runs.Load(), tt.wantRuns)
			}
			if tt.failAt == 0 && int(runs.Load()) >= tt.tasks {
				t.Fatalf("all %d tasks ran after the first failed", tt.tasks)
			}
		})
	}
}
