package query

import "sync"

// workerPool runs the handlers on goroutines kept between requests. A
// recall's call chain is deep, and a new goroutine's stack, sized for the
// process's many small goroutines, grew and was copied several times in
// every request: about 20 µs of a recall's CPU at 100,000 memories. A
// worker keeps the stack it grew. The service's semaphores bound the
// handlers running at once, and so the workers: a request takes the worker
// that went idle last (its stack is the warmest) or starts one, and a
// worker waits for its next request until the service stops.
//
// Idle workers are kept on a stack under a mutex, not found by a send on a
// shared channel: a worker that has finished its request but not yet
// reached the receive would be missed, and a new worker started beside it.
// Here a worker is idle exactly when it is on the stack, so a request made
// after the previous one finished always reuses its worker.
type workerPool struct {
	mu      sync.Mutex
	idle    []*worker
	stopped bool
	started int // workers started, for tests
	ended   int // workers returned, for tests
}

// worker receives its next job on next, which holds one so that run never
// waits; next is closed when the pool stops while the worker is idle.
type worker struct {
	next chan func()
}

func newWorkerPool() *workerPool {
	return &workerPool{}
}

// run runs f on the idle worker that went idle last, or on a new one.
// After stop, f still runs, on a goroutine of its own.
func (p *workerPool) run(f func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 && !p.stopped {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.next <- f
		return
	}
	stopped := p.stopped
	if !stopped {
		p.started++
	}
	p.mu.Unlock()
	if stopped {
		go f()
		return
	}
	w := &worker{next: make(chan func(), 1)}
	go w.work(p, f)
}

func (w *worker) work(p *workerPool, f func()) {
	for {
		f()
		p.mu.Lock()
		if p.stopped {
			p.ended++
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, w)
		p.mu.Unlock()
		var ok bool
		if f, ok = <-w.next; !ok {
			p.mu.Lock()
			p.ended++
			p.mu.Unlock()
			return
		}
	}
}

// stop ends the idle workers, and each busy one once its request is done.
func (p *workerPool) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	for _, w := range p.idle {
		close(w.next)
	}
	p.idle = nil
}

// counts reports the workers started, those idle now and those ended.
func (p *workerPool) counts() (started, idle, ended int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started, len(p.idle), p.ended
}
