package query

import (
	"context"
	"time"

	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

// Answer runs one operation in-process and replies exactly as the endpoint
// would over NATS. The CLI uses it on a data dir when no clawmem runs, so
// both paths print the same thing.
func (s *Service) Answer(ctx context.Context, who memory.Who, op string, data []byte) schemas.ToolResult {
	ep := &endpoint{name: op, op: op, admin: who.IsAdmin()}
	subject := schemas.AdminSubject(op)
	if !who.IsAdmin() {
		subject = schemas.ServiceSubject(who.AgentID(), op)
	}
	res, _ := s.safeHandle(ctx, ep, subject, data, time.Now(), false)
	return res
}
