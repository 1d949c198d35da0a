package ingest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/internal/topology"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/producers/ingest"
	"github.com/clawmem/clawmem/schemas"
)

type env struct {
	nats *natsembed.Server
	js   jetstream.JetStream
	pub  *producers.Publisher
	srv  *ingest.Server
	h    http.Handler
}

// testToken is shaped like the data dir's generated tokens.
const testToken = "dGVzdC1pbmdlc3QtdG9rZW4tbm90LWEtcmVhbC1vbmUtMDAw"

// setup starts an endpoint; without a token or Insecure in cfg it
// requires testToken, which do sends.
func setup(t testing.TB, cfg ingest.Config) *env {
	t.Helper()
	if cfg.Token == "" && !cfg.Insecure {
		cfg.Token = testToken
	}
	ns, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := topology.Ensure(ctx, js, topology.Config{}); err != nil {
		t.Fatal(err)
	}
	pub := producers.New(js)
	srv := ingest.New(cfg, pub, prometheus.NewRegistry(), nil)
	return &env{nats: ns, js: js, pub: pub, srv: srv, h: srv.Handler()}
}

func (e *env) msgs(t *testing.T) uint64 {
	t.Helper()
	return testkit.StreamMsgs(t, e.js, schemas.StreamEvents)
}

type reply struct {
	code int
	hdr  http.Header
	body []byte
}

func (r reply) errMsg(t *testing.T) string {
	t.Helper()
	var e struct{ Error string }
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error == "" {
		t.Fatalf("error body %q is not {\"error\": ...}: %v", r.body, err)
	}
	return e.Error
}

// do sends what a hook sends (loopback Host, JSON, testToken); hdr pairs
// override those headers, an empty value removes one.
func (e *env) do(method, target string, body []byte, hdr ...string) reply {
	req := httptest.NewRequest(method, target, bytes.NewReader(body))
	req.Host = "127.0.0.1:7433"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, req)
	return reply{w.Code, w.Header(), w.Body.Bytes()}
}

const agentEndBody = `{"event":{"messages":[{"role":"user","content":"I prefer tea"},{"role":"assistant","content":"Noted."}],"success":true},` +
	`"ctx":{"agentId":"main","sessionKey":"agent:main:main","sessionId":"s1","runId":"r1","channelId":"telegram"}}`

func TestHookAccepted(t *testing.T) {
	e := setup(t, ingest.Config{})
	r := e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody))
	if r.code != http.StatusAccepted {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var ack producers.Ack
	if err := json.Unmarshal(r.body, &ack); err != nil || ack.Stream != schemas.StreamEvents || ack.Seq != 1 || ack.Duplicate {
		t.Fatalf("ack %s: %v", r.body, err)
	}
	if !strings.Contains(string(r.body), `"stream":"CLAWMEM_EVENTS","seq":1,"duplicate":false`) {
		t.Fatalf("ack JSON %s", r.body)
	}
	s, _ := e.js.Stream(context.Background(), schemas.StreamEvents)
	m, err := s.GetMsg(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var he schemas.HookEvent
	if err := json.Unmarshal(m.Data, &he); err != nil || m.Subject != "clawmem.events.agent_end.main" ||
		he.AgentID != "main" || he.RunID != "r1" || he.ChannelID != "telegram" {
		t.Fatalf("%s %+v %v", m.Subject, he, err)
	}
	// The hook retried: accepted again, stored once.
	r = e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody))
	if r.code != http.StatusAccepted || !strings.Contains(string(r.body), `"duplicate":true`) {
		t.Fatalf("retry: %d %s", r.code, r.body)
	}
	// OpenClaw's kind spelling, the agent from the query or the header.
	r = e.do("POST", "/v1/hooks/command:new?agent=coder", []byte(`{"event":{},"ctx":{"sessionKey":"k"},"ts":7}`))
	if r.code != http.StatusAccepted {
		t.Fatalf("command:new: %d %s", r.code, r.body)
	}
	if m, _ := s.GetLastMsgForSubject(context.Background(), "clawmem.events.command_new.coder"); m == nil {
		t.Fatal("command:new not on clawmem.events.command_new.coder")
	}
	r = e.do("POST", "/v1/hooks/session_end", []byte(`{"event":{"sessionId":"s1","messageCount":4,"reason":"idle"},"ctx":{"sessionId":"s1"},"ts":9}`),
		ingest.HeaderAgent, "main")
	if r.code != http.StatusAccepted {
		t.Fatalf("session_end: %d %s", r.code, r.body)
	}
	if n := e.msgs(t); n != 3 {
		t.Fatalf("%d messages, want 3", n)
	}
}

