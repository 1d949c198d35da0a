package chaos

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// Entry is one bad input: to the hook ingest (Kind), a query operation
// (Op, as Agent, or as admin with Agent ""), a raw subject, an import file
// or a config file (the Body written to File, whose extension matters),
// or an MCP session (Body's JSON-RPC lines, after the handshake, to a
// server acting for Agent, main when empty), or a hook event handed in as
// Agent (main when empty) of Kind, as agents do over NATS, or an HTTP API
// request (Method, Path, Body) with Agent's token (main when empty; "-"
// sends none).
type Entry struct {
	Surface string `json:"surface"` // ingest, hook, query, subject, import, config, mcp or http
	Name    string `json:"name"`
	Kind    string `json:"kind,omitempty"`
	Op      string `json:"op,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Subject string `json:"subject,omitempty"`
	// MsgID is a hook event's Nats-Msg-Id.
	MsgID string `json:"msgId,omitempty"`
	// Method and Path are an HTTP API request's.
	Method  string `json:"method,omitempty"`
	Path    string `json:"path,omitempty"`
	File    string `json:"file,omitempty"`
	Body    string `json:"body,omitempty"`
	BodyHex string `json:"bodyHex,omitempty"` // for bytes JSON cannot hold (invalid UTF-8)
	// Headers override what an ingest post sends by default (JSON, the
	// token, the ingest's own Host); an empty value leaves one out.
	Headers map[string]string `json:"headers,omitempty"`
}

func (e Entry) body() ([]byte, error) {
	if e.BodyHex != "" {
		return hex.DecodeString(strings.ReplaceAll(e.BodyHex, " ", ""))
	}
	return []byte(e.Body), nil
}

// LoadCorpus reads a corpus file (testdata/chaos/hostile.json) and adds
// the entries too large or too deep to keep in a file, on every surface
// that reads a body.
func LoadCorpus(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c []Entry
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("corpus %s: %w", path, err)
	}
	huge := `{"event":{"success":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 10<<20) + `"}]},"ctx":{"agentId":"main"}}`
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	deepObject := strings.Repeat(`{"a":`, 100_000) + "1" + strings.Repeat("}", 100_000)
	text2MB := strings.Repeat("y", 2<<20)
	return append(c,
		Entry{Surface: "ingest", Kind: "agent_end", Name: "10 MB body", Body: huge},
		Entry{Surface: "ingest", Kind: "agent_end", Name: "nesting 100,000 deep", Body: deep},
		Entry{Surface: "query", Op: "recall", Agent: "main", Name: "recall: nesting 100,000 deep", Body: deep},
		Entry{Surface: "query", Op: "store", Agent: "main", Name: "store: 2 MB text", Body: `{"text":"` + text2MB + `"}`},
		Entry{Surface: "import", File: "memories.jsonl", Name: "import: a line over 4 MiB",
			Body: `{"text":"Remember ` + strings.Repeat("x", 5<<20) + `"}`},
		Entry{Surface: "import", File: "memories.jsonl", Name: "import: a text over 64 KiB",
			Body: `{"text":"Remember ` + strings.Repeat("z", 70_000) + `"}`},
		Entry{Surface: "import", File: "rows.json", Name: "import: nesting 100,000 deep", Body: deep},
		Entry{Surface: "import", File: "memories.jsonl", Name: "import: metadata nesting 100,000 deep",
			Body: `{"text":"Remember the hostile metadata","metadata":` + deepObject + `}`},
		Entry{Surface: "config", File: "config.json", Name: "config: 10 MB file",
			Body: `{"retrieval": {"minScore": "` + strings.Repeat("9", 10<<20) + `"}}`},
		Entry{Surface: "config", File: "config.json", Name: "config: nesting 100,000 deep", Body: deep},
		Entry{Surface: "config", File: "config.yaml", Name: "config: YAML nesting 100,000 deep", Body: deep},
		Entry{Surface: "http", Method: "POST", Path: "/v1/memories", Name: "api: 10 MB body", Body: `{"text":"` + strings.Repeat("x", 10<<20) + `"}`},
		Entry{Surface: "http", Method: "POST", Path: "/v1/recall", Name: "api: nesting 100,000 deep", Body: deep},
		Entry{Surface: "http", Method: "POST", Path: "/v1/memories", Name: "api: metadata nesting 100,000 deep",
			Body: `{"text":"Remember the hostile metadata","metadata":` + deepObject + `}`},
		Entry{Surface: "mcp", Name: "mcp: store 2 MB text",
			Body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_store","arguments":{"text":"` + text2MB + `"}}}`},
		Entry{Surface: "mcp", Name: "mcp: nesting 100,000 deep",
			Body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_store","arguments":{"text":"x","metadata":` + deepObject + `}}}`},
	), nil
}

// Outcome is what one entry got.
type Outcome struct {
	Name    string `json:"name"`
	Surface string `json:"surface"`
	Refused bool   `json:"refused"`
	Answer  string `json:"answer"` // the status, error code or error
}

// HostileReport is the scenario's result: every entry refused, nothing
// stored, and the instance still answering.
type HostileReport struct {
	Tried, Refused int
	Before, After  int // memories (and history) before and after
	Answering      bool
	Outcomes       []Outcome
	Pass           bool
}

// Target is a running clawmem: its hook ingest (and token), its NATS, and
// its data dir, where the HTTP API's agent tokens are made.
type Target struct {
	IngestURL, IngestToken string
	NC                     *nats.Conn
	DataDir                string
}

// Hostile sends every entry to t and reports what each got.
func Hostile(ctx context.Context, t Target, corpus []Entry) (HostileReport, error) {
	var rep HostileReport
	count := func() (int, error) {
		var st struct {
			Total   int `json:"total"`
			History int `json:"history"`
		}
		_, err := request(ctx, t.NC, schemas.AdminSubject(schemas.OpStats), []byte(`{}`), &st)
		return st.Total + st.History, err
	}
	var err error
	if rep.Before, err = count(); err != nil {
		return rep, fmt.Errorf("stats before: %w", err)
	}
	dir, err := os.MkdirTemp("", "clawmem-hostile-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(dir)
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, e := range corpus {
		body, err := e.body()
		if err != nil {
			return rep, fmt.Errorf("%s: %w", e.Name, err)
		}
		o := Outcome{Name: e.Name, Surface: e.Surface}
		switch e.Surface {
		case "ingest":
			o.Refused, o.Answer = postHook(ctx, hc, t.IngestURL+"/v1/hooks/"+e.Kind, t.IngestToken, e.Headers, body)
		case "query":
			subject := schemas.AdminSubject(e.Op)
			if e.Agent != "" {
				subject = schemas.ServiceSubject(e.Agent, e.Op)
			}
			o.Refused, o.Answer = ask(ctx, t.NC, subject, body)
		case "subject":
			o.Refused, o.Answer = ask(ctx, t.NC, e.Subject, body)
		case "hook":
			o.Refused, o.Answer = handIn(ctx, t.NC, schemas.HookSubject(cmp.Or(e.Agent, "main"), schemas.EventKind(e.Kind)), e.MsgID, body)
		case "import":
			o.Refused, o.Answer = importFile(ctx, t.NC, dir, e.File, body)
		case "config":
			o.Refused, o.Answer = checkConfig(dir, e.File, body)
		case "mcp":
			o.Refused, o.Answer = mcpSession(ctx, sharedConn{client.NewNATS(t.NC)}, cmp.Or(e.Agent, "main"), body)
		case "http":
			token := ""
			if e.Agent != "-" {
				if token, err = httpapi.AgentToken(t.DataDir, cmp.Or(e.Agent, "main")); err != nil {
					return rep, fmt.Errorf("%s: %w", e.Name, err)
				}
			}
			// %INGEST% in a header is the hook token, to check that it
			// does not open the API.
			hdr := make(map[string]string, len(e.Headers))
			for k, v := range e.Headers {
				hdr[k] = strings.ReplaceAll(v, "%INGEST%", t.IngestToken)
			}
			o.Refused, o.Answer = send(ctx, hc, e.Method, t.IngestURL+e.Path, token, hdr, body)
		default:
			return rep, fmt.Errorf("%s: unknown surface %q", e.Name, e.Surface)
		}
		rep.Tried++
		if o.Refused {
			rep.Refused++
		}
		rep.Outcomes = append(rep.Outcomes, o)
	}
	after, err := count()
	rep.After, rep.Answering = after, err == nil
	rep.Pass = rep.Answering && rep.Refused == rep.Tried && rep.After == rep.Before
	return rep, nil
}

// postHook sends a hook body as a hook does, with hdr's changes; a 4xx
// is a refusal (a 2xx accepted it, a 5xx is a failure of clawmem's).
func postHook(ctx context.Context, hc *http.Client, url, token string, hdr map[string]string, body []byte) (bool, string) {
	return send(ctx, hc, http.MethodPost, url, token, hdr, body)
}

// send makes an HTTP request as a client of clawmem's would (a JSON body
// when there is one, the bearer token when there is one), with hdr's
// changes; a 4xx is a refusal.
func send(ctx context.Context, hc *http.Client, method, url, token string, hdr map[string]string, body []byte) (bool, string) {
	var rd io.Reader
	if len(body) > 0 || method == http.MethodPost {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return true, "request refused by the client: " + err.Error()
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		switch {
		case strings.EqualFold(k, "Host"):
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, "no answer: " + err.Error()
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	return resp.StatusCode >= 400 && resp.StatusCode < 500, fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(msg)))
}

// handIn hands in a hook event as an agent does (a request to
// clawmem.hooks.v1.<agent>.<kind>); a reply that is not ok, or no
// responder, is a refusal.
func handIn(ctx context.Context, nc *nats.Conn, subject, msgID string, body []byte) (bool, string) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	m := nats.NewMsg(subject)
	m.Data = body
	if msgID != "" {
		m.Header.Set("Nats-Msg-Id", msgID)
	}
	reply, err := nc.RequestMsgWithContext(rctx, m)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return true, "no responders"
	case errors.Is(err, nats.ErrBadSubject):
		return true, "refused by NATS: " + err.Error()
	case err != nil:
		return false, err.Error()
	}
	var r producers.HookReply
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return false, "reply is not a hook reply: " + err.Error()
	}
	return !r.OK, cmp.Or(r.Code, "accepted")
}

// ask sends a request; an error reply, no responder (a subject no
// operation listens on) or a subject NATS refuses is a refusal.
func ask(ctx context.Context, nc *nats.Conn, subject string, body []byte) (bool, string) {
	code, err := request(ctx, nc, subject, body, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return true, "no responders"
	case errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrMaxPayload):
		return true, "refused by NATS: " + err.Error()
	case err != nil:
		return false, err.Error()
	}
	return code != "", cmp.Or(code, "accepted")
}

