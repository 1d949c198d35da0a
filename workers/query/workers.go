package query

import "sync"

// workerPool runs the handlers on goroutines kept between requests. A
// recall's call chain is deep, and a new goroutine's stack, sized for the
// process's many small goroutines, grew and was copied several times in
// every request: about 20 µs of a recall's CPU at 100,000 memories. A
// worker keeps the stack it grew. The service's semaphores bound the
// handlers running at once, and so the workers: a request finds an idle
// worker or starts one, and a worker waits for the next request until the
// service stops.
type workerPool struct {
	jobs     chan func()
	quit     chan struct{}
	stopOnce sync.Once
}

func newWorkerPool() workerPool {
	return workerPool{jobs: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle worker, or on a new one.
func (p *workerPool) run(f func()) {
	select {
	case p.jobs <- f:
	default:
		go p.work(f)
	}
}

func (p *workerPool) work(f func()) {
	for {
		f()
		select {
		case f = <-p.jobs:
		case <-p.quit:
			return
		}
	}
}

// stop lets the idle workers end, and each busy one once its request is
// done; the pool takes no work after it.
func (p *workerPool) stop() {
	p.stopOnce.Do(func() { close(p.quit) })
}