func TestHookErrors(t *testing.T) {
	e := setup(t, ingest.Config{MaxBodyBytes: 4096})
	cases := []struct {
		name, method, target, body string
		hdr                        []string
		code                       int
		say                        string
	}{
		{"malformed JSON", "POST", "/v1/hooks/agent_end", `{"event":{`, nil, 400, "malformed JSON"},
		{"empty body", "POST", "/v1/hooks/agent_end", ``, nil, 400, "empty"},
		{"messages string", "POST", "/v1/hooks/agent_end", `{"event":{"messages":"x"},"ctx":{"agentId":"main"}}`, nil, 400, "event.messages: want array"},
		{"success string", "POST", "/v1/hooks/agent_end", `{"event":{"success":"yes"},"ctx":{"agentId":"main"}}`, nil, 400, "event.success: want boolean"},
		{"invalid UTF-8", "POST", "/v1/hooks/before_prompt_build", "{\"event\":{\"prompt\":\"\xff\"},\"ctx\":{\"agentId\":\"main\"}}", nil, 400, "UTF-8"},
		{"unknown kind", "POST", "/v1/hooks/agent_start", `{"event":{},"ctx":{"agentId":"main"}}`, nil, 400, "unknown event kind"},
		{"kind disagrees", "POST", "/v1/hooks/agent_end", `{"kind":"session_end","event":{},"ctx":{"agentId":"main"}}`, nil, 400, "disagrees"},
		{"missing agent", "POST", "/v1/hooks/agent_end", `{"event":{}}`, nil, 400, "no agent id"},
		{"invalid agent", "POST", "/v1/hooks/agent_end", `{"event":{},"ctx":{"agentId":"a.b"}}`, nil, 400, "agent id"},
		{"wildcard agent in query", "POST", "/v1/hooks/agent_end?agent=%3E", `{"event":{}}`, nil, 400, "agent id"},
		{"path agent in header", "POST", "/v1/hooks/agent_end", `{"event":{}}`, []string{ingest.HeaderAgent, "../x"}, 400, "agent id"},
		{"query disagrees with body", "POST", "/v1/hooks/agent_end?agent=other", agentEndBody, nil, 400, "disagrees"},
		{"query disagrees with header", "POST", "/v1/hooks/agent_end?agent=a", `{"event":{}}`, []string{ingest.HeaderAgent, "b"}, 400, "disagrees"},
		{"too large", "POST", "/v1/hooks/agent_end", `{"event":{"x":"` + strings.Repeat("y", 5000) + `"},"ctx":{"agentId":"main"}}`, nil, 413, "limit"},
		{"wrong method", "GET", "/v1/hooks/agent_end", ``, nil, 405, "not allowed"},
		{"unknown route", "POST", "/v2/hooks", `{}`, nil, 404, "no such endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.do(c.method, c.target, []byte(c.body), c.hdr...)
			if r.code != c.code {
				t.Fatalf("status %d, want %d: %s", r.code, c.code, r.body)
			}
			if msg := r.errMsg(t); !strings.Contains(msg, c.say) {
				t.Fatalf("error %q does not say %q", msg, c.say)
			}
			if c.code == 405 && r.hdr.Get("Allow") != "POST" {
				t.Fatalf("Allow %q", r.hdr.Get("Allow"))
			}
		})
	}
	if n := e.msgs(t); n != 0 {
		t.Fatalf("%d messages published by refused requests", n)
	}
}

