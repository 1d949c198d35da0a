package query

// Replication: a query service as one of several over the memory log
// (workers/memlog). The writer's service answers writes once their change
// is in the log, with its sequence; a replica's service forwards writes to
// the writer's endpoints and answers reads from its own copy, after the
// sequence a caller asks for.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// Writer endpoints: the writer's service also answers here, and replicas
// forward writes here, so a write never lands on another replica.
const (
	WriterPrefix      = "clawmem.writer.v1"
	WriterAdminPrefix = "clawmem.writer.admin.v1"
)

// CodeStale and CodeUnavailable are the replication error codes: the
// replica had not applied the asked-for sequence in time; no writer
// answered a forwarded write (a failover in progress: retry).
const (
	CodeStale       = "stale"
	CodeUnavailable = "unavailable"
)

// Replication makes a service part of a replicated deployment.
type Replication struct {
	// Flush, on the writer, publishes the changes made so far to the
	// memory log and returns the sequence that holds them; a write's reply
	// carries it as logSeq.
	Flush func(ctx context.Context) (uint64, error)
	// Forward, on a replica, sends writes (and exports, whose cursors live
	// in one process) to the writer's endpoints.
	Forward bool
	// WaitFor, on a replica, waits until the log is applied up to seq.
	WaitFor func(ctx context.Context, seq uint64, timeout time.Duration) error
	// StaleWait bounds that wait; default 2 s.
	StaleWait time.Duration
	// Position, when set, is how far this copy has the log, reported in
	// $SRV.STATS (and so by `clawmem status`).
	Position func() uint64
}

// forwarded reports whether a replica sends op to the writer.
func forwarded(op string) bool {
	switch op {
	case schemas.OpStore, schemas.OpForget, schemas.OpUpdate, schemas.OpImport, schemas.OpDeleteBulk,
		schemas.OpConsolidate, schemas.OpExport:
		return true
	}
	return false
}

// writes reports whether op changes memories.
func writes(op string) bool { return forwarded(op) && op != schemas.OpExport }

// forward sends the request to the writer and answers with its reply.
func (s *Service) forward(ctx context.Context, ep *endpoint, who memory.Who, subject string, data []byte) (schemas.ToolResult, string) {
	target := WriterAdminPrefix + "." + ep.op
	if !who.IsAdmin() {
		target = WriterPrefix + "." + who.AgentID() + "." + ep.op
	}
	msg, err := s.nc.RequestWithContext(ctx, target, data)
	if errors.Is(err, nats.ErrNoResponders) {
		return Failure(CodeUnavailable, "no memory writer answers right now (a failover takes up to a few seconds); retry", nil), CodeUnavailable
	}
	if err != nil {
		return s.failure(ep, subject, fmt.Errorf("forward %s to the writer: %w", ep.op, err))
	}
	var res schemas.ToolResult
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return s.failure(ep, subject, fmt.Errorf("the writer's reply to %s: %w", ep.op, err))
	}
	if res.IsError {
		var d schemas.ErrorDetails
		if raw, err := json.Marshal(res.Details); err == nil && json.Unmarshal(raw, &d) == nil && d.Code != "" {
			return res, d.Code
		}
		return res, CodeInternal
	}
	return res, ""
}

// awaitSeq waits, on a replica, for the sequence the request asks for.
func (s *Service) awaitSeq(ctx context.Context, data []byte) error {
	r := s.cfg.Replication
	if r == nil || r.WaitFor == nil {
		return nil
	}
	var p struct {
		AfterSeq uint64 `json:"afterSeq"`
	}
	if json.Unmarshal(data, &p) != nil || p.AfterSeq == 0 {
		return nil // a malformed body is the operation's to refuse
	}
	wait := r.StaleWait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	return r.WaitFor(ctx, p.AfterSeq, wait)
}

// withSeq adds logSeq to a write's details, whatever their type.
type withSeq struct {
	details any
	seq     uint64
}

func (w withSeq) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.details)
	if err != nil {
		return nil, err
	}
	seq := `"logSeq":` + strconv.FormatUint(w.seq, 10)
	// Details that are not an object, or an empty one, become just it.
	if b = bytes.TrimSpace(b); len(b) < 2 || b[0] != '{' || bytes.Equal(b, []byte("{}")) {
		return []byte(`{` + seq + `}`), nil
	}
	return append([]byte(`{`+seq+`,`), b[1:]...), nil
}
