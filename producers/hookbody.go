package producers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// MaxHookBodyBytes bounds a whole hook body: the event at its limit plus
// room for ctx and the other wrapper fields.
const MaxHookBodyBytes = schemas.MaxEventBytes + 64<<10

// HookBody is a parsed hook body: what an OpenClaw plugin hook handler
// receives as (event, ctx), forwarded as
//
//	{"event": {...}, "ctx": {"agentId": "...", "sessionKey": "...", "sessionId": "...",
//	 "runId": "...", "channelId": "..."}, "msgId": "optional", "kind": "optional", "ts": 0}
type HookBody struct {
	// Kind is the body's optional "kind"; empty when the route names it.
	Kind schemas.EventKind
	// Agent is validated: a parsed body always has one.
	Agent string
	// Event is a JSON object; its shape is checked against Kind by Publish.
	Event json.RawMessage
	Meta  Meta
}

// hookWire is the body as sent. ctx may carry more fields than these
// (OpenClaw adds some over time); they are ignored.
type hookWire struct {
	Event json.RawMessage `json:"event"`
	Ctx   struct {
		AgentID    string `json:"agentId"`
		SessionKey string `json:"sessionKey"`
		SessionID  string `json:"sessionId"`
		RunID      string `json:"runId"`
		ChannelID  string `json:"channelId"`
	} `json:"ctx"`
	MsgID string `json:"msgId"`
	Kind  string `json:"kind"`
	TS    int64  `json:"ts"`
}

// ParseHookBodyFor parses a hook body for a request that may name the agent
// outside the body too (a query parameter, a header, a CLI flag). Either
// source may be empty, but not both, and when both are set they must agree:
// a caller cannot write into another agent's memory by mismatching them.
func ParseHookBodyFor(body []byte, agent string) (HookBody, error) {
	if len(body) > MaxHookBodyBytes {
		return HookBody{}, fmt.Errorf("%w: body is %d bytes (max %d)", ErrTooLarge, len(body), MaxHookBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return HookBody{}, fmt.Errorf(`%w: body is empty; send {"event": {...}, "ctx": {"agentId": "..."}}`, schemas.ErrInvalid)
	}
	if !utf8.Valid(body) {
		return HookBody{}, fmt.Errorf("%w: body is not valid UTF-8", schemas.ErrInvalid)
	}
	if !startsObject(body) {
		return HookBody{}, fmt.Errorf(`%w (send {"event": {...}, "ctx": {"agentId": "..."}})`, notObject("body", body))
	}
	var w hookWire
	if err := json.Unmarshal(body, &w); err != nil {
		return HookBody{}, decodeError("body", err)
	}
	if !startsObject(w.Event) { // Unmarshal made it valid JSON
		return HookBody{}, fmt.Errorf(`%w: body needs "event" as a JSON object: {"event": {...}, "ctx": {"agentId": "..."}}`, schemas.ErrInvalid)
	}
	if len(w.Event) > schemas.MaxEventBytes {
		return HookBody{}, fmt.Errorf("%w: event is %d bytes (max %d)", ErrTooLarge, len(w.Event), schemas.MaxEventBytes)
	}
	hb := HookBody{
		Event: w.Event,
		Meta: Meta{SessionKey: w.Ctx.SessionKey, SessionID: w.Ctx.SessionID, RunID: w.Ctx.RunID,
			ChannelID: w.Ctx.ChannelID, MsgID: w.MsgID, Timestamp: w.TS},
	}
	if err := validateMsgID(w.MsgID); err != nil {
		return HookBody{}, err
	}
	if w.Kind != "" {
		k, ok := ParseKind(w.Kind)
		if !ok {
			return HookBody{}, fmt.Errorf("%w: kind: unknown event kind %q (want one of %s)", schemas.ErrInvalid, w.Kind, kindList())
		}
		hb.Kind = k
	}
	switch {
	case agent != "" && w.Ctx.AgentID != "" && agent != w.Ctx.AgentID:
		return HookBody{}, fmt.Errorf("%w: agent %q given with the request disagrees with ctx.agentId %q in the body",
			schemas.ErrInvalid, agent, w.Ctx.AgentID)
	case w.Ctx.AgentID != "":
		hb.Agent = w.Ctx.AgentID
	default:
		hb.Agent = agent
	}
	if hb.Agent == "" {
		return HookBody{}, fmt.Errorf("%w: no agent id: set ctx.agentId in the body or name the agent with the request; "+
			"events without an agent are refused", schemas.ErrInvalid)
	}
	if err := schemas.ValidateAgentID(hb.Agent); err != nil {
		return HookBody{}, err
	}
	return hb, nil
}

// ResolveKind settles the event kind from the caller's (a route, a flag)
// and the body's: either may be empty, and when both are set they must
// agree.
func ResolveKind(given string, body schemas.EventKind) (schemas.EventKind, error) {
	if given == "" {
		if body == "" {
			return "", fmt.Errorf("%w: no event kind: name it (e.g. agent_end) or set \"kind\" in the body", schemas.ErrInvalid)
		}
		return body, nil
	}
	k, ok := ParseKind(given)
	if !ok {
		return "", fmt.Errorf("%w: unknown event kind %q (want one of %s)", schemas.ErrInvalid, given, kindList())
	}
	if body != "" && body != k {
		return "", fmt.Errorf("%w: kind %q disagrees with the body's kind %q", schemas.ErrInvalid, k, body)
	}
	return k, nil
}

// PublishFromReader publishes one hook body read from r (a HOOK.md handler
// pipes it to `clawmem publish`). kind and agent come from the command
// line; either may be empty when the body names it, and when both name it
// they must agree.
func PublishFromReader(ctx context.Context, pub *Publisher, kind, agent string, r io.Reader) (Ack, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxHookBodyBytes+1))
	if err != nil {
		return Ack{}, fmt.Errorf("read hook body: %w", err)
	}
	if len(body) > MaxHookBodyBytes {
		return Ack{}, fmt.Errorf("%w: body is over %d bytes", ErrTooLarge, MaxHookBodyBytes)
	}
	hb, err := ParseHookBodyFor(body, agent)
	if err != nil {
		return Ack{}, err
	}
	k, err := ResolveKind(kind, hb.Kind)
	if err != nil {
		return Ack{}, err
	}
	return pub.Publish(ctx, k, hb.Agent, hb.Event, hb.Meta)
}
