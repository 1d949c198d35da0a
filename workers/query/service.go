// Package query is clawmem's query service: the memory tools (recall,
// context, store, forget, update, list, stats, show) as NATS request-reply
// endpoints per agent (clawmem.v1.<agent>.<op>), and the admin operations
// (export, import, bulk delete, consolidate) on clawmem.admin.v1.<op>.
// Every reply is a schemas.ToolResult: the text an agent reads, details,
// and an error code. The contract (requests, replies, error codes, limits)
// is package schemas', so clients do not import this package. One file per
// group of operations: service.go (the endpoints and their lifecycle),
// wire.go (decoding and replies), read.go, write.go, erase.go (a forgotten
// memory's text deleted from the streams), admin.go, answer.go (one
// operation answered in process, for the CLI), format.go (tool-result
// text), details.go (the engine's results as reply details), health.go
// (memory_stats' dead letters), partition.go (one writer per partition of
// the scopes), replica.go (replicas over the memory log), metrics.go (the
// recall cache's counters) and bench.go (recall latency over NATS,
// measured by clawmem bench).
package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/internal/promreg"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers/purge"
)

const (
	// defaultRecallLimit is memory_recall's default (seed 004 §4.1).
	defaultRecallLimit = 5
	// snippetRunes is how much of a memory's text summary lines quote.
	snippetRunes = 100
)

// Config tunes the query service. Start from DefaultConfig: the
// zero value leaves the admin endpoints off, which is the safe failure.
type Config struct {
	// QueueGroup lets several replicas share the load; default "clawmem-query".
	QueueGroup string
	// DefaultContextTimeout is the context endpoint's deadline when the
	// request names none; default 1.5 s.
	DefaultContextTimeout time.Duration
	// MaxContextTimeout caps a requested deadline; default 10 s.
	MaxContextTimeout time.Duration
	// EnableAdmin serves clawmem.admin.v1.<op> (every scope). Grant that
	// subject only to operators in the NATS permissions.
	EnableAdmin bool
	// MaxConcurrent bounds the requests handled at once (and separately the
	// context requests at once); default 16.
	MaxConcurrent int
	// RequestTimeout bounds one request other than context; default 30 s.
	RequestTimeout time.Duration
	// MergeJudge, when set, judges consolidation's look-alike groups.
	MergeJudge memory.MergeJudge
	// Name is the micro service's name; default schemas.ServiceName (a
	// writer's endpoints are schemas.WriterServiceName, which `clawmem
	// status` does not list as query instances).
	Name string
	// Prefix and AdminPrefix are the endpoints' subjects; default
	// schemas.ServicePrefix and schemas.AdminPrefix (a writer's second
	// service uses schemas.WriterPrefix and schemas.WriterAdminPrefix).
	Prefix, AdminPrefix string
	// Replication, when set, makes the service a writer's or a replica's
	// in a replicated deployment.
	Replication *Replication
}

// DefaultConfig is the configuration `clawmem up` runs with.
func DefaultConfig() Config {
	return Config{EnableAdmin: true}.withDefaults()
}

func (c Config) withDefaults() Config {
	if c.QueueGroup == "" {
		c.QueueGroup = "clawmem-query"
	}
	if c.Name == "" {
		c.Name = schemas.ServiceName
	}
	if c.Prefix == "" {
		c.Prefix = schemas.ServicePrefix
	}
	if c.AdminPrefix == "" {
		c.AdminPrefix = schemas.AdminPrefix
	}
	if c.DefaultContextTimeout <= 0 {
		c.DefaultContextTimeout = 1500 * time.Millisecond
	}
	if c.MaxContextTimeout <= 0 {
		c.MaxContextTimeout = 10 * time.Second
	}
	c.DefaultContextTimeout = min(c.DefaultContextTimeout, c.MaxContextTimeout)
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = 16
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	return c
}

