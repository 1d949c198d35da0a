package stage

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// heartbeat tells the server the batch is still being worked on, so a slow
// LLM or embedding call is not mistaken for a dead worker.
func (s *Stage) heartbeat(msgs []jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.Config.AckWait / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				for _, m := range msgs {
					_ = m.InProgress()
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
