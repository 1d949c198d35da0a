package bench

// The hook ingest's benchmarks: events/s accepted and persisted, through
// the HTTP endpoint and by direct publish.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// IngestOptions shape a producer benchmark: Events agent_end events for
// Agent, sent by Concurrency parallel clients.
type IngestOptions struct {
	Agent       string // default "bench"
	Events      int    // default 10000
	Concurrency int    // default 32
	Messages    int    // messages per agent_end history; default 4
}

// withDefaults fills unset options.
func (o IngestOptions) withDefaults() IngestOptions {
	if o.Agent == "" {
		o.Agent = "bench"
	}
	if o.Events <= 0 {
		o.Events = 10000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Messages <= 0 {
		o.Messages = 4
	}
	return o
}

// IngestResult is what a producer benchmark measured. Every counted event
// was acknowledged by JetStream, i.e. persisted.
type IngestResult struct {
	Events       int     `json:"events"`
	Duplicates   int     `json:"duplicates"`
	Seconds      float64 `json:"seconds"`
	EventsPerSec float64 `json:"eventsPerSecond"`
	P50Ms        float64 `json:"p50ms"`
	P99Ms        float64 `json:"p99ms"`
}

// eventRun generates the events of one benchmark run. Each run draws a
// random nonce into the run ids, so a second run within the stream's
// duplicate window is not deduplicated against the first.
type eventRun struct {
	opts  IngestOptions
	nonce string
}

// newEventRun starts a run.
func newEventRun(o IngestOptions) *eventRun {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &eventRun{opts: o.withDefaults(), nonce: hex.EncodeToString(b[:])}
}

// Options are the run's options with defaults filled.
func (r *eventRun) Options() IngestOptions { return r.opts }

// Event is the i-th agent_end event and its context: a short but realistic
// history, so the figure includes validation and envelope costs.
func (r *eventRun) Event(i int) (json.RawMessage, producers.Meta) {
	msgs := make([]schemas.Message, r.opts.Messages)
	for j := range msgs {
		role, text := "user", fmt.Sprintf("I prefer dark roast coffee and my build server is ci-%d; remember that for run %d.", j, i)
		if j%2 == 1 {
			role, text = "assistant", "Noted: you prefer dark roast coffee. I will keep the build server name in mind."
		}
		content, _ := json.Marshal([]schemas.ContentBlock{{Type: "text", Text: text}})
		msgs[j] = schemas.Message{Role: role, Content: content, Timestamp: 1767225600000 + int64(i*1000+j)}
	}
	ev, _ := json.Marshal(schemas.AgentEndEvent{Messages: msgs, Success: true, DurationMs: 1200})
	return ev, producers.Meta{SessionKey: "agent:" + r.opts.Agent + ":bench", SessionID: "bench-" + r.nonce,
		RunID: fmt.Sprintf("run-%s-%d", r.nonce, i), ChannelID: "bench"}
}

// Body is the i-th event as an HTTP hook body.
func (r *eventRun) Body(i int) []byte {
	ev, m := r.Event(i)
	b, _ := json.Marshal(map[string]any{
		"event": ev,
		"ctx": map[string]string{"agentId": r.opts.Agent, "sessionKey": m.SessionKey, "sessionId": m.SessionID,
			"runId": m.RunID, "channelId": m.ChannelID},
	})
	return b
}

// Drive runs send for events 0..Events-1 on Concurrency goroutines and
// times them. send reports whether the event was a duplicate. The first
// error stops the run.
func (r *eventRun) Drive(ctx context.Context, send func(ctx context.Context, i int) (dup bool, err error)) (IngestResult, error) {
	o := r.opts
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next, dups atomic.Int64
		mu         sync.Mutex
		firstErr   error
		lat        = make([][]time.Duration, o.Concurrency)
		wg         sync.WaitGroup
	)
	start := time.Now()
	for w := range o.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= o.Events {
					return
				}
				t := time.Now()
				dup, err := send(ctx, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("event %d: %w", i, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				lat[w] = append(lat[w], time.Since(t))
				if dup {
					dups.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	res := IngestResult{Events: len(all), Duplicates: int(dups.Load()), Seconds: elapsed.Seconds()}
	if elapsed > 0 {
		res.EventsPerSec = float64(len(all)) / elapsed.Seconds()
	}
	if len(all) > 0 {
		slices.Sort(all)
		res.P50Ms = Ms(all[len(all)/2])
		res.P99Ms = Ms(all[min(len(all)-1, len(all)*99/100)])
	}
	if firstErr == nil && res.Events < o.Events {
		firstErr = ctx.Err()
	}
	if firstErr == nil && res.Duplicates > 0 {
		// Each bench event is distinct; a duplicate means dedup misfired.
		firstErr = errors.New("bench: JetStream reported duplicates for distinct events")
	}
	return res, firstErr
}

// publishBench measures direct publishing: parallel Publish calls, each
// waiting for its JetStream ack, as `clawmem publish` and Go producers do.
func publishBench(ctx context.Context, pub *producers.Publisher, o IngestOptions) (IngestResult, error) {
	run := newEventRun(o)
	// Events are built before the clock starts so the figure is about
	// publishing, not about generating test data.
	events := make([]json.RawMessage, run.opts.Events)
	metas := make([]producers.Meta, run.opts.Events)
	for i := range events {
		events[i], metas[i] = run.Event(i)
	}
	return run.Drive(ctx, func(ctx context.Context, i int) (bool, error) {
		ack, err := pub.Publish(ctx, schemas.KindAgentEnd, run.opts.Agent, events[i], metas[i])
		return ack.Duplicate, err
	})
}

// httpBench posts opts.Events agent_end hooks to the endpoint at baseURL
// (http://host:port) from opts.Concurrency keep-alive connections and
// reports the rate of 202 answers, each one an event JetStream persisted.
// token is sent as a bearer token when set.
//
// Each connection is driven by a lean HTTP/1.1 client (write the request,
// read the response, like wrk does) rather than net/http's Client, whose
// per-connection goroutines and channel hand-offs would cost more CPU
// than the endpoint itself on a 2-core machine and so understate it.
func httpBench(ctx context.Context, baseURL, token string, opts IngestOptions) (IngestResult, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return IngestResult{}, fmt.Errorf("bench: want an http://host:port URL, got %q", baseURL)
	}
	run := newEventRun(opts)
	o := run.Options()
	path := strings.TrimSuffix(u.Path, "/") + "/v1/hooks/agent_end"
	var head strings.Builder
	fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", path, u.Host)
	if token != "" {
		fmt.Fprintf(&head, "Authorization: Bearer %s\r\n", token)
	}
	bodies := make([][]byte, o.Events)
	for i := range bodies {
		bodies[i] = run.Body(i)
	}
	conns := make(chan *benchConn, o.Concurrency)
	for range o.Concurrency {
		conns <- &benchConn{addr: u.Host, head: head.String()}
	}
	defer func() {
		close(conns)
		for c := range conns {
			c.close()
		}
	}()
	return run.Drive(ctx, func(ctx context.Context, i int) (bool, error) {
		// As many connections as workers, so this never waits.
		c := <-conns
		defer func() { conns <- c }()
		code, body, err := c.post(ctx, bodies[i])
		if err != nil {
			return false, err
		}
		if code != http.StatusAccepted {
			return false, fmt.Errorf("status %d: %s", code, bytes.TrimSpace(body))
		}
		var ack producers.Ack
		if err := json.Unmarshal(body, &ack); err != nil {
			return false, fmt.Errorf("ack: %w", err)
		}
		return ack.Duplicate, nil
	})
}

// benchConn is one keep-alive HTTP/1.1 connection of the bench client.
type benchConn struct {
	addr, head string
	conn       net.Conn
	br         *bufio.Reader
	bw         *bufio.Writer
}

func (c *benchConn) post(ctx context.Context, body []byte) (int, []byte, error) {
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.br, c.bw = conn, bufio.NewReaderSize(conn, 16<<10), bufio.NewWriterSize(conn, 16<<10)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.conn.SetDeadline(dl)
	} else {
		_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	c.bw.WriteString(c.head)
	c.bw.WriteString("Content-Length: ")
	c.bw.WriteString(strconv.Itoa(len(body)))
	c.bw.WriteString("\r\n\r\n")
	c.bw.Write(body)
	if err := c.bw.Flush(); err != nil {
		c.close()
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.close()
		return 0, nil, err
	}
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if err != nil || resp.Close {
		c.close() // the next post redials
	}
	return resp.StatusCode, out, err
}

func (c *benchConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}
