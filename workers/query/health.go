package query

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// deadLetterWait bounds the stream-info call a stats reply waits for.
const deadLetterWait = 2 * time.Second

// deadLetters counts who's messages on the dead-letter stream: the events
// and transcript entries published under its agent id. Work items carry no
// agent in their subject and an admin call has none, so neither is counted.
func (s *Service) deadLetters(ctx context.Context, who memory.Who) *int {
	if s.js == nil || who.IsAdmin() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, deadLetterWait)
	defer cancel()
	n := 0
	st, err := s.js.Stream(ctx, schemas.StreamDLQ)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return &n
	}
	if err != nil {
		return nil
	}
	agent := who.AgentID()
	for _, filter := range []string{
		schemas.DLQPrefix + ".*." + schemas.EventsPrefix + ".*." + agent,
		schemas.DLQPrefix + ".*." + schemas.TranscriptPrefix + "." + agent + ".*",
	} {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return nil
		}
		for _, c := range info.State.Subjects {
			n += int(c)
		}
	}
	return &n
}
