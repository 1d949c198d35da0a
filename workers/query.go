package workers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/temporal"
	"github.com/clawmem/clawmem/schemas"
)

// Error codes in the details of an error reply (schemas.ErrorDetails.Code).
const (
	QueryCodeInvalid    = "invalid"
	QueryCodeNotFound   = "not_found"
	QueryCodeAmbiguous  = "ambiguous"
	QueryCodeDenied     = "denied"
	QueryCodeRejected   = "rejected"
	QueryCodeNoIdentity = "no_identity"
	QueryCodeTimeout    = "timeout"
	QueryCodeInternal   = "internal"
)

const (
	// QueryMaxRequestBytes bounds a request body. The largest legitimate
	// request is a memory_store of 64 KB text with 64 KB metadata; anything
	// near a megabyte is a mistake or an attack, refused before decoding.
	QueryMaxRequestBytes = 1 << 20
	// QueryMaxRecallLimit caps memory_recall's limit, as the plugin's tool does.
	QueryMaxRecallLimit = 20
	// queryDefaultRecallLimit is memory_recall's default (seed 004 §4.1).
	queryDefaultRecallLimit = 5
	// querySnippetRunes is how much of a memory's text summary lines quote.
	querySnippetRunes = 100
)

// QueryConfig tunes the query service. Start from DefaultQueryConfig: the
// zero value leaves the admin endpoints off, which is the safe failure.
type QueryConfig struct {
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
}

// DefaultQueryConfig is the configuration `clawmem up` runs with.
func DefaultQueryConfig() QueryConfig {
	return QueryConfig{EnableAdmin: true}.withDefaults()
}

