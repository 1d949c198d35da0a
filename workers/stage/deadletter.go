package stage

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// deadLetter copies m to the DLQ with headers that say where, why and how
// often it failed, then acks it so it leaves the work stream. If the copy
// cannot be written the message is naked instead: it is never dropped.
func (s *Stage) deadLetter(ctx context.Context, m jetstream.Msg, reason string) string {
	h := nats.Header{}
	for k, v := range m.Headers() {
		// The Msg-Id would be deduplicated against the original's, and a
		// publisher's expectations (Nats-Expected-Stream: the events
		// stream) make the DLQ refuse the copy.
		if k != jetstream.MsgIDHeader && !strings.HasPrefix(k, "Nats-Expected-") {
			h[k] = v
		}
	}
	attempts := "1"
	if md, err := m.Metadata(); err == nil {
		attempts = strconv.Itoa(s.attempts(md))
		defer s.State.uncounted.Delete(md.Sequence.Stream)
		h.Set(schemas.HeaderDLQStream, md.Stream)
		h.Set(schemas.HeaderDLQSequence, strconv.FormatUint(md.Sequence.Stream, 10))
	}
	if len(reason) > 1024 {
		reason = reason[:1024]
	}
	host, _ := os.Hostname()
	h.Set(schemas.HeaderDLQStage, s.label())
	h.Set(schemas.HeaderDLQReason, reason)
	h.Set(schemas.HeaderDLQAttempts, attempts)
	h.Set(schemas.HeaderDLQSubject, m.Subject())
	h.Set(schemas.HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	h.Set(schemas.HeaderDLQWorker, fmt.Sprintf("%s/%d", host, os.Getpid()))
	dlq := &nats.Msg{Subject: schemas.DLQSubjectFor(s.label(), m.Subject()), Data: m.Data(), Header: h}
	if _, err := s.JS.PublishMsg(ctx, dlq); err != nil {
		s.Log.Error("dead-letter failed; keeping the message", "stage", s.Name, "err", err)
		_ = m.NakWithDelay(s.Config.Backoff[len(s.Config.Backoff)-1])
		return "retry"
	}
	s.Log.Warn("message dead-lettered", "stage", s.Name, "subject", m.Subject(), "attempts", attempts, "reason", reason)
	if err := m.DoubleAck(ctx); err != nil {
		s.Log.Warn("ack after dead-letter failed", "stage", s.Name, "err", err)
	}
	return "dlq"
}