// Service answers the memory tools over NATS request-reply as a NATS
// micro service: clawmem.v1.<agent>.<op> on behalf of the agent named by the
// subject, and clawmem.admin.v1.<op> for operators. Every reply, failures
// included, is a schemas.ToolResult, so a bridge passes it straight to the
// model.
type Service struct {
	nc      *nats.Conn
	eng     *memory.Engine
	cfg     Config
	log     *slog.Logger
	metrics serviceMetrics

	// sem bounds concurrent handlers; context requests have their own so
	// that slow recalls never eat into an auto-recall deadline.
	sem, ctxSem chan struct{}
	// workers run the handlers (workerPool).
	workers *workerPool

	mu        sync.Mutex
	svc       micro.Service
	base      context.Context
	stopped   bool
	inFlight  sync.WaitGroup
	endpoints map[string]*endpoint
	done      chan struct{} // closed when micro reports the service done
	doneOnce  sync.Once
	ready     chan struct{} // closed once the endpoints are registered

	// exports are the admin exports in progress, by id.
	exportsMu sync.Mutex
	exports   map[string]*exportCursor
	// importMu makes each admin import batch's duplicate checks and write
	// one step, so two imports cannot both let the same text through.
	importMu sync.Mutex
	// js reads the streams (the caller's dead letters) and purger deletes a
	// forgotten memory's messages from them; both nil without a NATS
	// connection.
	js     jetstream.JetStream
	purger *purge.Purger
}

// endpoint is one registered endpoint and the stats micro cannot see:
// micro times only the hand-off to the worker pool.
type endpoint struct {
	name  string
	op    string
	admin bool

	active   atomic.Int64
	handled  atomic.Uint64
	failed   atomic.Uint64
	totalDur atomic.Int64
}

type serviceMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New builds the service; Run or Start serves it. reg may be
// nil (metrics unregistered), log nil (slog.Default).
func New(nc *nats.Conn, eng *memory.Engine, cfg Config, reg prometheus.Registerer, log *slog.Logger) *Service {
	if log == nil {
		log = slog.Default()
	}
	cfg = cfg.withDefaults()
	m := serviceMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "query_requests_total",
			Help: "Query service requests, by operation and result (ok, timeout or the error code)."}, []string{"op", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "clawmem", Name: "query_duration_seconds",
			Help: "Time from receiving a query request to sending its reply.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"op"}),
	}
	m.requests = promreg.Register(reg, m.requests, log, "query")
	m.duration = promreg.Register(reg, m.duration, log, "query")
	if reg != nil && eng != nil {
		promreg.Register(reg, newRecallCacheMetrics(), log, "query").add(eng)
	}
	s := &Service{nc: nc, eng: eng, cfg: cfg, log: log.With("worker", "query"), metrics: m,
		sem: make(chan struct{}, cfg.MaxConcurrent), ctxSem: make(chan struct{}, cfg.MaxConcurrent),
		workers: newWorkerPool(), done: make(chan struct{}), ready: make(chan struct{})}
	if nc != nil {
		if js, err := jetstream.New(nc); err == nil {
			s.js, s.purger = js, purge.New(js)
		}
	}
	return s
}

// Config returns the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Run serves until ctx ends, then stops taking requests, answers the ones
// already received and returns nil. It returns an error if the service ends
// on its own, which happens when the NATS connection closes.
func (s *Service) Run(ctx context.Context) error {
	// In-flight requests must finish after ctx ends (that is the drain), so
	// they run on a context that keeps ctx's values but not its cancellation.
	if err := s.start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		s.Stop()
		return nil
	case <-s.done:
		s.Stop()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("query service ended: %w", nats.ErrConnectionClosed)
	}
}

// Ready is closed once the endpoints are registered with the server.
func (s *Service) Ready() <-chan struct{} { return s.ready }

// Start registers the service and returns; Stop ends it.
func (s *Service) Start() error { return s.start(context.Background()) }