func TestHookTooLargeStreamed(t *testing.T) {
	// A chunked body has no Content-Length; MaxBytesReader must stop it.
	e := setup(t, ingest.Config{MaxBodyBytes: 1024})
	ts := httptest.NewServer(e.h)
	defer ts.Close()
	body := `{"event":{"x":"` + strings.Repeat("y", 4096) + `"},"ctx":{"agentId":"main"}}`
	req, _ := http.NewRequest("POST", ts.URL+"/v1/hooks/agent_end", io.MultiReader(strings.NewReader(body)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// At the default limit an event over schemas.MaxEventBytes is 413 too.
	e = setup(t, ingest.Config{})
	big := `{"event":{"prompt":"` + strings.Repeat("x", schemas.MaxEventBytes) + `"},"ctx":{"agentId":"main"}}`
	if r := e.do("POST", "/v1/hooks/before_prompt_build", []byte(big)); r.code != http.StatusRequestEntityTooLarge {
		t.Fatalf("event over MaxEventBytes: %d %s", r.code, r.body)
	}
}

func TestHookToken(t *testing.T) {
	e := setup(t, ingest.Config{Token: "s3cret-token"})
	for name, hdr := range map[string][]string{
		"missing":    {"Authorization", ""},
		"wrong":      {"Authorization", "Bearer s3cret-tokeN"},
		"prefix":     {"Authorization", "Bearer s3cret"},
		"not bearer": {"Authorization", "Basic s3cret-token"},
	} {
		r := e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody), hdr...)
		if r.code != http.StatusUnauthorized || r.hdr.Get("WWW-Authenticate") == "" || !strings.Contains(r.errMsg(t), "token") {
			t.Errorf("%s: %d %s", name, r.code, r.body)
		}
	}
	if n := e.msgs(t); n != 0 {
		t.Fatalf("%d messages without a token", n)
	}
	if r := e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody), "Authorization", "Bearer s3cret-token"); r.code != http.StatusAccepted {
		t.Fatalf("right token: %d %s", r.code, r.body)
	}
	// Probes stay open: they reveal nothing and must work without secrets.
	if r := e.do("GET", "/healthz", nil, "Authorization", ""); r.code != http.StatusOK {
		t.Fatalf("healthz behind token: %d", r.code)
	}
}

func TestHealthAndUnavailable(t *testing.T) {
	e := setup(t, ingest.Config{PublishTimeout: time.Second})
	r := e.do("GET", "/healthz", nil)
	if r.code != http.StatusOK || strings.TrimSpace(string(r.body)) != `{"ok":true,"nats":"connected"}` {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if r := e.do("POST", "/healthz", nil); r.code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz: %d", r.code)
	}
	e.nats.Stop()
	r = e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody))
	if r.code != http.StatusServiceUnavailable || r.hdr.Get("Retry-After") == "" {
		t.Fatalf("NATS down: %d %s", r.code, r.body)
	}
	if !strings.Contains(r.errMsg(t), "unavailable") {
		t.Fatalf("error %s", r.body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r = e.do("GET", "/healthz", nil)
		if r.code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz still %d with NATS down", r.code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(r.body), `"ok":false`) {
		t.Fatalf("healthz body %s", r.body)
	}
}

