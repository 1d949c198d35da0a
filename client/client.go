// Package client is clawmem's client for every front end (the CLI, the
// MCP server, the web console): Client (one Call per memory tool or admin
// operation), Bulk (export pages and import batches, with the export,
// import, migrate and reembed drivers and their row sources) and Pipeline
// (dead letters, distillation, backups). Client and Bulk are answered
// either over NATS by a running clawmem or in process on a store this
// process opened; Target picks which. Both reply alike (a Client with the
// same schemas.ToolResult), so a front end prints the same thing whichever
// answers; the conformance suites in this package hold both to the same
// expectations. Pipeline works over NATS only: where no clawmem runs, the
// CLI serves the data dir's NATS store itself (cmd/clawmem).
//
// It sits above workers/query (which it calls or talks to) and below the
// front ends; nothing in the engine or the workers imports it. It starts
// no server and does not import node, so a front end links neither.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/storeopen"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/query"
)

// Client answers one operation (schemas.Op*) for an agent (its scopes
// only), or with agent "" as an admin (every scope, and the admin
// operations). An error reply (not found, ambiguous, denied, invalid, …)
// is a ToolResult with IsError and its code in the details; err is for a
// client that could not get an answer at all (ErrDown, a deadline).
type Client interface {
	Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error)
	Close() error
}

// ErrDown is wrapped when no clawmem answers on NATS.
var ErrDown = errors.New("no clawmem query service answers on NATS")

// DefaultTimeout bounds one request when ctx has no earlier deadline.
const DefaultTimeout = 30 * time.Second

// NATS talks to a running clawmem over a NATS connection, which it owns.
type NATS struct{ nc *nats.Conn }

// NewNATS uses nc; Close closes it.
func NewNATS(nc *nats.Conn) *NATS { return &NATS{nc: nc} }

// Call sends the request to the agent's (or the admin) subject. "No
// responders" is answered at once with ErrDown, not after the timeout.
func (c *NATS) Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error) {
	data, err := c.CallRaw(ctx, op, agent, req)
	if err != nil {
		return schemas.ToolResult{}, err
	}
	var res schemas.ToolResult
	if err := json.Unmarshal(data, &res); err != nil {
		return res, fmt.Errorf("bad reply from the query service: %w", err)
	}
	return res, nil
}

// CallRaw is Call that returns the reply's bytes as the service sent them
// (a schemas.ToolResult in JSON), for a front end that passes them on: the
// HTTP API, which would otherwise decode every reply only to encode it
// again.
func (c *NATS) CallRaw(ctx context.Context, op, agent string, req any) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	subject := schemas.AdminSubject(op)
	if agent != "" {
		if err := schemas.ValidateAgentID(agent); err != nil {
			return nil, err
		}
		subject = schemas.ServiceSubject(agent, op)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	msg, err := c.request(ctx, subject, op, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%w (%s): is `clawmem up` (or a store worker) running?", ErrDown, c.nc.ConnectedUrl())
		}
		return nil, fmt.Errorf("request %s: %w", subject, err)
	}
	return msg.Data, nil
}

// ReadAttempt bounds the first attempt of a read: a query replica that
// dies with the request in hand never answers, and a read is safe to ask
// again, of a replica that lives.
const ReadAttempt = 5 * time.Second

// request sends the request; a read (recall, context, list, stats, show)
// that gets no answer within its first attempt is sent once more with the
// time left. Writes are sent once: the caller decides whether to repeat.
func (c *NATS) request(ctx context.Context, subject, op string, body []byte) (*nats.Msg, error) {
	switch op {
	case schemas.OpRecall, schemas.OpContext, schemas.OpList, schemas.OpStats, schemas.OpShow:
	default:
		return c.nc.RequestWithContext(ctx, subject, body)
	}
	deadline, _ := ctx.Deadline()
	first := min(ReadAttempt, time.Until(deadline)/2)
	actx, cancel := context.WithTimeout(ctx, first)
	msg, err := c.nc.RequestWithContext(actx, subject, body)
	cancel()
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return msg, err
	}
	return c.nc.RequestWithContext(ctx, subject, body)
}

// Close closes the connection.
func (c *NATS) Close() error { c.nc.Close(); return nil }

// Local answers in process with a query service over a store this process
// opened; Close closes that store.
type Local struct {
	svc   *query.Service
	store io.Closer
}

// OpenLocal opens the engine on the store cfg names (dbPath, its backend
// and embedder) and answers in process with a query service over it. A
// store another process holds fails with an error wrapping
// engine.ErrLocked: the caller then talks to that process over NATS.
func OpenLocal(ctx context.Context, cfg *config.Config) (*Local, error) {
	log := slog.New(slog.DiscardHandler)
	eng, st, err := storeopen.Engine(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	return NewLocal(query.New(nil, eng, query.DefaultConfig(), nil, log), st), nil
}

// NewLocal answers with svc; store (may be nil) is closed by Close.
func NewLocal(svc *query.Service, store io.Closer) *Local { return &Local{svc: svc, store: store} }

// Call runs the operation exactly as the service's endpoint would.
func (c *Local) Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return schemas.ToolResult{}, err
	}
	who := memory.Admin()
	if agent != "" {
		if err := schemas.ValidateAgentID(agent); err != nil {
			return schemas.ToolResult{}, err
		}
		who = memory.Agent(agent)
	}
	return c.svc.Answer(ctx, who, op, body), nil
}

// Close closes the store.
func (c *Local) Close() error {
	if c.store == nil {
		return nil
	}
	return c.store.Close()
}

// PerCall is a Client that connects for each call and closes after it, one
// call at a time. A front end that lives long (an MCP session, the
// console) must not hold the store open: that would lock `clawmem up` out
// of it, and two direct calls at once would lock each other out.
type PerCall struct {
	dial func(context.Context) (Client, error)
	mu   sync.Mutex
}

// NewPerCall connects with dial for each call.
func NewPerCall(dial func(context.Context) (Client, error)) *PerCall { return &PerCall{dial: dial} }

// Call connects, calls and closes.
func (c *PerCall) Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, err := c.dial(ctx)
	if err != nil {
		return schemas.ToolResult{}, err
	}
	defer cl.Close()
	return cl.Call(ctx, op, agent, req)
}

// Close does nothing: nothing is held between calls.
func (c *PerCall) Close() error { return nil }
