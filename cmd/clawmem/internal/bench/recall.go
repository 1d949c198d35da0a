package bench

// Measuring the query service from outside: recall latency over NATS.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// recallOverNATS sends n memory_recall requests for agent one after another,
// cycling through queries, and returns the 50th and 99th percentile of the
// round-trip time. An error reply fails the run: a benchmark of refusals
// measures nothing.
func recallOverNATS(ctx context.Context, nc *nats.Conn, agent string, queries []string, n int) (p50, p99 time.Duration, err error) {
	if err := schemas.ValidateAgentID(agent); err != nil {
		return 0, 0, err
	}
	if len(queries) == 0 || n <= 0 {
		return 0, 0, fmt.Errorf("%w: need at least one query and n > 0", schemas.ErrInvalid)
	}
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		if bodies[i], err = json.Marshal(schemas.RecallRequest{Query: q}); err != nil {
			return 0, 0, err
		}
	}
	subject := schemas.ServiceSubject(agent, schemas.OpRecall)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		msg, err := requestOf(ctx, nc, subject, bodies[i%len(bodies)])
		if err != nil {
			return 0, 0, fmt.Errorf("recall %d: %w", i, err)
		}
		lat = append(lat, time.Since(start))
		var res struct {
			IsError bool                 `json:"isError"`
			Details schemas.ErrorDetails `json:"details"`
		}
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return 0, 0, fmt.Errorf("recall %d: reply is not a tool result: %w", i, err)
		}
		if res.IsError {
			return 0, 0, fmt.Errorf("recall %d: %s: %s", i, res.Details.Code, res.Details.Error)
		}
	}
	return testkit.Percentile(lat, 0.50), testkit.Percentile(lat, 0.99), nil
}

func requestOf(ctx context.Context, nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	if _, ok := ctx.Deadline(); !ok {
		// One request must not hang the whole run when no service answers.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	return nc.RequestWithContext(ctx, subject, body)
}