func (c QueryConfig) withDefaults() QueryConfig {
	if c.QueueGroup == "" {
		c.QueueGroup = "clawmem-query"
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

// QueryService answers the memory tools over NATS request-reply as a NATS
// micro service: clawmem.v1.<agent>.<op> on behalf of the agent named by the
// subject, and clawmem.admin.v1.<op> for operators. Every reply, failures
// included, is a schemas.ToolResult, so a bridge passes it straight to the
// model.
type QueryService struct {
	nc      *nats.Conn
	eng     *memory.Engine
	cfg     QueryConfig
	log     *slog.Logger
	metrics queryMetrics

	// sem bounds concurrent handlers; context requests have their own so
	// that slow recalls never eat into an auto-recall deadline.
	sem, ctxSem chan struct{}

	mu        sync.Mutex
	svc       micro.Service
	base      context.Context
	stopped   bool
	inFlight  sync.WaitGroup
	endpoints map[string]*queryEndpoint
	done      chan struct{} // closed when micro reports the service done
	doneOnce  sync.Once

	// exports are the admin exports in progress, by id.
	exportsMu sync.Mutex
	exports   map[string]*queryExport
	// importMu makes each admin import batch's duplicate checks and write
	// one step, so two imports cannot both let the same text through.
	importMu sync.Mutex
}

// queryEndpoint is one registered endpoint and the stats micro cannot see:
// micro times only the hand-off to the worker pool.
type queryEndpoint struct {
	name  string
	op    string
	admin bool

	active   atomic.Int64
	handled  atomic.Uint64
	failed   atomic.Uint64
	totalDur atomic.Int64
}

// queryEndpointStats is the data of an endpoint in $SRV.STATS replies.
type queryEndpointStats struct {
	InFlight              int64         `json:"in_flight"`
	Handled               uint64        `json:"handled"`
	ErrorReplies          uint64        `json:"error_replies"`
	AverageProcessingTime time.Duration `json:"average_processing_time"`
}

type queryMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewQueryService builds the service; Run or Start serves it. reg may be
// nil (metrics unregistered), log nil (slog.Default).
func NewQueryService(nc *nats.Conn, eng *memory.Engine, cfg QueryConfig, reg prometheus.Registerer, log *slog.Logger) *QueryService {
	if log == nil {
		log = slog.Default()
	}
	cfg = cfg.withDefaults()
	m := queryMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "clawmem", Name: "query_requests_total",
			Help: "Query service requests, by operation and result (ok, timeout or the error code)."}, []string{"op", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "clawmem", Name: "query_duration_seconds",
			Help: "Time from receiving a query request to sending its reply.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"op"}),
	}
	m.requests = queryRegister(reg, m.requests, log)
	m.duration = queryRegister(reg, m.duration, log)
	return &QueryService{nc: nc, eng: eng, cfg: cfg, log: log.With("worker", "query"), metrics: m,
		sem: make(chan struct{}, cfg.MaxConcurrent), ctxSem: make(chan struct{}, cfg.MaxConcurrent),
		done: make(chan struct{})}
}

// queryRegister registers c, reusing the collector already registered under
// the same name so that several services (replicas in one process, tests)
// can share a registry.
func queryRegister[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	if errors.As(err, &dup) {
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil {
		log.Warn("query metrics not registered", "err", err)
	}
	return c
}

// Config returns the effective configuration.
func (s *QueryService) Config() QueryConfig { return s.cfg }

// Run serves until ctx ends, then stops taking requests, answers the ones
// already received and returns nil. It returns an error if the service ends
// on its own, which happens when the NATS connection closes.
func (s *QueryService) Run(ctx context.Context) error {
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

// Start registers the service and returns; Stop ends it.
func (s *QueryService) Start() error { return s.start(context.Background()) }

func (s *QueryService) start(base context.Context) error {
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
	s.endpoints = make(map[string]*queryEndpoint)
	kinds := []string{""}
	if s.cfg.EnableAdmin {
		kinds = append(kinds, "admin-")
	}
	for _, kind := range kinds {
		for _, op := range queryOps(kind != "") {
			ep := &queryEndpoint{name: kind + op, op: op, admin: kind != ""}
			s.endpoints[ep.name] = ep
		}
	}
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        schemas.ServiceName,
		Version:     schemas.ServiceVersion,
		Description: "clawmem long-term memory: recall, context, store, forget, update, list, stats; admin export, import, delete-bulk",
		QueueGroup:  s.cfg.QueueGroup,
		StatsHandler: func(e *micro.Endpoint) any {
			ep, ok := s.endpoints[e.Name]
			if !ok {
				return nil
			}
			return ep.stats()
		},
		DoneHandler: func(micro.Service) { s.doneOnce.Do(func() { close(s.done) }) },
		ErrorHandler: func(_ micro.Service, err *micro.NATSError) {
			s.log.Error("query service subscription error", "subject", err.Subject, "err", err.Description)
		},
	})
	if err != nil {
		return fmt.Errorf("query service: %w", err)
	}
	groups := map[string]micro.Group{"": svc.AddGroup(schemas.ServicePrefix + ".*")}
	if s.cfg.EnableAdmin {
		groups["admin-"] = svc.AddGroup(schemas.AdminPrefix)
	}
	for _, kind := range kinds {
		for _, op := range queryOps(kind != "") {
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
	s.svc = svc
	s.log.Info("query service started", "queue", s.cfg.QueueGroup, "admin", s.cfg.EnableAdmin)
	return nil
}

// Stop stops taking requests, waits for the ones received to be answered,
// and returns. Safe to call more than once.
func (s *QueryService) Stop() {
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
	s.closeExports()
	s.log.Info("query service stopped")
}

// dispatch hands a request to the worker pool. micro calls handlers on the
// endpoint's subscription goroutine, so a slow recall would hold up every
// request behind it; waiting here for a free slot is the backpressure.
func (s *QueryService) dispatch(ep *queryEndpoint) micro.HandlerFunc {
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
			data, _ := s.encode(queryFailure(QueryCodeInternal, "the query service is shutting down; retry", nil))
			s.publish(req.Reply(), data)
			return
		}
		s.inFlight.Add(1)
		base := s.base
		s.mu.Unlock()
		go func() {
			defer s.inFlight.Done()
			defer func() { <-sem }()
			s.serve(base, ep, req, received)
		}()
	}
}

func (s *QueryService) serve(base context.Context, ep *queryEndpoint, req micro.Request, received time.Time) {
	ep.active.Add(1)
	defer ep.active.Add(-1)
	res, result := s.safeHandle(base, ep, req.Subject(), req.Data(), received)
	data, fits := s.encode(res)
	if !fits {
		result, res.IsError = QueryCodeInvalid, true
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
func (s *QueryService) encode(res schemas.ToolResult) (data []byte, fits bool) {
	data, err := json.Marshal(res)
	if err != nil {
		s.log.Error("query reply not encodable", "err", err)
		data, _ = json.Marshal(queryFailure(QueryCodeInternal, "internal error: the reply could not be encoded", nil))
	}
	if limit := s.nc.MaxPayload(); limit > 0 && int64(len(data)) > limit {
		data, _ = json.Marshal(queryFailure(QueryCodeInvalid, fmt.Sprintf(
			"the reply is %d bytes, over the NATS limit of %d; ask for fewer memories (limit)", len(data), limit), nil))
		return data, false
	}
	return data, true
}

// publish sends the reply itself rather than through req.Respond, which
// records failures in the request while micro may be reading it on the
// subscription goroutine. A request without a reply subject (a plain
// publish) is still carried out; there is just no one to answer.
func (s *QueryService) publish(reply string, data []byte) {
	if reply == "" {
		return
	}
	if err := s.nc.Publish(reply, data); err != nil {
		s.log.Warn("query reply not sent", "err", err)
	}
}

// safeHandle turns a panic into an internal error reply: one bad request
// must never take the service down.
func (s *QueryService) safeHandle(base context.Context, ep *queryEndpoint, subject string, data []byte, received time.Time) (res schemas.ToolResult, result string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("query handler panic", "op", ep.op, "subject", subject, "panic", r)
			res, result = queryFailure(QueryCodeInternal, "internal error; see the query service log", nil), QueryCodeInternal
		}
	}()
	who, err := queryWho(subject, ep)
	if err != nil {
		return s.failure(ep, subject, err)
	}
	if len(data) > QueryMaxRequestBytes {
		return s.failure(ep, subject, fmt.Errorf("%w: the request is %d bytes (max %d)", schemas.ErrInvalid, len(data), QueryMaxRequestBytes))
	}
	if !utf8.Valid(data) {
		return s.failure(ep, subject, fmt.Errorf("%w: the request is not valid UTF-8", schemas.ErrInvalid))
	}
	if ep.op == schemas.OpContext {
		// The context endpoint keeps its own deadline, measured from receipt.
		ok, err := s.opContext(base, who, data, received)
		if err != nil {
			return s.failure(ep, subject, err)
		}
		return ok.result(), ok.label
	}
	ctx, cancel := context.WithTimeout(base, s.cfg.RequestTimeout)
	defer cancel()
	var ok queryOK
	switch ep.op {
	case schemas.OpRecall:
		ok, err = s.opRecall(ctx, who, data)
	case schemas.OpStore:
		ok, err = s.opStore(ctx, who, data)
	case schemas.OpForget:
		ok, err = s.opForget(ctx, who, data)
	case schemas.OpUpdate:
		ok, err = s.opUpdate(ctx, who, data)
	case schemas.OpList:
		ok, err = s.opList(ctx, who, data)
	case schemas.OpStats:
		ok, err = s.opStats(ctx, who, data)
	case schemas.OpShow:
		ok, err = s.opShow(ctx, who, data)
	case schemas.OpExport:
		ok, err = s.opExport(ctx, base, who, data)
	case schemas.OpImport:
		ok, err = s.opImport(ctx, who, data)
	case schemas.OpDeleteBulk:
		ok, err = s.opDeleteBulk(ctx, who, data)
	case schemas.OpConsolidate:
		ok, err = s.opConsolidate(base, who, data)
	default:
		err = fmt.Errorf("%w: unknown operation %q", schemas.ErrInvalid, ep.op)
	}
	if err != nil {
		return s.failure(ep, subject, err)
	}
	return ok.result(), ok.label
}

// queryWho is the caller: the subject's agent token (never anything in the
// payload), or the admin on the admin endpoints.
func queryWho(subject string, ep *queryEndpoint) (memory.Who, error) {
	if ep.admin {
		return memory.Admin(), nil
	}
	rest, ok := strings.CutPrefix(subject, schemas.ServicePrefix+".")
	agent, ok2 := strings.CutSuffix(rest, "."+ep.op)
	if !ok || !ok2 {
		return memory.Who{}, fmt.Errorf("%w: %q is not a service subject", schemas.ErrInvalid, subject)
	}
	if err := schemas.ValidateAgentID(agent); err != nil {
		return memory.Who{}, err
	}
	return memory.Agent(agent), nil
}

// queryOK is a successful operation's reply.
type queryOK struct {
	text    string
	details any
	label   string // metrics result; "" means ok
}

func (o queryOK) result() schemas.ToolResult {
	return schemas.ToolResult{Content: []schemas.TextContent{{Type: "text", Text: o.text}}, Details: o.details}
}

// QueryErrorDetails is the details object of an error reply: the code, and
// for an ambiguous id prefix the ids it matched.
type QueryErrorDetails struct {
	schemas.ErrorDetails
	Matches []string `json:"matches,omitempty"`
}

func queryFailure(code, msg string, matches []string) schemas.ToolResult {
	return schemas.ToolResult{
		Content: []schemas.TextContent{{Type: "text", Text: msg}},
		Details: QueryErrorDetails{ErrorDetails: schemas.ErrorDetails{Error: msg, Code: code}, Matches: matches},
		IsError: true,
	}
}

// failure makes the error reply for err. Internal errors are logged and
// not described to the caller, whose text goes to a model and may leak
// paths or endpoints.
func (s *QueryService) failure(ep *queryEndpoint, subject string, err error) (schemas.ToolResult, string) {
	code := QueryErrorCode(err)
	msg := err.Error()
	var matches []string
	switch code {
	case QueryCodeInternal:
		s.log.Error("query failed", "op", ep.op, "subject", subject, "err", err)
		msg = "internal error; see the query service log"
	case QueryCodeTimeout:
		s.log.Warn("query timed out", "op", ep.op, "subject", subject, "err", err)
		msg = fmt.Sprintf("the request took longer than %s and was abandoned", s.cfg.RequestTimeout)
	case QueryCodeAmbiguous:
		if amb, ok := errors.AsType[*engine.AmbiguousError](err); ok {
			matches = amb.Matches
		}
	default:
		s.log.Debug("query refused", "op", ep.op, "subject", subject, "code", code, "err", err)
	}
	return queryFailure(code, msg, matches), code
}

// QueryErrorCode maps an engine error to the code an error reply carries.
func QueryErrorCode(err error) string {
	switch {
	case errors.Is(err, memory.ErrNoIdentity):
		return QueryCodeNoIdentity
	case errors.Is(err, engine.ErrScopeDenied):
		return QueryCodeDenied
	case errors.Is(err, engine.ErrAmbiguous):
		return QueryCodeAmbiguous
	case errors.Is(err, engine.ErrNotFound):
		return QueryCodeNotFound
	case errors.Is(err, memory.ErrRejected):
		return QueryCodeRejected
	case errors.Is(err, schemas.ErrInvalid), errors.Is(err, scopes.ErrUnknownScope):
		return QueryCodeInvalid
	case errors.Is(err, context.DeadlineExceeded):
		return QueryCodeTimeout
	}
	return QueryCodeInternal
}

// Request bodies: the schemas request plus agentId, which bridges forward
// with the tool arguments. It is accepted so such requests work, and never
// read: the subject names the agent.
type (
	queryIgnoredFields struct {
		AgentID json.RawMessage `json:"agentId,omitempty"`
	}
	queryRecallBody struct {
		schemas.RecallRequest
		queryIgnoredFields
	}
	queryContextBody struct {
		schemas.ContextRequest
		queryIgnoredFields
	}
	queryStoreBody struct {
		schemas.StoreRequest
		queryIgnoredFields
	}
	queryForgetBody struct {
		schemas.ForgetRequest
		queryIgnoredFields
	}
	queryUpdateBody struct {
		schemas.UpdateRequest
		queryIgnoredFields
	}
	queryListBody struct {
		schemas.ListRequest
		queryIgnoredFields
	}
	queryStatsBody struct {
		schemas.StatsRequest
		queryIgnoredFields
	}
	queryShowBody struct {
		schemas.ShowRequest
		queryIgnoredFields
	}
)

// queryDecode strictly decodes a JSON object into v: unknown fields, wrong
// types and trailing data are errors naming what was wrong. An empty body
// is an empty object, so requests whose fields are all optional need none.
func queryDecode(data []byte, v any) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil
	}
	if data[0] != '{' {
		return fmt.Errorf("%w: the request must be a JSON object with the fields %s", schemas.ErrInvalid, queryFieldList(v))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fmt.Errorf("%w: malformed JSON at byte %d: %s", schemas.ErrInvalid, syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
		case errors.As(err, &typ) && typ.Field != "":
			return fmt.Errorf("%w: field %q must be %s, not a JSON %s", schemas.ErrInvalid, queryFieldName(typ.Field), queryTypeName(typ.Type), typ.Value)
		case errors.As(err, &typ):
			return fmt.Errorf("%w: the request must be a JSON object, not a JSON %s", schemas.ErrInvalid, typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return fmt.Errorf("%w: malformed JSON: the request ends early", schemas.ErrInvalid)
		case strings.Contains(err.Error(), "unknown field"):
			return fmt.Errorf("%w: %s (this request takes %s)", schemas.ErrInvalid, strings.TrimPrefix(err.Error(), "json: "), queryFieldList(v))
		}
		return fmt.Errorf("%w: %s", schemas.ErrInvalid, strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: unexpected data after the JSON object", schemas.ErrInvalid)
	}
	return nil
}

// queryFieldName drops the Go path encoding/json reports for fields of
// embedded structs ("RecallRequest.query" → "query").
func queryFieldName(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[i+1:]
	}
	return field
}

func queryTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer:
		return queryTypeName(t.Elem())
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return "a JSON object"
		}
		return "an array"
	}
	return t.String()
}

// queryFieldList names the JSON fields of the request type v points to.
func queryFieldList(v any) string {
	var names []string
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" && name != "agentId" {
				names = append(names, name)
			}
		}
	}
	walk(reflect.TypeOf(v).Elem())
	return strings.Join(names, ", ")
}

func queryCategory(s string) (schemas.Category, error) {
	if s == "" {
		return "", nil
	}
	return schemas.ParseCategory(s)
}

func queryImportance(p *float64) error {
	if p != nil && (*p < 0 || *p > 1) {
		return fmt.Errorf("%w: importance %v is outside 0..1", schemas.ErrInvalid, *p)
	}
	return nil
}

// QueryRecallDetails is memory_recall's details.
type QueryRecallDetails struct {
	Count    int                  `json:"count"`
	Memories []schemas.MemoryView `json:"memories"`
	Mode     string               `json:"mode,omitempty"`   // hybrid or vector, after any fallback
	Rerank   string               `json:"rerank,omitempty"` // what the rerank stage did
}

func (s *QueryService) opRecall(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryRecallBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	cat, err := queryCategory(r.Category)
	if err != nil {
		return queryOK{}, err
	}
	limit := r.Limit
	switch {
	case limit < 0:
		return queryOK{}, fmt.Errorf("%w: limit %d is negative", schemas.ErrInvalid, limit)
	case limit == 0:
		limit = queryDefaultRecallLimit
	}
	limit = min(limit, QueryMaxRecallLimit)
	res, err := s.eng.Recall(ctx, who, r.Query, memory.RecallOptions{Limit: limit, Scope: r.Scope, Category: cat, History: r.IncludeSuperseded})
	if err != nil {
		return queryOK{}, err
	}
	views := queryViews(res.Candidates)
	d := QueryRecallDetails{Count: len(views), Memories: views, Mode: res.Mode, Rerank: res.Rerank}
	if len(views) == 0 {
		return queryOK{text: "No relevant memories found.", details: d}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d %s:", len(views), queryPlural(len(views), "memory", "memories"))
	for i, c := range res.Candidates {
		text := queryOneLine(c.Memory.Text) + queryLife(schemas.View(c.Memory))
		if note := temporal.NoteFor(c.Memory.Metadata, c.Memory.Text, c.Memory.Timestamp); note != "" {
			text += " [" + note + "]"
		}
		fmt.Fprintf(&b, "\n%d. [%s:%s] %s (%.0f%%%s)", i+1, c.Memory.Category, c.Memory.Scope,
			text, c.Score*100, querySourceSuffix(c.Sources))
	}
	return queryOK{text: b.String(), details: d}, nil
}

// querySourceSuffix names where a hit came from, as the plugin's recall
// output does: ", vector+BM25+reranked".
func querySourceSuffix(src retrieve.Sources) string {
	var parts []string
	if src.VectorHit {
		parts = append(parts, "vector")
	}
	if src.BM25Hit {
		parts = append(parts, "BM25")
	}
	if src.Rerank == retrieve.RerankCrossEncoder {
		parts = append(parts, "reranked")
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, "+")
}

func queryViews(cs []retrieve.Candidate) []schemas.MemoryView {
	views := make([]schemas.MemoryView, len(cs))
	for i, c := range cs {
		views[i] = schemas.View(c.Memory)
		views[i].Score = c.Score
		views[i].Sources = c.Sources
	}
	return views
}

// QueryContextDetails is the context endpoint's details: PrependContext is
// what the before_prompt_build hook returns.
type QueryContextDetails struct {
	PrependContext string `json:"prependContext"`
	Count          int    `json:"count"`
	Skipped        string `json:"skipped,omitempty"`
	TimedOut       bool   `json:"timedOut,omitempty"`
}

func (s *QueryService) opContext(base context.Context, who memory.Who, data []byte, received time.Time) (queryOK, error) {
	var r queryContextBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	if r.TimeoutMs < 0 {
		return queryOK{}, fmt.Errorf("%w: timeoutMs %d is negative", schemas.ErrInvalid, r.TimeoutMs)
	}
	timeout := s.cfg.DefaultContextTimeout
	if r.TimeoutMs > 0 {
		timeout = min(time.Duration(r.TimeoutMs)*time.Millisecond, s.cfg.MaxContextTimeout)
	}
	// The caller's clock started when it sent the request, so time spent
	// queued here counts against its deadline.
	left := timeout - time.Since(received)
	if left <= 0 {
		return queryOK{details: QueryContextDetails{TimedOut: true}, label: QueryCodeTimeout}, nil
	}
	res, err := s.eng.Context(base, who, r.Prompt, left)
	if err != nil {
		return queryOK{}, err
	}
	d := QueryContextDetails{PrependContext: res.Block, Count: len(res.Memories), Skipped: res.Skipped, TimedOut: res.TimedOut}
	ok := queryOK{text: res.Block, details: d}
	if res.TimedOut {
		ok.label = QueryCodeTimeout
	}
	return ok, nil
}

// QueryStoreDetails is memory_store's details. ID is the memory the text now
// lives in: the new one, or for a duplicate the existing one (ExistingID).
type QueryStoreDetails struct {
	Action     string           `json:"action"` // created or duplicate
	ID         string           `json:"id"`
	Scope      string           `json:"scope"`
	Category   schemas.Category `json:"category"`
	ExistingID string           `json:"existingId,omitempty"`
	Similarity float64          `json:"similarity,omitempty"`
	Superseded []string         `json:"superseded,omitempty"` // memories the new one replaced
}

func (s *QueryService) opStore(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryStoreBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	cat, err := queryCategory(r.Category)
	if err != nil {
		return queryOK{}, err
	}
	if err := queryImportance(r.Importance); err != nil {
		return queryOK{}, err
	}
	if err := schemas.ValidateMetadata(r.Metadata); err != nil {
		return queryOK{}, err
	}
	res, err := s.eng.Store(ctx, who, memory.StoreRequest{Text: r.Text, Category: cat, Scope: r.Scope,
		Importance: r.Importance, Metadata: r.Metadata, Supersedes: r.Supersedes}, memory.DedupTool)
	if err != nil {
		return queryOK{}, err
	}
	m := res.Memory
	d := QueryStoreDetails{Action: string(res.Status), ID: m.ID, Scope: m.Scope, Category: m.Category}
	if res.Status == memory.Duplicate {
		d.ExistingID, d.Similarity = m.ID, res.Score
		return queryOK{text: fmt.Sprintf("Similar memory already exists: [%s] [%s:%s] %q (%.0f%% similar)",
			queryShortID(m.ID), m.Category, m.Scope, querySnippet(m.Text), res.Score*100), details: d}, nil
	}
	d.Superseded = res.Superseded
	text := fmt.Sprintf("Stored memory %s [%s:%s]: %q", queryShortID(m.ID), m.Category, m.Scope, querySnippet(m.Text))
	for _, id := range res.Superseded {
		text += fmt.Sprintf("\nIt supersedes %s (kept as history).", queryShortID(id))
	}
	return queryOK{text: text, details: d}, nil
}

// QueryForgetDetails is memory_forget's details.
type QueryForgetDetails struct {
	Action     string               `json:"action"` // deleted or candidates
	ID         string               `json:"id,omitempty"`
	Candidates []schemas.MemoryView `json:"candidates,omitempty"`
}

func (s *QueryService) opForget(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryForgetBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	id := strings.ToLower(strings.TrimSpace(r.MemoryID))
	if id != "" {
		if err := schemas.ValidateIDOrPrefix(id); err != nil {
			return queryOK{}, err
		}
	}
	res, err := s.eng.Forget(ctx, who, memory.ForgetRequest{ID: id, Query: r.Query, Scope: r.Scope})
	if err != nil {
		return queryOK{}, err
	}
	if res.Deleted != "" {
		return queryOK{text: fmt.Sprintf("Memory %s forgotten.", queryShortID(res.Deleted)),
			details: QueryForgetDetails{Action: "deleted", ID: res.Deleted}}, nil
	}
	views := queryViews(res.Candidates)
	return queryOK{text: queryCandidatesText(views), details: QueryForgetDetails{Action: "candidates", Candidates: views}}, nil
}

func queryCandidatesText(views []schemas.MemoryView) string {
	if len(views) == 0 {
		return "No matching memories found."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d %s; specify memoryId:", len(views), queryPlural(len(views), "candidate", "candidates"))
	for _, v := range views {
		fmt.Fprintf(&b, "\n- [%s] %s (%.0f%%)", queryShortID(v.ID), querySnippet(v.Text), v.Score*100)
	}
	return b.String()
}

// QueryUpdateDetails is memory_update's details.
type QueryUpdateDetails struct {
	Action     string               `json:"action"` // updated or candidates
	ID         string               `json:"id,omitempty"`
	Memory     *schemas.MemoryView  `json:"memory,omitempty"`
	Candidates []schemas.MemoryView `json:"candidates,omitempty"`
}

func (s *QueryService) opUpdate(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryUpdateBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	var cat *schemas.Category
	if r.Category != nil {
		c, err := schemas.ParseCategory(*r.Category)
		if err != nil {
			return queryOK{}, err
		}
		cat = &c
	}
	if err := queryImportance(r.Importance); err != nil {
		return queryOK{}, err
	}
	res, err := s.eng.Update(ctx, who, memory.UpdateRequest{ID: r.MemoryID, Text: r.Text, Category: cat,
		Importance: r.Importance, Scope: r.Scope})
	if err != nil {
		return queryOK{}, err
	}
	if res.Memory != nil {
		v := schemas.View(*res.Memory)
		return queryOK{text: fmt.Sprintf("Memory %s updated.", queryShortID(v.ID)),
			details: QueryUpdateDetails{Action: "updated", ID: v.ID, Memory: &v}}, nil
	}
	views := queryViews(res.Candidates)
	return queryOK{text: queryCandidatesText(views), details: QueryUpdateDetails{Action: "candidates", Candidates: views}}, nil
}

// QueryListDetails is memory_list's details.
type QueryListDetails struct {
	Count    int                  `json:"count"`
	Offset   int                  `json:"offset"`
	Memories []schemas.MemoryView `json:"memories"`
}

func (s *QueryService) opList(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryListBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	cat, err := queryCategory(r.Category)
	if err != nil {
		return queryOK{}, err
	}
	if r.Limit < 0 || r.Offset < 0 {
		return queryOK{}, fmt.Errorf("%w: limit and offset must not be negative", schemas.ErrInvalid)
	}
	ms, err := s.eng.List(ctx, who, memory.ListOptions{Scope: r.Scope, Category: cat, Limit: r.Limit, Offset: r.Offset, History: r.IncludeSuperseded})
	if err != nil {
		return queryOK{}, err
	}
	views := make([]schemas.MemoryView, len(ms))
	for i, m := range ms {
		views[i] = schemas.View(m)
	}
	d := QueryListDetails{Count: len(views), Offset: r.Offset, Memories: views}
	if len(views) == 0 {
		return queryOK{text: "No memories found.", details: d}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Recent memories (%d, newest first):", len(views))
	for i, v := range views {
		fmt.Fprintf(&b, "\n%d. [%s] [%s:%s] %s (%s%s)", r.Offset+i+1, queryShortID(v.ID), v.Category, v.Scope,
			querySnippet(v.Text), time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly), queryLife(v))
	}
	return queryOK{text: b.String(), details: d}, nil
}

func (s *QueryService) opStats(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryStatsBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	st, err := s.eng.Stats(ctx, who, r.Scope)
	if err != nil {
		return queryOK{}, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Memory statistics:\nTotal: %d", st.Total)
	if st.History > 0 {
		fmt.Fprintf(&b, " (plus %d in history: superseded or archived)", st.History)
	}
	queryCounts(&b, "By scope", st.ByScope)
	queryCounts(&b, "By category", st.ByCategory)
	fts := "off"
	if st.FullText {
		fts = "on"
	}
	rr := st.Rerank
	if rr != st.Retrieval.Rerank {
		rr += " (configured " + st.Retrieval.Rerank + ", no rerank endpoint)"
	}
	fmt.Fprintf(&b, "\nRetrieval: %s (vector %.2g, BM25 %.2g), rerank %s, full-text search %s",
		st.Retrieval.Mode, st.Retrieval.VectorWeight, st.Retrieval.BM25Weight, rr, fts)
	fmt.Fprintf(&b, "\nEmbedding: %s (%d dimensions)", st.Embedding, st.Dimensions)
	return queryOK{text: b.String(), details: st}, nil
}

// queryOps lists the operations an endpoint kind serves: admin endpoints
// also serve the admin-only bulk operations.
func queryOps(admin bool) []string {
	if admin {
		return slices.Concat(schemas.Ops, schemas.AdminOps)
	}
	return schemas.Ops
}

// queryAdminOnly refuses an admin-only operation to an agent. Agents never
// reach one over NATS (there is no such endpoint); this guards Answer.
func queryAdminOnly(who memory.Who, op string) error {
	if who.IsAdmin() {
		return nil
	}
	return fmt.Errorf("%w: %s is an operator (admin) operation", engine.ErrScopeDenied, op)
}

// queryScopeFilter is the admin's filter for an optional scope.
func queryScopeFilter(scope string) (engine.ScopeFilter, error) {
	if scope == "" {
		return engine.AllScopes(), nil
	}
	if err := schemas.ValidateScope(scope); err != nil {
		return engine.ScopeFilter{}, err
	}
	return engine.InScopes(scope), nil
}

const (
	// QueryExportDefaultLimit and QueryExportMaxLimit bound an export page;
	// a page also stops short of the NATS payload limit.
	QueryExportDefaultLimit = 1000
	QueryExportMaxLimit     = 10000
	// queryExportIdle ends an export nobody asked for a page of this long.
	queryExportIdle = 2 * time.Minute
	// queryExportMax bounds the exports open at once: each holds a
	// database read transaction.
	queryExportMax = 8
	// queryReplyOverhead is room left in a reply for all but the memories.
	queryReplyOverhead = 4 << 10
)

// QueryExportDetails is an export page: the memories in clawmem's export
// shape ({id,text,category,scope,importance,timestamp,metadata[,vector]}),
// and the cursor of the next page, empty after the last.
type QueryExportDetails struct {
	Page       int               `json:"page"`
	Count      int               `json:"count"`
	Memories   []json.RawMessage `json:"memories"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// queryExport is one export in progress: a store iteration running in its
// own goroutine, handing rows over as pages are asked for. Holding the
// iteration open (rather than re-querying from a position) keeps an export
// of any size linear and consistent: it reads one snapshot of the store.
type queryExport struct {
	id     string
	cancel context.CancelFunc
	rows   chan schemas.Memory
	errc   chan error // the iteration's result, once rows is closed
	idle   *time.Timer

	mu    sync.Mutex
	page  int // pages served
	last  queryOK
	carry *schemas.Memory // the row that did not fit the last page
	vecs  bool
	// done: every row was served. A finished export is kept until it has
	// been idle a while, so that a lost last reply can be asked for again,
	// but no longer counts against queryExportMax.
	done atomic.Bool
}

func (s *QueryService) opExport(ctx, base context.Context, who memory.Who, data []byte) (queryOK, error) {
	if err := queryAdminOnly(who, schemas.OpExport); err != nil {
		return queryOK{}, err
	}
	var r schemas.ExportRequest
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	switch {
	case r.Limit < 0:
		return queryOK{}, fmt.Errorf("%w: limit %d is negative", schemas.ErrInvalid, r.Limit)
	case r.Limit == 0:
		r.Limit = QueryExportDefaultLimit
	}
	r.Limit = min(r.Limit, QueryExportMaxLimit)
	var (
		ex   *queryExport
		want int
		err  error
	)
	if r.Cursor == "" {
		ex, err = s.startExport(base, r)
		want = 1
	} else {
		ex, want, err = s.findExport(r.Cursor)
	}
	if err != nil {
		return queryOK{}, err
	}
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.idle.Reset(queryExportIdle)
	switch want {
	case ex.page:
		return ex.last, nil // the reply was lost: the same page again
	case ex.page + 1:
	default:
		return queryOK{}, fmt.Errorf("%w: export cursor %q is not the next page (%d pages served)", schemas.ErrInvalid, r.Cursor, ex.page)
	}
	d, err := s.exportPage(ctx, ex, r.Limit)
	if err != nil {
		return queryOK{}, err
	}
	ex.page++
	d.Page = ex.page
	text := fmt.Sprintf("Export page %d: %d %s.", d.Page, d.Count, queryPlural(d.Count, "memory", "memories"))
	if ex.done.Load() {
		text += " End of export."
	} else {
		d.NextCursor = fmt.Sprintf("%s.%d", ex.id, ex.page+1)
	}
	ex.last = queryOK{text: text, details: d}
	return ex.last, nil
}

func (s *QueryService) startExport(base context.Context, r schemas.ExportRequest) (*queryExport, error) {
	f, err := queryScopeFilter(r.Scope)
	if err != nil {
		return nil, err
	}
	s.exportsMu.Lock()
	defer s.exportsMu.Unlock()
	if s.exports == nil {
		s.exports = map[string]*queryExport{}
	}
	running := 0
	for _, ex := range s.exports {
		if !ex.done.Load() {
			running++
		}
	}
	if running >= queryExportMax {
		return nil, fmt.Errorf("%w: %d exports are in progress; finish one or wait %s for an abandoned one to expire",
			schemas.ErrInvalid, running, queryExportIdle)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(base))
	ex := &queryExport{id: strings.ReplaceAll(uuid.NewString(), "-", ""), cancel: cancel,
		rows: make(chan schemas.Memory, 256), errc: make(chan error, 1), vecs: r.WithVectors}
	ex.idle = time.AfterFunc(queryExportIdle, func() { s.endExport(ex) })
	s.exports[ex.id] = ex
	store := s.eng.Backend()
	go func() {
		defer close(ex.rows)
		ex.errc <- store.Iterate(ctx, engine.IterateOptions{Scopes: f, WithVectors: r.WithVectors}, func(m schemas.Memory) error {
			select {
			case ex.rows <- m:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	return ex, nil
}

// findExport parses a cursor, "<export id>.<page>".
func (s *QueryService) findExport(cursor string) (*queryExport, int, error) {
	id, page, ok := strings.Cut(cursor, ".")
	n, err := strconv.Atoi(page)
	if !ok || err != nil || n < 1 {
		return nil, 0, fmt.Errorf("%w: %q is not an export cursor", schemas.ErrInvalid, cursor)
	}
	s.exportsMu.Lock()
	ex := s.exports[id]
	s.exportsMu.Unlock()
	if ex == nil {
		return nil, 0, fmt.Errorf("%w: export cursor %q is unknown or expired (an export ends after %s without a request); start the export again",
			engine.ErrNotFound, cursor, queryExportIdle)
	}
	return ex, n, nil
}

// exportPage takes the next rows, up to limit and the reply size limit.
// Callers hold ex.mu.
func (s *QueryService) exportPage(ctx context.Context, ex *queryExport, limit int) (QueryExportDetails, error) {
	budget := int64(QueryMaxRequestBytes)
	if s.nc != nil {
		budget = s.nc.MaxPayload()
	}
	budget -= queryReplyOverhead
	d := QueryExportDetails{Memories: []json.RawMessage{}}
	var size int64
	for d.Count < limit {
		var m schemas.Memory
		if ex.carry != nil {
			m, ex.carry = *ex.carry, nil
		} else {
			select {
			case row, ok := <-ex.rows:
				if !ok {
					if err := <-ex.errc; err != nil {
						s.endExport(ex)
						return d, fmt.Errorf("export: %w", err)
					}
					ex.done.Store(true)
					return d, nil
				}
				m = row
			case <-ctx.Done():
				return d, ctx.Err()
			}
		}
		row := portable.AppendRow(nil, m, ex.vecs)
		// The reply's encoder escapes <, > and & as \u003c and so on.
		n := int64(len(row)) + 1 + 5*int64(bytes.Count(row, []byte("<"))+bytes.Count(row, []byte(">"))+bytes.Count(row, []byte("&")))
		if d.Count > 0 && size+n > budget {
			ex.carry = &m
			break
		}
		size += n
		d.Memories = append(d.Memories, row)
		d.Count++
	}
	return d, nil
}

// endExport stops an export's iteration and forgets it.
func (s *QueryService) endExport(ex *queryExport) {
	ex.cancel()
	ex.idle.Stop()
	s.exportsMu.Lock()
	if s.exports[ex.id] == ex {
		delete(s.exports, ex.id)
	}
	s.exportsMu.Unlock()
}

func (s *QueryService) closeExports() {
	s.exportsMu.Lock()
	open := make([]*queryExport, 0, len(s.exports))
	for _, ex := range s.exports {
		open = append(open, ex)
	}
	s.exportsMu.Unlock()
	for _, ex := range open {
		s.endExport(ex)
	}
}

// QueryImportDetails is an import batch's outcome. Results lists the rows
// not imported (their line is the memory's 1-based position in the
// request), leaving out rows skipped for an existing id when the request
// said skipExisting.
type QueryImportDetails struct {
	Imported   int               `json:"imported"`
	Skipped    int               `json:"skipped"`
	Failed     int               `json:"failed"`
	Exists     int               `json:"exists"`
	Duplicates int               `json:"duplicates"`
	Results    []portable.Result `json:"results"`
	DryRun     bool              `json:"dryRun,omitempty"`
}

// QueryMaxImportBatch bounds the memories of one import request.
const QueryMaxImportBatch = 10000

func (s *QueryService) opImport(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	if err := queryAdminOnly(who, schemas.OpImport); err != nil {
		return queryOK{}, err
	}
	var r schemas.ImportRequest
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	if len(r.Memories) > QueryMaxImportBatch {
		return queryOK{}, fmt.Errorf("%w: %d memories in one request (max %d)", schemas.ErrInvalid, len(r.Memories), QueryMaxImportBatch)
	}
	if r.Scope != "" {
		if err := s.eng.Scopes().Validate(r.Scope); err != nil {
			return queryOK{}, err
		}
	}
	o := portable.ImportOptions{Scope: r.Scope, DryRun: r.DryRun, Dedup: portable.DefaultDedup,
		ValidateScope: s.eng.Scopes().Validate, Lock: &s.importMu}
	if r.NoDedup {
		o.Dedup = 0
	}
	recs := make([]portable.Record, len(r.Memories))
	for i, m := range r.Memories {
		recs[i] = portable.Record{Line: i + 1, Memory: m}
	}
	results, err := portable.NewImporter(s.eng.Backend(), s.eng.Embedder(), o).Import(ctx, recs)
	if err != nil {
		return queryOK{}, err
	}
	rep := portable.Report{QuietExists: r.SkipExisting}
	rep.Add(results)
	d := QueryImportDetails{Imported: rep.Imported, Skipped: rep.Skipped, Failed: rep.Failed, Exists: rep.Exists,
		Duplicates: rep.Duplicates, Results: append(rep.Failures, rep.Skips...), DryRun: r.DryRun}
	if d.Results == nil {
		d.Results = []portable.Result{}
	}
	verb := "Imported"
	if r.DryRun {
		verb = "Would import"
	}
	return queryOK{text: fmt.Sprintf("%s %d of %d memories: %d skipped (%d exist, %d duplicates), %d failed.",
		verb, d.Imported, len(recs), d.Skipped, d.Exists, d.Duplicates, d.Failed), details: d}, nil
}

// QueryDeleteBulkDetails is delete-bulk's outcome: Count memories deleted,
// or with DryRun the number that would be.
type QueryDeleteBulkDetails struct {
	Count  int    `json:"count"`
	DryRun bool   `json:"dryRun,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Before int64  `json:"before,omitempty"`
}

func (s *QueryService) opDeleteBulk(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	if err := queryAdminOnly(who, schemas.OpDeleteBulk); err != nil {
		return queryOK{}, err
	}
	var r schemas.DeleteBulkRequest
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	if r.Scope == "" && r.Before <= 0 {
		return queryOK{}, fmt.Errorf("%w: delete-bulk needs a scope or a before time (or both)", schemas.ErrInvalid)
	}
	if r.Before < 0 {
		return queryOK{}, fmt.Errorf("%w: before %d is negative", schemas.ErrInvalid, r.Before)
	}
	f, err := queryScopeFilter(r.Scope)
	if err != nil {
		return queryOK{}, err
	}
	bf := engine.BulkFilter{Scopes: f, Before: r.Before}
	d := QueryDeleteBulkDetails{DryRun: r.DryRun, Scope: r.Scope, Before: r.Before}
	what := "in " + queryOr(r.Scope, "every scope")
	if r.Before > 0 {
		what += " created before " + time.UnixMilli(r.Before).UTC().Format(time.RFC3339)
	}
	if r.DryRun {
		if d.Count, err = s.eng.Backend().CountBulk(ctx, bf); err != nil {
			return queryOK{}, err
		}
		return queryOK{text: fmt.Sprintf("Would delete %d %s %s (dry run).", d.Count, queryPlural(d.Count, "memory", "memories"), what), details: d}, nil
	}
	if d.Count, err = s.eng.Backend().BulkDelete(ctx, bf); err != nil {
		return queryOK{}, err
	}
	return queryOK{text: fmt.Sprintf("Deleted %d %s %s.", d.Count, queryPlural(d.Count, "memory", "memories"), what), details: d}, nil
}

func queryOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func queryCounts(b *strings.Builder, title string, counts map[string]int) {
	if len(counts) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:", title)
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "\n  %s: %d", k, counts[k])
	}
}

func (ep *queryEndpoint) stats() queryEndpointStats {
	st := queryEndpointStats{InFlight: ep.active.Load(), Handled: ep.handled.Load(), ErrorReplies: ep.failed.Load()}
	if st.Handled > 0 {
		st.AverageProcessingTime = time.Duration(ep.totalDur.Load() / int64(st.Handled))
	}
	return st
}

// queryShortID is the 8-char id prefix the tools show and accept back.
func queryShortID(id string) string {
	if len(id) > schemas.MinPrefixLen {
		return id[:schemas.MinPrefixLen]
	}
	return id
}

// queryOneLine collapses whitespace so that each memory is one line of a
// numbered summary.
func queryOneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// querySnippet is a one-line quote of at most querySnippetRunes runes.
func querySnippet(s string) string {
	s = queryOneLine(s)
	if utf8.RuneCountInString(s) <= querySnippetRunes {
		return s
	}
	r := []rune(s)
	return string(r[:querySnippetRunes]) + "…"
}

func queryPlural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// RunRecallBench sends n memory_recall requests for agent one after another,
// cycling through queries, and returns the 50th and 99th percentile of the
// round-trip time. An error reply fails the run: a benchmark of refusals
// measures nothing.
func RunRecallBench(ctx context.Context, nc *nats.Conn, agent string, queries []string, n int) (p50, p99 time.Duration, err error) {
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
		msg, err := queryRequest(ctx, nc, subject, bodies[i%len(bodies)])
		if err != nil {
			return 0, 0, fmt.Errorf("recall %d: %w", i, err)
		}
		lat = append(lat, time.Since(start))
		var res struct {
			IsError bool              `json:"isError"`
			Details QueryErrorDetails `json:"details"`
		}
		if err := json.Unmarshal(msg.Data, &res); err != nil {
			return 0, 0, fmt.Errorf("recall %d: reply is not a tool result: %w", i, err)
		}
		if res.IsError {
			return 0, 0, fmt.Errorf("recall %d: %s: %s", i, res.Details.Code, res.Details.Error)
		}
	}
	return QueryPercentile(lat, 0.50), QueryPercentile(lat, 0.99), nil
}

