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
	recall := natsRecall(nc, agent)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		if _, err := recall(ctx, queries[i%len(queries)]); err != nil {
			return 0, 0, fmt.Errorf("recall %d: %w", i, err)
		}
		lat = append(lat, time.Since(start))
	}
	return testkit.Percentile(lat, 0.50), testkit.Percentile(lat, 0.99), nil
}

// natsRecall recalls for agent through the query service: one request,
// bounded by 30 s when ctx has no deadline (a run must not hang when no
// service answers), and an error reply is an error with its code.
func natsRecall(nc *nats.Conn, agent string) recallFn {
	subject := schemas.ServiceSubject(agent, schemas.OpRecall)
	return func(ctx context.Context, q string) (bool, error) {
		body, err := json.Marshal(schemas.RecallRequest{Query: q})
		if err != nil {
			return false, err
		}
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
		}
		msg, err := nc.RequestWithContext(ctx, subject, body)
		if err != nil {
			return false, err
		}
		var res struct {
			IsError bool `json:"isError"`
			Details struct {
				schemas.ErrorDetails
				Count int `json:"count"`
			} `json:"details"`
		}
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return false, fmt.Errorf("reply is not a tool result: %w", err)
		}
		if res.IsError {
			return false, fmt.Errorf("%s: %s", res.Details.Code, res.Details.Error)
		}
		return res.Details.Count == 0, nil
	}
}