func (s *Service) start(base context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc != nil {
		return errors.New("query service: already started")
	}
	if s.stopped {
		return errors.New("query service: stopped services cannot be restarted; make a new one")
	}
	s.base = base
	// Every endpoint exists before the service does: micro may call the
	// stats handler, which reads this map, as soon as AddService returns.
	s.endpoints = make(map[string]*endpoint)
	kinds := []string{""}
	if s.cfg.EnableAdmin {
		kinds = append(kinds, "admin-")
	}
	for _, kind := range kinds {
		for _, op := range opsFor(kind != "") {
			ep := &endpoint{name: kind + op, op: op, admin: kind != ""}
			s.endpoints[ep.name] = ep
		}
	}
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        s.cfg.Name,
		Version:     schemas.ServiceVersion,
		Description: "clawmem long-term memory: recall, context, store, forget, update, list, stats; admin export, import, delete-bulk",
		QueueGroup:  s.cfg.QueueGroup,
		StatsHandler: func(e *micro.Endpoint) any {
			ep, ok := s.endpoints[e.Name]
			if !ok {
				return nil
			}
			st := ep.stats()
			if r := s.cfg.Replication; r != nil && r.Position != nil {
				st.LogSeq, st.Role = r.Position(), r.Role
			}
			return st
		},
		DoneHandler: func(micro.Service) { s.doneOnce.Do(func() { close(s.done) }) },
		ErrorHandler: func(_ micro.Service, err *micro.NATSError) {
			s.log.Error("query service subscription error", "subject", err.Subject, "err", err.Description)
		},
	})
	if err != nil {
		return fmt.Errorf("query service: %w", err)
	}
	groups := map[string]micro.Group{"": svc.AddGroup(s.cfg.Prefix + ".*")}
	if s.cfg.EnableAdmin {
		groups["admin-"] = svc.AddGroup(s.cfg.AdminPrefix)
	}
	for _, kind := range kinds {
		for _, op := range opsFor(kind != "") {
			ep := s.endpoints[kind+op]
			caller := "agent"
			if ep.admin {
				caller = "admin"
			}
			err := groups[kind].AddEndpoint(ep.name, s.dispatch(ep), micro.WithEndpointSubject(op),
				micro.WithEndpointMetadata(map[string]string{"op": op, "caller": caller}))
			if err != nil {
				_ = svc.Stop()
				return fmt.Errorf("query service: endpoint %s: %w", ep.name, err)
			}
		}
	}
	// The endpoints' subscriptions reach the server before Start returns,
	// so a caller never meets "no responders" from a service that started.
	if err := s.nc.Flush(); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("query service: register endpoints: %w", err)
	}
	s.svc = svc
	close(s.ready)
	s.log.Log(context.Background(), s.logLevel(), "query service started", "queue", s.cfg.QueueGroup, "admin", s.cfg.EnableAdmin)
	return nil
}

// Stop stops taking requests, waits for the ones received to be answered,
// and returns. Safe to call more than once.
func (s *Service) Stop() {
	s.mu.Lock()
	svc := s.svc
	s.svc = nil
	s.mu.Unlock()
	if svc == nil {
		return
	}
	if err := svc.Stop(); err != nil {
		s.log.Warn("query service stop", "err", err)
	}
	// micro's Stop only starts draining: requests this client has received
	// still sit in the subscriptions' queues. Once the server confirms the
	// unsubscribes (Flush), a barrier runs after every queued message has
	// reached the dispatcher; only then is the in-flight count final.
	if s.nc.Flush() == nil {
		drained := make(chan struct{})
		if s.nc.Barrier(func() { close(drained) }) == nil {
			select {
			case <-drained:
			case <-time.After(s.cfg.RequestTimeout):
				s.log.Warn("query service: gave up waiting for queued requests")
			}
		}
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.inFlight.Wait()
	s.workers.stop()
	s.closeExports()
	s.log.Log(context.Background(), s.logLevel(), "query service stopped")
}

// dispatch hands a request to the worker pool. micro calls handlers on the
// endpoint's subscription goroutine, so a slow recall would hold up every
// request behind it; waiting here for a free slot is the backpressure.
func (s *Service) dispatch(ep *endpoint) micro.HandlerFunc {
	sem := s.sem
	if ep.op == schemas.OpContext {
		sem = s.ctxSem
	}
	return func(req micro.Request) {
		received := time.Now()
		sem <- struct{}{}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			<-sem
			data, _ := s.encode(schemas.Failure(schemas.CodeInternal, "the query service is shutting down; retry", nil))
			s.publish(req.Reply(), data)
			return
		}
		s.inFlight.Add(1)
		base := s.base
		s.mu.Unlock()
		s.workers.run(func() {
			defer s.inFlight.Done()
			defer func() { <-sem }()
			s.serve(base, ep, req, received)
		})
	}
}