func queryRequest(ctx context.Context, nc *nats.Conn, subject string, body []byte) (*nats.Msg, error) {
	if _, ok := ctx.Deadline(); !ok {
		// One request must not hang the whole run when no service answers.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	return nc.RequestWithContext(ctx, subject, body)
}

// QueryPercentile is the nearest-rank q-quantile (0 < q ≤ 1) of ds.
func QueryPercentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(float64(len(s))*q)) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// queryLife marks a memory that no longer holds, for lists and recall
// with history: "; superseded by 3f2a9c1e on 2026-03-01" or "; archived
// on …". Empty for a current memory.
func queryLife(v schemas.MemoryView) string {
	if v.InvalidatedAt == 0 {
		return ""
	}
	on := time.UnixMilli(v.InvalidatedAt).UTC().Format(time.DateOnly)
	if v.SupersededBy == "" {
		return "; archived on " + on
	}
	return "; superseded by " + queryShortID(v.SupersededBy) + " on " + on
}

// QueryShowDetails is memory_show's details: the memory, the memories it
// replaced (newest first, back to the first), and those that replaced it
// (oldest first, up to the one that holds now).
type QueryShowDetails struct {
	Memory     schemas.MemoryView   `json:"memory"`
	Replaced   []schemas.MemoryView `json:"replaced,omitempty"`
	ReplacedBy []schemas.MemoryView `json:"replacedBy,omitempty"`
}