func TestMetrics(t *testing.T) {
	e := setup(t, ingest.Config{})
	e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody))
	e.do("POST", "/v1/hooks/agent_end", []byte(agentEndBody))
	e.do("POST", "/v1/hooks/agent_end", []byte(`{"event":{}}`))
	e.do("POST", "/v1/hooks/bogus", []byte(`{}`))
	r := e.do("GET", "/metrics", nil)
	if r.code != http.StatusOK {
		t.Fatalf("%d", r.code)
	}
	for _, want := range []string{
		`clawmem_ingest_events_total{kind="agent_end",result="accepted"} 1`,
		`clawmem_ingest_events_total{kind="agent_end",result="duplicate"} 1`,
		`clawmem_ingest_events_total{kind="agent_end",result="invalid"} 1`,
		`clawmem_ingest_events_total{kind="unknown",result="invalid"} 1`,
		`clawmem_ingest_request_duration_seconds_count{result="accepted"} 1`,
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestMetricsSharedRegistry(t *testing.T) {
	e := setup(t, ingest.Config{})
	reg := prometheus.NewRegistry()
	a := ingest.New(ingest.Config{Insecure: true}, e.pub, reg, nil)
	b := ingest.New(ingest.Config{Insecure: true}, e.pub, reg, nil) // a restart in one process
	for _, s := range []*ingest.Server{a, b} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/hooks/agent_end", strings.NewReader(`{"event":{}}`))
		req.Host = "localhost"
		req.Header.Set("Content-Type", "application/json")
		s.Handler().ServeHTTP(w, req)
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Host = "localhost"
	b.Handler().ServeHTTP(w, req)
	if !strings.Contains(w.Body.String(), `clawmem_ingest_events_total{kind="agent_end",result="invalid"} 2`) {
		t.Fatalf("shared registry did not count both servers:\n%s", w.Body.String())
	}
}

func TestValidate(t *testing.T) {
	const needsToken, noToken = "without a token", "no token"
	for _, c := range []struct {
		cfg ingest.Config
		say string // "" means valid
	}{
		{ingest.Config{}, noToken},
		{ingest.Config{Token: "t"}, ""},
		{ingest.Config{Addr: "127.0.0.1:7433", Insecure: true}, ""},
		{ingest.Config{Addr: "127.0.0.2:80", Insecure: true}, ""},
		{ingest.Config{Addr: "[::1]:7433", Insecure: true}, ""},
		{ingest.Config{Addr: "localhost:7433", Insecure: true}, ""},
		{ingest.Config{Addr: "0.0.0.0:7433"}, noToken},
		{ingest.Config{Addr: "0.0.0.0:7433", Insecure: true}, needsToken},
		{ingest.Config{Addr: ":7433", Insecure: true}, needsToken},
		{ingest.Config{Addr: "[::]:7433", Insecure: true}, needsToken},
		{ingest.Config{Addr: "example.internal:7433", Insecure: true}, needsToken},
		{ingest.Config{Addr: "0.0.0.0:7433", Token: "t"}, ""},
		{ingest.Config{Token: "t", Insecure: true}, "choose one"},
		{ingest.Config{Addr: "7433", Token: "t"}, "host:port"},
		{ingest.Config{MaxBodyBytes: -1}, "negative"},
	} {
		err := c.cfg.Validate()
		if c.say == "" && err != nil || c.say != "" && (err == nil || !strings.Contains(err.Error(), c.say)) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.say)
		}
	}
	// Run refuses too, before listening.
	e := setup(t, ingest.Config{})
	s := ingest.New(ingest.Config{Addr: "0.0.0.0:0", Insecure: true}, e.pub, nil, nil)
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "without a token") {
		t.Fatalf("Run on 0.0.0.0 without token: %v", err)
	}
}

func TestRunGracefulShutdown(t *testing.T) {
	e := setup(t, ingest.Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()

	// Start a request and hold back its body. "Expect: 100-continue" makes
	// the server say when the handler is reading it, i.e. when the request
	// is certainly in flight; then cancel: the server must stop accepting,
	// yet finish this request.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	fmt.Fprintf(conn, "POST /v1/hooks/agent_end HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Authorization: Bearer "+testToken+"\r\n"+
		"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(agentEndBody))
	cont, err := http.ReadResponse(br, nil)
	if err != nil || cont.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue: %v %v", cont, err)
	}
	cancel()
	time.Sleep(100 * time.Millisecond) // let Shutdown close the listener
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting connections after cancel")
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	default:
	}
	if _, err := io.WriteString(conn, agentEndBody); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("in-flight request: %d", resp.StatusCode)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after draining")
	}
	if n := e.msgs(t); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

func TestRunListensAndStops(t *testing.T) {
	e := setup(t, ingest.Config{})
	// Find a free port, then let Run listen on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := ingest.New(ingest.Config{Addr: addr, Token: testToken}, e.pub, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var resp *http.Response
	for range 100 {
		if resp, err = http.Get("http://" + addr + "/healthz"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// While Admit says the storage is full, a hook gets 507 with the reason
// and a Retry-After, and nothing is published; then it is accepted again.
func TestHookRefusedWhileStorageFull(t *testing.T) {
	var full atomic.Bool
	full.Store(true)
	e := setup(t, ingest.Config{Admit: func() error {
		if full.Load() {
			return errors.New("the data dir's disk is full: 3 MB free")
		}
		return nil
	}})
	r := e.do(http.MethodPost, "/v1/hooks/agent_end", []byte(agentEndBody))
	if r.code != http.StatusInsufficientStorage || r.hdr.Get("Retry-After") == "" || !strings.Contains(r.errMsg(t), "disk is full") {
		t.Fatalf("full: %d %v %s", r.code, r.hdr, r.body)
	}
	if n := e.msgs(t); n != 0 {
		t.Fatalf("%d events published while full", n)
	}
	full.Store(false)
	if r := e.do(http.MethodPost, "/v1/hooks/agent_end", []byte(agentEndBody)); r.code != http.StatusAccepted {
		t.Fatalf("after: %d %s", r.code, r.body)
	}
}