func (s *Service) serve(base context.Context, ep *endpoint, req micro.Request, received time.Time) {
	ep.active.Add(1)
	defer ep.active.Add(-1)
	res, result := s.safeHandle(base, ep, req.Subject(), req.Data(), received, req.Headers().Get(headerHop) != "")
	data, fits := s.encode(res)
	if !fits {
		result, res.IsError = schemas.CodeInvalid, true
	}
	// Counted before the reply goes out, so a caller that has its reply
	// sees it in $SRV.STATS and the metrics. Publish only buffers, so the
	// duration misses nothing of note.
	elapsed := time.Since(received)
	if result == "" {
		result = "ok"
	}
	s.metrics.requests.WithLabelValues(ep.op, result).Inc()
	s.metrics.duration.WithLabelValues(ep.op).Observe(elapsed.Seconds())
	ep.handled.Add(1)
	ep.totalDur.Add(int64(elapsed))
	if res.IsError {
		ep.failed.Add(1)
	}
	s.publish(req.Reply(), data)
}

// encode makes the reply's bytes. A reply over the connection's payload
// limit could not be sent at all, so it becomes an error reply saying what
// to ask for instead; fits is false then.
func (s *Service) encode(res schemas.ToolResult) (data []byte, fits bool) {
	data, err := json.Marshal(res)
	if err != nil {
		s.log.Error("query reply not encodable", "err", err)
		data, _ = json.Marshal(schemas.Failure(schemas.CodeInternal, "internal error: the reply could not be encoded", nil))
	}
	if limit := s.nc.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		data, _ = json.Marshal(schemas.Failure(schemas.CodeInvalid, fmt.Sprintf(
			"the reply is %d bytes, over the NATS limit of %d; ask for fewer memories (limit)", len(data), limit), nil))
		return data, false
	}
	return data, true
}

// publish sends the reply itself rather than through req.Respond, which
// records failures in the request while micro may be reading it on the
// subscription goroutine. A request without a reply subject (a plain
// publish) is still carried out; there is just no one to answer.
func (s *Service) publish(reply string, data []byte) {
	if reply == "" {
		return
	}
	if err := s.nc.Publish(reply, data); err != nil {
		s.log.Warn("query reply not sent", "err", err)
	}
}

// safeHandle turns a panic into an internal error reply: one bad request
// must never take the service down.
func (s *Service) safeHandle(base context.Context, ep *endpoint, subject string, data []byte, received time.Time, hop bool) (res schemas.ToolResult, result string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("query handler panic", "op", ep.op, "subject", subject, "panic", r)
			res, result = schemas.Failure(schemas.CodeInternal, "internal error; see the query service log", nil), schemas.CodeInternal
		}
	}()
	who, err := parseWho(subject, ep, s.cfg.Prefix)
	if err == nil {
		err = checkRequest(data)
	}
	if err != nil {
		return s.failure(ep, subject, err)
	}
	if res, code, done := s.replicate(base, ep, who, subject, hop, &data); done {
		return res, code
	}
	return s.answer(base, ep, who, subject, data, received)
}

