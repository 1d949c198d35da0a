package producers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/schemas"
)

// HookQueue is the queue group of the hook service: any number of ingest
// processes share the requests.
const HookQueue = "clawmem-hooks"

// hookTimeout bounds one request's publish: the agent's own request has a
// deadline of its own, and a reply after it is lost anyway.
const hookTimeout = 10 * time.Second

// HookReply answers a hook request: the event is persisted (Duplicate when
// the same event was handed in before), or Error says why not. It carries
// no stream sequence, which would tell every agent how much all agents
// publish.
type HookReply struct {
	OK        bool   `json:"ok"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Error     string `json:"error,omitempty"`
	// Code is invalid or too_large (retrying cannot help) or unavailable
	// (retry).
	Code string `json:"code,omitempty"`
}

// HookService answers agents' hook requests on clawmem.hooks.v1.<agent>.<kind>:
// the request body is the event envelope a producer would publish, the
// Nats-Msg-Id header the event's id. The agent is the subject's (NATS
// permissions decide who may send on it); an envelope naming another agent
// or kind is refused, and the Msg-Id is put in the agent's own namespace.
type HookService struct {
	pub *Publisher
	log *slog.Logger
}

// NewHookService serves hook requests with pub.
func NewHookService(pub *Publisher, log *slog.Logger) *HookService {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HookService{pub: pub, log: log}
}

// Run answers requests on nc until ctx ends, then drains the subscription.
func (h *HookService) Run(ctx context.Context, nc *nats.Conn) error {
	sub, err := nc.QueueSubscribe(schemas.HooksPrefix+".*.*", HookQueue, func(m *nats.Msg) {
		reply := h.Handle(ctx, m)
		b, _ := json.Marshal(reply)
		if m.Reply != "" {
			if err := m.Respond(b); err != nil {
				h.log.Warn("hook reply not sent", "subject", m.Subject, "err", err)
			}
		}
	})
	if err != nil {
		return fmt.Errorf("hook service: %w", err)
	}
	<-ctx.Done()
	return sub.Drain()
}

// Handle checks and publishes one hook request.
func (h *HookService) Handle(ctx context.Context, m *nats.Msg) HookReply {
	agent, kind, err := schemas.ParseHookSubject(m.Subject)
	if err != nil {
		return failure(err)
	}
	var env schemas.HookEvent
	dec := json.NewDecoder(bytes.NewReader(m.Data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return failure(fmt.Errorf("%w: the body is not an event envelope: %v", schemas.ErrInvalid, err))
	}
	if dec.More() {
		return failure(fmt.Errorf("%w: one envelope per request", schemas.ErrInvalid))
	}
	if env.V != schemas.Version {
		return failure(fmt.Errorf("%w: envelope version %d (want %d)", schemas.ErrInvalid, env.V, schemas.Version))
	}
	if env.Kind != "" && env.Kind != kind {
		return failure(fmt.Errorf("%w: the envelope's kind %q is not the subject's %q", schemas.ErrInvalid, env.Kind, kind))
	}
	if env.AgentID != "" && env.AgentID != agent {
		return failure(fmt.Errorf("%w: the envelope names agent %q, the subject %q: an agent hands in only its own events", schemas.ErrInvalid, env.AgentID, agent))
	}
	meta := Meta{SessionKey: env.SessionKey, SessionID: env.SessionID, RunID: env.RunID, ChannelID: env.ChannelID,
		Timestamp: env.Timestamp, MsgID: m.Header.Get(jetstream.MsgIDHeader)}
	ctx, cancel := context.WithTimeout(ctx, hookTimeout)
	defer cancel()
	ack, err := h.pub.Publish(ctx, kind, agent, env.Event, meta)
	if err != nil {
		if !errors.Is(err, schemas.ErrInvalid) && !errors.Is(err, ErrTooLarge) {
			h.log.Warn("hook event not persisted", "agent", agent, "kind", kind, "err", err)
		}
		return failure(err)
	}
	return HookReply{OK: true, Duplicate: ack.Duplicate}
}

func failure(err error) HookReply {
	code := "unavailable"
	switch {
	case errors.Is(err, ErrTooLarge):
		code = "too_large"
	case errors.Is(err, schemas.ErrInvalid):
		code = "invalid"
	}
	return HookReply{Error: err.Error(), Code: code}
}
