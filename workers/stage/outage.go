package stage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// Provider outages (errors wrapping schemas.ErrUnavailable) are waited
// out: a batch is held and retried in place for up to MaxHold, then handed
// back with a delay of up to UnavailableRetry, and neither counts towards
// MaxDeliver while the message is younger than MaxOutage and the stage's
// probe (if any) says the provider is down.
const (
	UnavailableRetry = 10 * time.Second
	MaxHold          = 2 * time.Minute
	MaxOutage        = 30 * time.Minute
)

// providerUp asks the stage's probe; with none, the provider is taken to
// be down (the failure said so).
func (s *Stage) providerUp(ctx context.Context) bool {
	if s.Probe == nil {
		return false
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return s.Probe(pctx) == nil
}

// unavailable reports a failure that is a provider's outage.
func unavailable(err error) bool {
	return err != nil && errors.Is(err, schemas.ErrUnavailable) && !IsPermanent(err)
}

// waitOut runs a one-phase handler on a batch and, while some of its
// messages fail on a provider's outage, runs it again on those after a
// growing wait (up to UnavailableRetry), holding them (the heartbeat keeps
// them in progress) rather than handing them back: an outage costs no
// deliveries and keeps the messages' order. It stops waiting when ctx
// (the stage's run) ends; what still failed is then settled as usual.
func (s *Stage) waitOut(ctx context.Context, b *batchRun) []error {
	errs := s.safely(len(b.live), func() []error { return s.Handle(b.ctx, b.live) })
	held := time.Now()
	for wait := 500 * time.Millisecond; ; wait = min(2*wait, UnavailableRetry) {
		var idx []int
		for i, err := range errs {
			if unavailable(err) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 || time.Since(held) > MaxHold {
			return errs
		}
		if s.providerUp(ctx) {
			// The provider answers: these messages fail on their own
			// account, and their deliveries count.
			for _, i := range idx {
				errs[i] = fmt.Errorf("%s (while the provider answered a probe)", errs[i])
			}
			return errs
		}
		s.Log.Warn("provider unavailable; holding the batch", "stage", s.Name, "messages", len(idx), "retryIn", wait, "err", errs[idx[0]])
		select {
		case <-ctx.Done():
			return errs
		case <-time.After(wait):
		}
		again := make([]jetstream.Msg, len(idx))
		for j, i := range idx {
			again[j] = b.live[i]
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Config.MaxDuration)
		res := s.safely(len(again), func() []error { return s.Handle(actx, again) })
		cancel()
		if res == nil {
			res = make([]error, len(again))
		}
		if errs == nil {
			errs = make([]error, len(b.live))
		}
		for j, i := range idx {
			errs[i] = res[j]
		}
	}
}