// request sends body to subject and decodes the reply's details into out;
// it returns the error code of an error reply.
func request(ctx context.Context, nc *nats.Conn, subject string, body []byte, out any) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, subject, body)
	if err != nil {
		return "", err
	}
	var res struct {
		Details json.RawMessage `json:"details"`
		IsError bool            `json:"isError"`
	}
	if err := json.Unmarshal(msg.Data, &res); err != nil {
		return "", fmt.Errorf("reply is not a tool result: %w", err)
	}
	if res.IsError {
		var d schemas.ErrorDetails
		_ = json.Unmarshal(res.Details, &d)
		return cmp.Or(d.Code, "error"), nil
	}
	if out != nil {
		return "", json.Unmarshal(res.Details, out)
	}
	return "", nil
}

// WriteText prints the scenario's line and every entry not refused.
func (r HostileReport) WriteText(w io.Writer) error {
	verdict := "FAIL"
	if r.Pass {
		verdict = "pass"
	}
	fmt.Fprintf(w, "hostile input   %d tried, %d refused, memories %d before and %d after, still answering: %v   %s\n",
		r.Tried, r.Refused, r.Before, r.After, r.Answering, verdict)
	for _, o := range r.Outcomes {
		if !o.Refused {
			fmt.Fprintf(w, "  not refused: %s (%s): %s\n", o.Name, o.Surface, o.Answer)
		}
	}
	return nil
}