func (s *QueryService) opShow(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	var r queryShowBody
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	if r.MemoryID == "" {
		return queryOK{}, fmt.Errorf("%w: give memoryId", schemas.ErrInvalid)
	}
	ch, err := s.eng.Chain(ctx, who, r.MemoryID)
	if err != nil {
		return queryOK{}, err
	}
	views := func(ms []schemas.Memory) []schemas.MemoryView {
		out := make([]schemas.MemoryView, len(ms))
		for i, m := range ms {
			out[i] = schemas.View(m)
		}
		return out
	}
	d := QueryShowDetails{Memory: schemas.View(ch.Memory), Replaced: views(ch.Replaced), ReplacedBy: views(ch.ReplacedBy)}
	line := func(v schemas.MemoryView) string {
		return fmt.Sprintf("[%s] [%s:%s] %s (%s%s)", queryShortID(v.ID), v.Category, v.Scope, queryOneLine(v.Text),
			time.UnixMilli(v.Timestamp).UTC().Format(time.DateOnly), queryLife(v))
	}
	var b strings.Builder
	b.WriteString(line(d.Memory))
	for _, v := range d.ReplacedBy {
		b.WriteString("\n  replaced by " + line(v))
	}
	for _, v := range d.Replaced {
		b.WriteString("\n  replaced " + line(v))
	}
	return queryOK{text: b.String(), details: d}, nil
}

