package stage

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// settle acks, retries or dead-letters one message and names the outcome.
func (s *Stage) settle(ctx context.Context, m jetstream.Msg, err error) string {
	if err == nil {
		if aerr := m.DoubleAck(ctx); aerr != nil {
			// The work is done: its redelivery finds it so, and is
			// not the message's failure.
			s.notCounted(m)
			s.Log.Warn("ack failed; the message will be redelivered", "stage", s.Name, "err", aerr)
		} else if md, merr := m.Metadata(); merr == nil {
			s.State.uncounted.Delete(md.Sequence.Stream)
		}
		return "ok"
	}
	if errors.Is(err, ErrNotWriter) {
		// Not this message's failure: the partition changed hands. Its
		// next writer takes it at once, and the attempt is not counted
		// towards the DLQ.
		s.notCounted(m)
		_ = m.Nak()
		return "retry"
	}
	md, merr := m.Metadata()
	attempts := 1
	if merr == nil {
		attempts = s.attempts(md)
	}
	if unavailable(err) && (merr != nil || time.Since(md.Timestamp) < MaxOutage) && !s.providerUp(ctx) {
		// A provider's outage is not the message's fault: the delivery is
		// not counted, and the message does not go to the DLQ for it
		// (until it is MaxOutage old).
		n := s.notCounted(m)
		delay := min(s.Config.Backoff[min(n-1, len(s.Config.Backoff)-1)], UnavailableRetry)
		s.Log.Warn("provider unavailable; will retry", "stage", s.Name, "retryIn", delay, "err", err)
		_ = m.NakWithDelay(delay)
		return "unavailable"
	}
	if IsPermanent(err) || attempts >= s.Config.MaxDeliver {
		return s.deadLetter(ctx, m, err.Error())
	}
	delay := s.Config.Backoff[min(attempts-1, len(s.Config.Backoff)-1)]
	s.Log.Warn("handling failed; will retry", "stage", s.Name, "attempt", attempts, "retryIn", delay, "err", err)
	_ = m.NakWithDelay(delay)
	return "retry"
}

// attempts is a message's deliveries that count towards MaxDeliver: all
// but those that ended in a provider's outage (as this process saw them).
func (s *Stage) attempts(md *jetstream.MsgMetadata) int {
	v, _ := s.State.uncounted.Load(md.Sequence.Stream)
	n, _ := v.(int)
	return int(md.NumDelivered) - n
}

// notCounted records a delivery of m that does not count towards
// MaxDeliver, and returns how many of its deliveries do not.
func (s *Stage) notCounted(m jetstream.Msg) int {
	md, err := m.Metadata()
	if err != nil {
		return 1
	}
	v, _ := s.State.uncounted.Load(md.Sequence.Stream)
	n, _ := v.(int)
	n++
	s.State.uncounted.Store(md.Sequence.Stream, n)
	return n
}

// handBack stops consuming and hands the messages fetched but not yet
// handled back at once (a nak), rather than leaving them to wait out
// AckWait: a partition's next writer takes them, and the delivery does
// not count towards MaxDeliver.
func (s *Stage) handBack(it jetstream.MessagesContext) {
	it.Drain()
	n := 0
	for {
		m, err := it.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			break
		}
		s.notCounted(m)
		_ = m.Nak()
		n++
	}
	if n > 0 {
		s.Log.Info("stage stopped; handed back the messages it had not handled", "stage", s.Name, "messages", n)
	}
}
