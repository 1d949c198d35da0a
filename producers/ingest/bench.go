package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/authdir"
	"github.com/clawmem/clawmem/producers"
)

// RunBench posts opts.Events agent_end hooks to the endpoint at baseURL
// (http://host:port) from opts.Concurrency keep-alive connections and
// reports the rate of 202 answers, each one an event JetStream persisted.
// token is sent as a bearer token when set.
//
// Each connection is driven by a lean HTTP/1.1 client (write the request,
// read the response, like wrk does) rather than net/http's Client, whose
// per-connection goroutines and channel hand-offs would cost more CPU
// than the endpoint itself on a 2-core machine and so understate it.
func RunBench(ctx context.Context, baseURL, token string, opts producers.BenchOptions) (producers.BenchResult, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return producers.BenchResult{}, fmt.Errorf("bench: want an http://host:port URL, got %q", baseURL)
	}
	run := producers.NewBenchRun(opts)
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

// BenchLocal starts an endpoint for pub on a random loopback port, runs
// RunBench against it over real TCP and stops it: the whole HTTP path as a
// hook sees it, for `clawmem bench pipeline`.
func BenchLocal(ctx context.Context, pub *producers.Publisher, opts producers.BenchOptions) (producers.BenchResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return producers.BenchResult{}, fmt.Errorf("bench: listen: %w", err)
	}
	// With a token, as every hook sends one: its check is part of the path.
	token := authdir.NewToken()
	srv := New(Config{Addr: ln.Addr().String(), Token: token}, pub, prometheus.NewRegistry(), nil)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	res, err := RunBench(ctx, "http://"+ln.Addr().String(), token, opts)
	stop()
	if serr := <-done; err == nil && serr != nil {
		err = serr
	}
	return res, err
}
