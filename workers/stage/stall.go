package stage

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watch notices a stalled stage: every quarter of StallAfter it asks the
// server what its consumer holds, and when messages wait (undelivered or
// unacknowledged) while none was acked or dead-lettered for StallAfter, it says so
// in the log and in the stage_stalled gauge, until the stage moves again.
func (s *Stage) watch(ctx context.Context, cons jetstream.Consumer) {
	gauge := s.Metrics.Stalled.WithLabelValues(s.Name)
	gauge.Set(0)
	// The stage's consumer may be run by another process next: its
	// gauge here would be stale.
	defer s.Metrics.Stalled.DeleteLabelValues(s.Name)
	t := time.NewTicker(s.Config.StallAfter / 4)
	defer t.Stop()
	stalled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ictx, cancel := context.WithTimeout(ctx, s.Config.StallAfter/4)
		info, err := cons.Info(ictx)
		cancel()
		if err != nil {
			continue // the server cannot say now; the next look will
		}
		if info.NumPending == 0 && info.NumAckPending == 0 {
			s.State.progress.Store(time.Now().UnixNano())
		}
		idle := time.Since(time.Unix(0, s.State.progress.Load()))
		switch {
		case idle > s.Config.StallAfter && !stalled:
			stalled = true
			gauge.Set(1)
			s.Log.Warn("stage stalled: messages wait and none was settled", "stage", s.Name, "for", idle.Round(time.Second),
				"pending", info.NumPending, "handling", info.NumAckPending, "redelivered", info.NumRedelivered)
		case idle <= s.Config.StallAfter && stalled:
			stalled = false
			gauge.Set(0)
			s.Log.Info("stage moving again", "stage", s.Name)
		}
	}
}
