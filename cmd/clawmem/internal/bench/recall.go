package bench

// Measuring the query service from outside: recall latency over NATS.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"

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
		return recallReply(msg.Data)
	}
}

// serveHTTPAPI serves the HTTP API as `clawmem up` does, on the hook ingest
// listener over its own NATS connection, on a loopback port; it returns
// the base URL and agent's token.
func serveHTTPAPI(ctx context.Context, srv *natsembed.Server, dir, agent string) (url, token string, stop func(), err error) {
	nc, err := srv.Connect()
	if err != nil {
		return "", "", nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return "", "", nil, err
	}
	if token, err = httpapi.AgentToken(dir, agent); err != nil {
		nc.Close()
		return "", "", nil, err
	}
	tokens, err := httpapi.NewTokens(dir, nil)
	if err != nil {
		nc.Close()
		return "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		nc.Close()
		return "", "", nil, err
	}
	api := httpapi.New(client.NewNATS(nc), tokens)
	in := ingest.New(ingest.Config{Addr: ln.Addr().String(), Token: ingestBenchToken, API: api}, producers.New(js), nil, nil)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- in.Serve(sctx, ln) }()
	return "http://" + ln.Addr().String(), token, func() { cancel(); <-done; nc.Close() }, nil
}

// ingestBenchToken is the hooks' token of the benchmark's ingest server,
// which takes no hooks.
const ingestBenchToken = "bench-hooks-token-unused"

// httpRecall recalls through POST /v1/recall with a keep-alive client of
// up to conns connections, as an app's HTTP client would.
func httpRecall(base, token string, conns int) recallFn {
	c := &http.Client{Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute}}
	return func(ctx context.Context, q string) (bool, error) {
		body, err := json.Marshal(schemas.RecallRequest{Query: q})
		if err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/recall", bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return false, err
		}
		empty, err := recallReply(data)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("a tool result with status %d", resp.StatusCode)
		}
		if err != nil {
			return false, fmt.Errorf("HTTP %d: %w", resp.StatusCode, err)
		}
		return empty, nil
	}
}

// recallReply reads a recall's tool result: whether it found nothing, or
// the error reply as an error with its code.
func recallReply(data []byte) (empty bool, err error) {
	var res struct {
		IsError bool `json:"isError"`
		Details struct {
			schemas.ErrorDetails
			Count int `json:"count"`
		} `json:"details"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		return false, fmt.Errorf("reply is not a tool result: %w", err)
	}
	if res.IsError {
		return false, fmt.Errorf("%s: %s", res.Details.Code, res.Details.Error)
	}
	return res.Details.Count == 0, nil
}