// checkRequest refuses what no operation reads: an oversized or not UTF-8 request.
func checkRequest(data []byte) error {
	if len(data) > schemas.MaxRequestBytes {
		return fmt.Errorf("%w: the request is %d bytes (max %d)", schemas.ErrInvalid, len(data), schemas.MaxRequestBytes)
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: the request is not valid UTF-8", schemas.ErrInvalid)
	}
	return nil
}

// replicate does what a replicated deployment does before an operation
// runs here: a replica forwards a write to the writer, a read waits for
// the log to reach the caller's afterSeq, and a partition writer sends a
// write for another partition on to its writer (or may rewrite the
// request). done means the reply is res.
func (s *Service) replicate(base context.Context, ep *endpoint, who memory.Who, subject string, hop bool, data *[]byte) (res schemas.ToolResult, code string, done bool) {
	repl := s.cfg.Replication
	if repl != nil && repl.Forward && forwarded(ep.op) {
		ctx, cancel := context.WithTimeout(base, s.cfg.RequestTimeout)
		defer cancel()
		res, code = s.forwardWrite(ctx, ep, who, subject, *data)
		return res, code, true
	}
	if err := s.awaitSeq(base, *data); err != nil {
		return schemas.Failure(schemas.CodeStale, err.Error()+"; retry, or ask without afterSeq", nil), schemas.CodeStale, true
	}
	if repl != nil && repl.PartitionWriter {
		ctx, cancel := context.WithTimeout(base, s.cfg.RequestTimeout)
		defer cancel()
		out, routed, code := s.checkRoute(ctx, ep, who, subject, hop, *data)
		if routed != nil {
			return *routed, code, true
		}
		*data = out
	}
	return schemas.ToolResult{}, "", false
}

// answer runs the operation's handler here and, on a replicated
// deployment, has a write's reply wait for the change to be in the log.
func (s *Service) answer(base context.Context, ep *endpoint, who memory.Who, subject string, data []byte, received time.Time) (schemas.ToolResult, string) {
	handle, known := opHandlers[ep.op]
	if !known {
		return s.failure(ep, subject, fmt.Errorf("%w: unknown operation %q", schemas.ErrInvalid, ep.op))
	}
	ctx, cancel := context.WithTimeout(base, s.cfg.RequestTimeout)
	defer cancel()
	ok, err := handle(s, request{ctx: ctx, base: base, who: who, data: data, received: received})
	if err != nil {
		return s.failure(ep, subject, err)
	}
	if repl := s.cfg.Replication; repl != nil && repl.Flush != nil && writes(ep.op) {
		// The reply waits for the change to be in the log, so the caller
		// can read it back on any replica (afterSeq).
		if seq, err := repl.Flush(ctx); err != nil {
			s.log.Warn("memory log: a write's change is not published yet", "op", ep.op, "err", err)
		} else {
			ok.details = withSeq{ok.details, seq}
		}
	}
	return ok.result(), ok.label
}

// request is one call of an operation, as its handler gets it.
type request struct {
	// ctx ends at the service's RequestTimeout; base is the service's
	// own, for operations that keep a deadline of their own (context's is
	// measured from received, consolidation runs past a request's).
	ctx, base context.Context
	who       memory.Who
	data      []byte
	received  time.Time
}

// opHandlers answers each operation; safeHandle does what they share.
var opHandlers = map[string]func(*Service, request) (okReply, error){
	schemas.OpRecall:      (*Service).opRecall,
	schemas.OpContext:     (*Service).opContext,
	schemas.OpStore:       (*Service).opStore,
	schemas.OpForget:      (*Service).opForget,
	schemas.OpUpdate:      (*Service).opUpdate,
	schemas.OpList:        (*Service).opList,
	schemas.OpStats:       (*Service).opStats,
	schemas.OpShow:        (*Service).opShow,
	schemas.OpExport:      (*Service).opExport,
	schemas.OpImport:      (*Service).opImport,
	schemas.OpDeleteBulk:  (*Service).opDeleteBulk,
	schemas.OpConsolidate: (*Service).opConsolidate,
}

