// Package ingest is clawmem's HTTP hook endpoint: an OpenClaw plugin or a
// HOOK.md handler POSTs each hook event here, and the request is answered
// only after JetStream has persisted the event, so a hook that gets 202
// knows the event is safe and one that gets 503 knows to retry.
package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/internal/httpguard"
	"github.com/clawmem/clawmem/producers"
	"github.com/clawmem/clawmem/schemas"
)

// DefaultAddr is loopback: hooks come from the same machine unless an
// operator opens it up.
const DefaultAddr = "127.0.0.1:7433"

// HeaderAgent names the agent when the body's ctx has no agentId.
const HeaderAgent = "X-Clawmem-Agent"

// Config configures the endpoint.
type Config struct {
	// Addr to listen on; default DefaultAddr.
	Addr string
	// Token is required as "Authorization: Bearer <token>" on hook
	// requests. It must be set unless Insecure.
	Token string
	// Insecure serves hooks without a token, on loopback only: every local
	// process may then write memories for any agent.
	Insecure bool
	// AllowedHosts are names besides loopback ones (and the listen IP)
	// that requests may carry in their Host header.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body; default producers.MaxHookBodyBytes.
	MaxBodyBytes int64
	// PublishTimeout bounds the wait for JetStream's ack; default 5 s.
	PublishTimeout time.Duration
	// ShutdownTimeout bounds draining in-flight requests; default 15 s.
	ShutdownTimeout time.Duration
	// API, when set, is served beside the hooks: the HTTP API's routes
	// (httpapi), each authenticated by its own agent tokens.
	API *httpapi.API
	// Admit, when set, is asked before each publish: an error refuses the
	// event with HTTP 507 Insufficient Storage and the error's text (the
	// embedded server's disk is full), and the hook is told to retry.
	Admit func() error
}

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = producers.MaxHookBodyBytes
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 5 * time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 15 * time.Second
	}
	return c
}

// Validate refuses configurations that would be unsafe or cannot work.
// Anyone who can reach the endpoint can write memories for any agent, so
// it needs a token, unless Insecure on loopback.
func (c Config) Validate() error {
	if c.MaxBodyBytes < 0 {
		return fmt.Errorf("ingest: MaxBodyBytes must not be negative")
	}
	c = c.withDefaults()
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("ingest: address %q: %w (want host:port, e.g. %s)", c.Addr, err, DefaultAddr)
	}
	switch {
	case c.Insecure && c.Token != "":
		return fmt.Errorf("ingest: insecure and a token: choose one")
	case c.Insecure && !httpguard.IsLoopbackAddr(c.Addr):
		return fmt.Errorf("ingest: refusing to listen on %q without a token: anyone who can reach it could write "+
			"memories for any agent; drop ingest.insecure or listen on loopback (%s)", c.Addr, DefaultAddr)
	case !c.Insecure && c.Token == "":
		return fmt.Errorf("ingest: no token: hooks must send one (ingest.token, or the data dir's auth/ingest.token)")
	}
	return nil
}

// publisher is what the endpoint needs from producers.Publisher.
type publisher interface {
	Publish(ctx context.Context, kind schemas.EventKind, agent string, event json.RawMessage, meta producers.Meta) (producers.Ack, error)
	Connected() bool
	Status() string
}

// Server is the HTTP ingest endpoint.
type Server struct {
	cfg      Config
	pub      publisher
	log      *slog.Logger
	met      *metrics
	tokenSum [32]byte
	handler  http.Handler
}

// New builds the endpoint. reg receives its metrics and, when it is also a
// Gatherer (a *prometheus.Registry), is what /metrics serves; nil means a
// private registry.
func New(cfg Config, pub *producers.Publisher, reg prometheus.Registerer, log *slog.Logger) *Server {
	return newServer(cfg, pub, reg, log)
}

func newServer(cfg Config, pub publisher, reg prometheus.Registerer, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var gather prometheus.Gatherer = prometheus.DefaultGatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, gather = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gather = g
	}
	s := &Server{cfg: cfg.withDefaults(), pub: pub, log: log.With("component", "ingest"), met: newMetrics(reg, log)}
	s.tokenSum = sha256.Sum256([]byte(cfg.Token))
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/hooks/{kind}", s.handleHook)
	mux.HandleFunc("/healthz", s.handleHealth)
	mux.Handle("/metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	routes := "POST /v1/hooks/{kind}, GET /healthz or GET /metrics"
	if cfg.API != nil {
		for _, p := range httpapi.Paths {
			mux.Handle(p, cfg.API.Handler())
		}
		routes += ", or the HTTP API (GET /v1/openapi.json describes it)"
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+routes)
	})
	// Every request must name this server; a hook must come with a JSON
	// body and not from a web page, so no browser can send one unasked.
	s.handler = httpguard.Chain(mux, httpguard.CheckHost(httpguard.Hosts{Listen: s.cfg.Addr, Extra: cfg.AllowedHosts}),
		httpguard.CheckBrowser, httpguard.RequireJSON)
	return s
}

