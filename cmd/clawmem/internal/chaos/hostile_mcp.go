package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clawmem/clawmem/client"
	clawmcp "github.com/clawmem/clawmem/integrations/mcp"
)

// sharedConn is a client whose connection belongs to someone else: Close
// leaves it open.
type sharedConn struct{ client.Client }

func (sharedConn) Close() error { return nil }

// mcpTimeout bounds one MCP session: the handshake, the entry's requests
// and their answers.
const mcpTimeout = time.Minute

// mcpQuiet is how long a server may say nothing while requests wait for
// their answers.
const mcpQuiet = 5 * time.Second

// The harness's own requests in a session.
const (
	mcpInitID = `"chaos-init"`
	mcpPingID = `"chaos-ping"`
)

// mcpSession serves `clawmem mcp` (the same server, with the management
// tools) for agent over c in this process, on pipes standing for its
// stdin and stdout: it sends the initialize handshake, then body's lines,
// then a ping, and waits until every request has its answer or the server
// has ended the session. It is refused when every request of body got a
// JSON-RPC error or a tool result with isError, or the session ended with
// an error before answering it (the SDK hangs up on input it cannot read,
// rather than answering a parse error); a server that cannot be built for
// agent refuses too, as `clawmem mcp --agent` does.
func mcpSession(ctx context.Context, c client.Client, agent string, body []byte) (bool, string) {
	srv, err := clawmcp.NewServer(c, clawmcp.Options{Agent: agent, Version: "chaos", Management: true})
	if err != nil {
		return true, clip(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, mcpTimeout)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan error, 1)
	go func() {
		err := srv.Run(ctx, &sdk.IOTransport{Reader: inR, Writer: outW})
		inR.CloseWithError(io.ErrClosedPipe) // a write to a server that stopped reading fails
		outW.Close()
		ended <- err
	}()
	replies, stop := make(chan mcpReply), make(chan struct{})
	go readReplies(outR, replies, stop)
	var runErr error
	over := false // the session ended, with runErr
	defer func() {
		inW.Close() // end of stdin: the server ends the session
		close(stop)
		outR.Close()
		cancel()
		if !over {
			<-ended
		}
	}()

	got := map[string]mcpReply{}
	// wait collects replies until each of ids has one, or the session or
	// the time is over. A server quiet for mcpQuiet may be waiting for the
	// rest of a message cut short: its stdin is closed, as a client that
	// gave up would, and the session's end awaited.
	eof := false
	wait := func(ids []string) {
		for !over && slices.ContainsFunc(ids, func(id string) bool { _, ok := got[id]; return !ok }) {
			select {
			case r, ok := <-replies:
				if ok {
					got[string(r.ID)] = r
					continue
				}
				runErr, over = <-ended, true
			case <-time.After(mcpQuiet):
				if eof {
					return
				}
				inW.Close()
				eof = true
			case <-ctx.Done():
				return
			}
		}
	}
	write := func(lines []byte) {
		if !bytes.HasSuffix(lines, []byte("\n")) {
			lines = append(lines, '\n')
		}
		// Aside: a server that stops reading must not block the wait.
		go inW.Write(lines)
	}
	write([]byte(`{"jsonrpc":"2.0","id":` + mcpInitID + `,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{},"clientInfo":{"name":"clawmem-chaos","version":"1"}}}`))
	if wait([]string{mcpInitID}); got[mcpInitID].Error != nil || got[mcpInitID].ID == nil {
		return false, clip(fmt.Sprintf("handshake failed: %+v %v", got[mcpInitID].Error, runErr))
	}
	reqs := requestIDs(body)
	var lines bytes.Buffer
	lines.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	lines.Write(bytes.TrimRight(body, "\n"))
	lines.WriteString("\n" + `{"jsonrpc":"2.0","id":` + mcpPingID + `,"method":"ping"}`)
	write(lines.Bytes())
	wait(append(slices.Clone(reqs), mcpPingID))

	if len(reqs) == 0 {
		if runErr != nil {
			return true, clip("session ended: " + runErr.Error())
		}
		return false, "ignored: no request, and the session goes on"
	}
	refused := true
	var answers []string
	for _, id := range reqs {
		r, ok := got[id]
		switch {
		case ok && r.Error != nil:
			answers = append(answers, fmt.Sprintf("error %d: %s", r.Error.Code, r.Error.Message))
		case ok && r.Result.IsError:
			answers = append(answers, "isError: "+r.Result.text())
		case ok:
			refused = false
			answers = append(answers, "accepted: "+r.Result.text())
		case runErr != nil:
			answers = append(answers, "session ended: "+runErr.Error())
		default:
			refused = false
			answers = append(answers, "no answer")
		}
	}
	return refused, clip(strings.Join(answers, "; "))
}

// mcpReply is a JSON-RPC message from the server as the harness reads
// it: a response has an id and no method, and its error or tool result.
type mcpReply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result mcpResult `json:"result"`
}

type mcpResult struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (r mcpResult) text() string {
	var parts []string
	for _, c := range r.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, " ")
}

// readReplies sends every response the server writes to out, and closes
// it when the server's stdout ends.
func readReplies(r io.Reader, out chan<- mcpReply, stop <-chan struct{}) {
	defer close(out)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var msg mcpReply
			if json.Unmarshal(line, &msg) == nil && msg.Method == "" && len(msg.ID) > 0 {
				select {
				case out <- msg:
				case <-stop:
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// requestIDs returns the ids of the requests among lines (in a batch
// too), as written.
func requestIDs(lines []byte) []string {
	var ids []string
	for line := range bytes.Lines(lines) {
		var msgs []json.RawMessage
		if json.Unmarshal(line, &msgs) != nil {
			msgs = []json.RawMessage{line}
		}
		for _, m := range msgs {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(m, &req) == nil && req.Method != "" && len(req.ID) > 0 && string(req.ID) != "null" {
				ids = append(ids, string(req.ID))
			}
		}
	}
	return ids
}