func (s *QueryService) opConsolidate(ctx context.Context, who memory.Who, data []byte) (queryOK, error) {
	if err := queryAdminOnly(who, schemas.OpConsolidate); err != nil {
		return queryOK{}, err
	}
	var r schemas.ConsolidateRequest
	if err := queryDecode(data, &r); err != nil {
		return queryOK{}, err
	}
	if r.MergeMin < 0 || r.MergeMin > 1 || r.ArchiveFloor < 0 || r.ArchiveFloor > 1 || r.HalfLifeDays < 0 {
		return queryOK{}, fmt.Errorf("%w: mergeMin and archiveFloor are 0..1, archiveHalfLifeDays not negative", schemas.ErrInvalid)
	}
	rep, err := s.eng.Consolidate(ctx, memory.ConsolidateOptions{Scope: r.Scope, DryRun: r.DryRun, MergeMin: r.MergeMin,
		ArchiveFloor: r.ArchiveFloor, ArchiveHalfLifeDays: r.HalfLifeDays, Judge: s.cfg.MergeJudge})
	if err != nil {
		return queryOK{}, err
	}
	verb := map[bool]string{true: "would merge", false: "merged"}[rep.DryRun]
	var b strings.Builder
	fmt.Fprintf(&b, "Consolidation over %d memories: %s %d group(s), archived %d.", rep.Scanned, verb, len(rep.Merges), len(rep.Archived))
	if rep.DryRun {
		fmt.Fprintf(&b, " (dry run: nothing changed)")
	}
	for _, m := range rep.Merges {
		short := make([]string, len(m.Sources))
		for i, id := range m.Sources {
			short[i] = queryShortID(id)
		}
		fmt.Fprintf(&b, "\n- %s into [%s] %s", strings.Join(short, ", "), queryShortID(m.Into), querySnippet(m.Text))
	}
	for _, id := range rep.Archived {
		fmt.Fprintf(&b, "\n- archived %s", queryShortID(id))
	}
	return queryOK{text: b.String(), details: rep}, nil
}