// Handler serves the endpoint's routes.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on cfg.Addr and serves until ctx is cancelled, then drains
// in-flight requests and returns nil.
func (s *Server) Run(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("ingest: listen on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened (tests and benchmarks use
// port 0). The listener is closed when Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// An agent_end body can be megabytes from a slow client; bound it,
		// but generously.
		ReadTimeout: 2 * time.Minute,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Requests deliberately do not inherit ctx: cancelling it stops
		// accepting, but an event already being received is still
		// published and answered.
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("ingest listening", "addr", ln.Addr().String(), "auth", !s.cfg.Insecure)
	if s.cfg.Insecure {
		s.log.Warn("ingest serves without a token (ingest.insecure): every local process can write memories for any agent")
	}
	select {
	case err := <-errc:
		return fmt.Errorf("ingest: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc // Serve returns ErrServerClosed at once on Shutdown
	if err != nil {
		return fmt.Errorf("ingest: shutdown: %w", err)
	}
	s.log.Info("ingest stopped")
	return nil
}

// Results, the values of the result label.
const (
	resAccepted     = "accepted"
	resDuplicate    = "duplicate"
	resInvalid      = "invalid"
	resTooLarge     = "too_large"
	resUnauthorized = "unauthorized"
	resUnavailable  = "unavailable"
	resBadMethod    = "method_not_allowed"
)

func (s *Server) handleHook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	kind, kindOK := producers.ParseKind(r.PathValue("kind"))
	label := string(kind)
	if !kindOK {
		label = "unknown" // bounded label values whatever clients send
	}
	result := resInvalid
	defer func() {
		s.met.events.WithLabelValues(label, result).Inc()
		s.met.latency.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}()
	fail := func(code int, res, msg string) {
		result = res
		writeError(w, code, msg)
	}

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, resBadMethod, "method "+r.Method+" not allowed: POST the hook body")
		return
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="clawmem"`)
		fail(http.StatusUnauthorized, resUnauthorized, "missing or wrong bearer token (Authorization: Bearer <token>)")
		return
	}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(); err != nil {
			w.Header().Set("Retry-After", "10")
			s.log.Debug("hook refused: storage full", "err", err)
			fail(http.StatusInsufficientStorage, resUnavailable, err.Error())
			return
		}
	}
	if !kindOK {
		fail(http.StatusBadRequest, resInvalid, fmt.Sprintf("unknown event kind %q (want one of %s)",
			r.PathValue("kind"), strings.Join(kindNames(), ", ")))
		return
	}
	agent, err := requestAgent(r)
	if err != nil {
		fail(http.StatusBadRequest, resInvalid, err.Error())
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			fail(http.StatusRequestEntityTooLarge, resTooLarge, fmt.Sprintf("body is over the limit of %d bytes", s.cfg.MaxBodyBytes))
			return
		}
		fail(http.StatusBadRequest, resInvalid, "read body: "+err.Error())
		return
	}
	hb, err := producers.ParseHookBodyFor(body, agent)
	if err == nil {
		kind, err = producers.ResolveKind(string(kind), hb.Kind)
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.PublishTimeout)
		var ack producers.Ack
		ack, err = s.pub.Publish(ctx, kind, hb.Agent, hb.Event, hb.Meta)
		cancel()
		if err == nil {
			result = resAccepted
			if ack.Duplicate {
				result = resDuplicate
			}
			writeJSON(w, http.StatusAccepted, ack)
			return
		}
	}
	code, res := classify(err)
	if code == http.StatusServiceUnavailable {
		// Tell the hook to come back: the Msg-Id makes the retry safe.
		w.Header().Set("Retry-After", "1")
		s.log.Warn("publish failed", "kind", kind, "agent", hb.Agent, "err", err)
	} else {
		s.log.Debug("hook refused", "kind", label, "status", code, "err", err)
	}
	fail(code, res, err.Error())
}

// classify maps a producers error to a status and a result label.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, producers.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, resTooLarge
	case errors.Is(err, schemas.ErrInvalid):
		return http.StatusBadRequest, resInvalid
	default:
		return http.StatusServiceUnavailable, resUnavailable
	}
}

// requestAgent is the agent named outside the body: ?agent= or the header.
// Both may be set only if they agree.
func requestAgent(r *http.Request) (string, error) {
	q, h := r.URL.Query().Get("agent"), r.Header.Get(HeaderAgent)
	if q != "" && h != "" && q != h {
		return "", fmt.Errorf("agent %q in the query disagrees with %s %q", q, HeaderAgent, h)
	}
	if q != "" {
		return q, nil
	}
	return h, nil
}

// authorized compares SHA-256 digests in constant time, so neither the
// token's content nor its length leaks through timing.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Insecure {
		return true
	}
	if s.cfg.Token == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		return nil, &http.MaxBytesError{Limit: s.cfg.MaxBodyBytes}
	}
	rd := http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := io.Copy(&buf, rd)
	return buf.Bytes(), err
}

type health struct {
	OK   bool   `json:"ok"`
	NATS string `json:"nats"`
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: GET /healthz")
		return
	}
	if s.pub.Connected() {
		writeJSON(w, http.StatusOK, health{OK: true, NATS: "connected"})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, health{OK: false, NATS: strings.ToLower(s.pub.Status())})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, struct {
		Error string `json:"error"`
	}{msg})
}

func kindNames() []string {
	names := make([]string, len(schemas.EventKinds))
	for i, k := range schemas.EventKinds {
		names[i] = string(k)
	}
	return names
}