// parseWho is the caller: the subject's agent token (never anything in the
// payload), or the admin on the admin endpoints.
func parseWho(subject string, ep *endpoint, prefix string) (memory.Who, error) {
	if ep.admin {
		return memory.Admin(), nil
	}
	rest, ok := strings.CutPrefix(subject, prefix+".")
	agent, ok2 := strings.CutSuffix(rest, "."+ep.op)
	if !ok || !ok2 {
		return memory.Who{}, fmt.Errorf("%w: %q is not a service subject", schemas.ErrInvalid, subject)
	}
	if err := schemas.ValidateAgentID(agent); err != nil {
		return memory.Who{}, err
	}
	return memory.Agent(agent), nil
}

// failure makes the error reply for err. Internal errors are logged and
// not described to the caller, whose text goes to a model and may leak
// paths or endpoints.
func (s *Service) failure(ep *endpoint, subject string, err error) (schemas.ToolResult, string) {
	code := ErrorCode(err)
	msg := err.Error()
	var matches []string
	switch code {
	case schemas.CodeInternal:
		s.log.Error("query failed", "op", ep.op, "subject", subject, "err", err)
		msg = "internal error; see the query service log"
	case schemas.CodeTimeout:
		s.log.Warn("query timed out", "op", ep.op, "subject", subject, "err", err)
		msg = fmt.Sprintf("the request took longer than %s and was abandoned", s.cfg.RequestTimeout)
	case schemas.CodeAmbiguous:
		if amb, ok := errors.AsType[*engine.AmbiguousError](err); ok {
			matches = amb.Matches
		}
	default:
		s.log.Debug("query refused", "op", ep.op, "subject", subject, "code", code, "err", err)
	}
	return schemas.Failure(code, msg, matches), code
}

// ErrorCode maps an engine error to the code an error reply carries.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, memory.ErrNoIdentity):
		return schemas.CodeNoIdentity
	case errors.Is(err, engine.ErrScopeDenied):
		return schemas.CodeDenied
	case errors.Is(err, engine.ErrAmbiguous):
		return schemas.CodeAmbiguous
	case errors.Is(err, engine.ErrNotFound):
		return schemas.CodeNotFound
	case errors.Is(err, memory.ErrRejected):
		return schemas.CodeRejected
	case errors.Is(err, schemas.ErrInvalid), errors.Is(err, scopes.ErrUnknownScope):
		return schemas.CodeInvalid
	case errors.Is(err, context.DeadlineExceeded):
		return schemas.CodeTimeout
	case errors.Is(err, ErrMisrouted):
		return schemas.CodeUnavailable
	}
	return schemas.CodeInternal
}

// opsFor lists the operations an endpoint kind serves: admin endpoints
// also serve the admin-only bulk operations.
func opsFor(admin bool) []string {
	if admin {
		return slices.Concat(schemas.Ops, schemas.AdminOps)
	}
	return schemas.Ops
}

// adminOnly refuses an admin-only operation to an agent. Agents never
// reach one over NATS (there is no such endpoint); this guards Answer.
func adminOnly(who memory.Who, op string) error {
	if who.IsAdmin() {
		return nil
	}
	return fmt.Errorf("%w: %s is an operator (admin) operation", engine.ErrScopeDenied, op)
}

func (ep *endpoint) stats() schemas.EndpointStats {
	st := schemas.EndpointStats{InFlight: ep.active.Load(), Handled: ep.handled.Load(), ErrorReplies: ep.failed.Load()}
	if st.Handled > 0 {
		st.AverageProcessingTime = time.Duration(ep.totalDur.Load() / int64(st.Handled))
	}
	return st
}

// logLevel is the level of the service's start and stop: Debug for one
// partition's writer endpoints, whose partition the writer's own lines
// report (a node starts as many as it holds partitions), else Info.
func (s *Service) logLevel() slog.Level {
	if r := s.cfg.Replication; r != nil && r.PartitionWriter {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}
