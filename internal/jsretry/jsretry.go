// Package jsretry carries JetStream API calls through a cluster's brief
// unavailability: while a node restarts or the meta leader is re-elected,
// creating a consumer or a stream times out or answers 503 for a few
// seconds. A worker that gave up then would stop its whole node.
package jsretry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Transient reports whether err may pass by itself: a request that timed
// out or found no responder, or a server that says it is unavailable for
// now. JetStream not being enabled at all is not transient.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrDisconnected) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrNoSuitablePeers:
			return true // a replica's node is offline: it comes back
		case jetstream.JSErrCodeDuplicateFilterSubjects, jetstream.JSErrCodeOverlappingFilterSubjects,
			jetstream.JSErrCodeConsumerEmptyFilter:
			return false // a 500 that says the request is wrong
		}
		return apiErr.Code == 503 || apiErr.Code == 500
	}
	return false
}

// jsErrNoSuitablePeers is JetStream's "no suitable peers for placement":
// too few nodes are up to place every replica of a new stream or bucket.
const jsErrNoSuitablePeers jetstream.ErrorCode = 10005

// Backoff bounds the wait between attempts.
var Backoff = struct{ First, Max time.Duration }{100 * time.Millisecond, 5 * time.Second}

// Attempt bounds each call, whatever ctx's deadline: a request sent while
// the connection is down can otherwise wait for all of it.
var Attempt = 5 * time.Second

// Do calls fn until it succeeds, fails for good (not Transient) or ctx
// ends, waiting longer after each transient failure. Each failure is
// logged with what, so an operator sees why a stage has not started.
func Do[T any](ctx context.Context, log *slog.Logger, what string, fn func(context.Context) (T, error)) (T, error) {
	return retry(ctx, log, what, Attempt, fn)
}

// Open is Do for a call that keeps its ctx after it returns, as a watch or
// a subscription does for its life: its attempts get ctx itself, with no
// bound of their own (JetStream's requests time out by themselves).
func Open[T any](ctx context.Context, log *slog.Logger, what string, fn func(context.Context) (T, error)) (T, error) {
	return retry(ctx, log, what, 0, fn)
}

// retry is Do with each attempt bounded by bound, or not at all for 0.
func retry[T any](ctx context.Context, log *slog.Logger, what string, bound time.Duration, fn func(context.Context) (T, error)) (T, error) {
	wait := Backoff.First
	for attempt := 1; ; attempt++ {
		var v T
		var err error
		if bound > 0 {
			actx, cancel := context.WithTimeout(ctx, bound)
			v, err = fn(actx)
			cancel()
		} else {
			v, err = fn(ctx)
		}
		if err == nil || !Transient(err) || ctx.Err() != nil {
			return v, err
		}
		if log != nil {
			log.Warn("JetStream unavailable; retrying", "what", what, "attempt", attempt, "retryIn", wait, "err", err)
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(wait):
		}
		wait = min(wait*2, Backoff.Max)
	}
}
