// Package httpapi is clawmem's JSON HTTP API for agents and apps outside
// OpenClaw and MCP: every query-service operation as a resource under /v1,
// acting for the agent its bearer token names (never one named in a
// body), described by an OpenAPI 3 document at GET /v1/openapi.json that
// is built from the same route table and the same Go types as the JSON
// Schemas in schemas/jsonschema. The hook ingest listener serves it.
//
// A request becomes the operation's NATS request (schemas.*Request) and
// goes to the query service as the agent (Caller); the reply is the
// service's schemas.ToolResult, with an HTTP status from its error code.
// So the HTTP API checks, scopes and answers exactly as NATS, MCP and the
// plugin do: there is one implementation of each operation.
//
// The API also serves the subset of mem0's platform API that mem0's
// clients call (GET /v1/ping/, POST /v3/memories/add/, /v3/memories/search/
// and /v3/memories/, GET|PUT|DELETE /v1/memories/{id}/, GET
// /v1/memories/{id}/history/, DELETE /v1/memories/), over the same
// operations. The agent is still the token's: mem0's user_id, agent_id,
// app_id and run_id are labels in each memory's metadata ("mem0"), which
// filter within that agent's memories and isolate nothing (give each end
// user its own agent token for that); run_id is also the memory's
// sessionKey. add keeps what clawmem's capture rules keep of the user's
// messages (all of them verbatim with infer:false); history is a memory's
// supersede chain. mem0.go has the details.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/schemas"
)

// Caller answers one operation for an agent: client.Client's Call. An
// error means no answer at all (the query service is down, a deadline).
type Caller interface {
	Call(ctx context.Context, op, agent string, req any) (schemas.ToolResult, error)
}

// RawCaller is a Caller that can also return the reply's bytes as the
// service sent them (client.NATS): the API passes them on without decoding
// them into maps and encoding them again.
type RawCaller interface {
	CallRaw(ctx context.Context, op, agent string, req any) ([]byte, error)
}

// ErrUnavailable marks a Caller error that means no query service
// answers; the API says 503 and asks the client to retry.
var ErrUnavailable = errors.New("no query service answers")

// MaxImport bounds the memories of one POST /v1/import.
const MaxImport = 100

// API serves the routes. Build it with New.
type API struct {
	caller  Caller
	tokens  *Tokens
	log     *slog.Logger
	timeout time.Duration
	mux     *http.ServeMux
	doc     []byte
	// status, when set (tests), sees the status of every answer.
	status func(pattern string, code int)
}

// Option configures an API.
type Option func(*API)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(a *API) { a.log = l } }

// WithTimeout bounds one operation (default 30 s).
func WithTimeout(d time.Duration) Option { return func(a *API) { a.timeout = d } }

// New builds the API over caller, admitting the holders of tokens.
func New(caller Caller, tokens *Tokens, opts ...Option) *API {
	a := &API{caller: caller, tokens: tokens, log: slog.New(slog.DiscardHandler), timeout: 30 * time.Second,
		mux: http.NewServeMux()}
	for _, o := range opts {
		o(a)
	}
	for _, r := range routes {
		a.mux.HandleFunc(r.pattern(), a.serve(r))
	}
	for _, r := range mem0Routes {
		a.mux.HandleFunc(r.pattern, a.serveMem0(r))
	}
	a.doc = mustDoc()
	a.mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(a.doc)
	})
	return a
}

// Handler serves the API's routes; a path of it that is not one answers
// 404, a method it does not have 405.
func (a *API) Handler() http.Handler { return a.mux }

// Paths are the URL prefixes the API owns, for a server that mounts it
// beside other routes.
var Paths = append([]string{"/v1/openapi.json", "/v1/recall", "/v1/context", "/v1/memories", "/v1/memories/", "/v1/stats", "/v1/forget", "/v1/import"},
	mem0Paths...)

// in says where a route's request comes from.
type in int

const (
	fromBody  in = iota // the JSON body
	fromQuery           // the URL's query parameters
)

// route is one resource: method and path, the operation it runs and
// where its request comes from. The OpenAPI document is made from these.
type route struct {
	method, path string
	op           string
	summary      string
	req          any    // the request type (schemas.*Request)
	from         in     // where req is read from
	idField      string // the request's JSON field the path's {id} fills
	errors       []int  // the error statuses the route documents
	// run, when set, answers instead of a single call of op.
	run func(a *API, ctx context.Context, agent string, req any) (schemas.ToolResult, error)
}

func (r route) pattern() string { return r.method + " " + r.path }

// Errors every authenticated route can answer.
var common = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusServiceUnavailable}

func withCommon(codes ...int) []int { return append(append([]int{}, common...), codes...) }

var routes = []route{
	{method: http.MethodPost, path: "/v1/recall", op: schemas.OpRecall, req: schemas.RecallRequest{},
		summary: "Recall the memories that answer a query (memory_recall)",
		errors:  withCommon(http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)},
	{method: http.MethodPost, path: "/v1/context", op: schemas.OpContext, req: schemas.ContextRequest{},
		summary: "The auto-recall block for a prompt, framed for the model",
		errors:  withCommon(http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)},
	{method: http.MethodPost, path: "/v1/memories", op: schemas.OpStore, req: schemas.StoreRequest{},
		summary: "Store a memory (memory_store)",
		errors:  withCommon(http.StatusForbidden, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity)},
	{method: http.MethodGet, path: "/v1/memories", op: schemas.OpList, req: schemas.ListRequest{}, from: fromQuery,
		summary: "List memories, newest first; each page's nextCursor asks for the next (memory_list, export pages)",
		errors:  withCommon(http.StatusForbidden)},
	{method: http.MethodGet, path: "/v1/memories/{id}", op: schemas.OpShow, req: schemas.ShowRequest{}, from: fromQuery,
		idField: "memoryId", summary: "One memory with the facts it replaced and that replaced it (memory_show)",
		errors: withCommon(http.StatusNotFound, http.StatusConflict)},
	{method: http.MethodPatch, path: "/v1/memories/{id}", op: schemas.OpUpdate, req: schemas.UpdateRequest{},
		idField: "memoryId", summary: "Change a memory's text, importance, category or scope (memory_update)",
		errors: withCommon(http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)},
	{method: http.MethodDelete, path: "/v1/memories/{id}", op: schemas.OpForget, req: schemas.ForgetRequest{}, from: fromQuery,
		idField: "memoryId", summary: "Forget a memory (memory_forget)",
		errors: withCommon(http.StatusNotFound, http.StatusConflict)},
	{method: http.MethodPost, path: "/v1/forget", op: schemas.OpForget, req: schemas.ForgetRequest{},
		summary: "Forget by id or by query (memory_forget: a query that matches one memory well forgets it, else lists candidates)",
		errors:  withCommon(http.StatusNotFound, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)},
	{method: http.MethodGet, path: "/v1/stats", op: schemas.OpStats, req: schemas.StatsRequest{}, from: fromQuery,
		summary: "Counts of the memories this agent can read (memory_stats)",
		errors:  withCommon(http.StatusForbidden)},
	{method: http.MethodPost, path: "/v1/import", op: schemas.OpStore, req: ImportRequest{}, run: importBatch,
		summary: "Store up to 100 memories, each as POST /v1/memories would; details.results says what became of each",
		errors:  withCommon(http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)},
}

// ImportRequest is POST /v1/import: memories to store for the agent, each
// as memory_store stores one (its checks, dedup and scope rules).
type ImportRequest struct {
	Memories []schemas.StoreRequest `json:"memories"`
}

// ImportDetails is POST /v1/import's details: one result per memory, in
// order.
type ImportDetails struct {
	Stored  int            `json:"stored"`
	Failed  int            `json:"failed"`
	Results []ImportResult `json:"results"`
}

// ImportResult is what became of one memory of an import: its store
// details, or the error reply's details.
type ImportResult struct {
	Index   int  `json:"index"`
	IsError bool `json:"isError,omitempty"`
	Details any  `json:"details"`
}

func importBatch(a *API, ctx context.Context, agent string, req any) (schemas.ToolResult, error) {
	r := req.(*ImportRequest)
	if len(r.Memories) == 0 || len(r.Memories) > MaxImport {
		return schemas.Failure(schemas.CodeInvalid, fmt.Sprintf("memories: give 1 to %d memories (got %d)", MaxImport, len(r.Memories)), nil), nil
	}
	d := ImportDetails{Results: make([]ImportResult, len(r.Memories))}
	for i, m := range r.Memories {
		res, err := a.caller.Call(ctx, schemas.OpStore, agent, m)
		if err != nil {
			return schemas.ToolResult{}, err
		}
		d.Results[i] = ImportResult{Index: i, IsError: res.IsError, Details: res.Details}
		if res.IsError {
			d.Failed++
		} else {
			d.Stored++
		}
	}
	return schemas.Reply(fmt.Sprintf("Stored %d of %d memories.", d.Stored, len(r.Memories)), d), nil
}

// serve answers one route: the token's agent, the request, the call.
func (a *API) serve(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply := func(code int, res schemas.ToolResult) { a.write(w, rt.pattern(), code, encode(res, true)) }
		fail := func(code int, errCode, msg string) { reply(code, schemas.Failure(errCode, msg, nil)) }
		agent, ok := a.agent(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="clawmem"`)
			fail(http.StatusUnauthorized, schemas.CodeNoIdentity,
				"missing or unknown token: send Authorization: Bearer <token>, the agent's token (clawmem agent token AGENT)")
			return
		}
		req, code, err := a.request(w, r, rt)
		if err != nil {
			fail(code, schemas.CodeInvalid, err.Error())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
		defer cancel()
		var res schemas.ToolResult
		switch raw, isRaw := a.caller.(RawCaller); {
		case rt.run != nil:
			res, err = rt.run(a, ctx, agent, req)
		case isRaw:
			var data []byte
			if data, err = raw.CallRaw(ctx, rt.op, agent, req); err == nil {
				if code, ok := rawStatus(data); ok {
					a.write(w, rt.pattern(), code, data)
					return
				}
				err = errors.New("the query service's reply is not a tool result")
			}
		default:
			res, err = a.caller.Call(ctx, rt.op, agent, req)
		}
		if err != nil {
			code, errCode := http.StatusServiceUnavailable, schemas.CodeUnavailable
			if errors.Is(err, context.DeadlineExceeded) {
				code, errCode = http.StatusGatewayTimeout, schemas.CodeTimeout
			}
			w.Header().Set("Retry-After", "1")
			a.log.Warn("http api: no answer", "op", rt.op, "agent", agent, "err", err)
			fail(code, errCode, "the query service did not answer: "+err.Error())
			return
		}
		reply(statusOf(res), res)
	}
}

// agent is the agent the request's token acts for. "Token <key>" (mem0's
// clients) is accepted as well as "Bearer <key>".
func (a *API) agent(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(h, "Token ")
	}
	if !ok || a.tokens == nil {
		return "", false
	}
	return a.tokens.Agent(tok)
}

// request reads the route's request: the body or the query parameters,
// and the path's id. A failure gives the status to answer.
func (a *API) request(w http.ResponseWriter, r *http.Request, rt route) (any, int, error) {
	v := reflect.New(reflect.TypeOf(rt.req))
	switch rt.from {
	case fromBody:
		body, err := readBody(w, r)
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is over %d bytes", schemas.MaxRequestBytes)
			}
			return nil, http.StatusBadRequest, fmt.Errorf("read body: %w", err)
		}
		if err := DecodeStrict(body, v.Interface()); err != nil {
			return nil, http.StatusBadRequest, err
		}
	case fromQuery:
		if err := fromParams(r, v.Elem()); err != nil {
			return nil, http.StatusBadRequest, err
		}
	}
	if rt.idField != "" {
		id := r.PathValue("id")
		f := fieldByJSON(v.Elem(), rt.idField)
		if cur := f.String(); cur != "" && cur != id {
			return nil, http.StatusBadRequest, fmt.Errorf("%s %q in the body disagrees with the path's %q", rt.idField, cur, id)
		}
		f.SetString(id)
	}
	if rt.run != nil {
		return v.Interface(), 0, nil
	}
	return v.Elem().Interface(), 0, nil
}

// readBody reads at most schemas.MaxRequestBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > schemas.MaxRequestBytes {
		return nil, &http.MaxBytesError{Limit: schemas.MaxRequestBytes}
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, schemas.MaxRequestBytes))
}

// DecodeStrict decodes one JSON object into v: valid UTF-8, no field v
// does not have, values of the right types, nothing after it.
func DecodeStrict(body []byte, v any) error {
	if !utf8.Valid(body) {
		return errors.New("the body is not valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return errors.New("the body is empty: send a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the body is not a JSON object of this operation's fields: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("the body holds more than one JSON value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the body holds more than one JSON value")
	}
	return nil
}

// fromParams fills v (a request struct) from the URL's query parameters,
// named as its JSON fields. An unknown parameter, a repeated one or a
// value of the wrong type is an error.
func fromParams(r *http.Request, v reflect.Value) error {
	for name, vals := range r.URL.Query() {
		f := fieldByJSON(v, name)
		if !f.IsValid() {
			return fmt.Errorf("unknown query parameter %q (want %s)", name, strings.Join(paramNames(v.Type()), ", "))
		}
		if len(vals) != 1 {
			return fmt.Errorf("query parameter %q given %d times", name, len(vals))
		}
		s := vals[0]
		if !utf8.ValidString(s) {
			return fmt.Errorf("query parameter %q is not valid UTF-8", name)
		}
		var err error
		switch f.Kind() {
		case reflect.String:
			f.SetString(s)
		case reflect.Int, reflect.Int64:
			var n int64
			if n, err = strconv.ParseInt(s, 10, 64); err == nil {
				f.SetInt(n)
			}
		case reflect.Uint64:
			var n uint64
			if n, err = strconv.ParseUint(s, 10, 64); err == nil {
				f.SetUint(n)
			}
		case reflect.Bool:
			var b bool
			if b, err = strconv.ParseBool(s); err == nil {
				f.SetBool(b)
			}
		default:
			err = errors.New("not settable from a query parameter")
		}
		if err != nil {
			return fmt.Errorf("query parameter %q: want a %s, got %q", name, f.Kind(), s)
		}
	}
	return nil
}

// fieldByJSON is v's field whose JSON name is name; invalid when none.
func fieldByJSON(v reflect.Value, name string) reflect.Value {
	t := v.Type()
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == name {
			return v.Field(i)
		}
	}
	return reflect.Value{}
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

func paramNames(t reflect.Type) []string {
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		out = append(out, jsonName(t.Field(i)))
	}
	return out
}

// statusOf is the HTTP status of a service reply, from its error code.
func statusOf(res schemas.ToolResult) int {
	code := ""
	switch d := res.Details.(type) {
	case schemas.ErrorDetails:
		code = d.Code
	case map[string]any:
		code, _ = d["code"].(string)
	default:
		// Decoded from NATS, details are raw JSON.
		var e schemas.ErrorDetails
		if b, err := json.Marshal(d); err == nil && json.Unmarshal(b, &e) == nil {
			code = e.Code
		}
	}
	return codeStatus(res.IsError, code)
}

// codeStatus is the HTTP status of a reply that is an error with code, or
// is not one.
func codeStatus(isError bool, code string) int {
	if !isError {
		return http.StatusOK
	}
	if st, ok := statusByCode[code]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// statusByCode is the HTTP status of each error code (schemas.Codes);
// internal, and a code this API does not know, are 500.
var statusByCode = map[string]int{
	schemas.CodeInvalid:     http.StatusBadRequest,
	schemas.CodeNotFound:    http.StatusNotFound,
	schemas.CodeAmbiguous:   http.StatusConflict,
	schemas.CodeDenied:      http.StatusForbidden,
	schemas.CodeRejected:    http.StatusUnprocessableEntity,
	schemas.CodeNoIdentity:  http.StatusUnauthorized,
	schemas.CodeTimeout:     http.StatusGatewayTimeout,
	schemas.CodeStale:       http.StatusServiceUnavailable,
	schemas.CodeUnavailable: http.StatusServiceUnavailable,
}

// rawStatus is the HTTP status of a reply in the service's bytes; ok is
// false when they are not a tool result.
func rawStatus(data []byte) (int, bool) {
	var r struct {
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"isError"`
		Details struct {
			Code string `json:"code"`
		} `json:"details"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Content) == 0 || string(r.Content) == "null" {
		return 0, false
	}
	return codeStatus(r.IsError, r.Details.Code), true
}

// write answers code with the JSON data, for the native and the mem0
// routes alike, and lets a test see the status by route.
func (a *API) write(w http.ResponseWriter, pattern string, code int, data []byte) {
	if a.status != nil {
		a.status(pattern, code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// encode is v's JSON with a newline, "<" and ">" escaped when escapeHTML.
func encode(v any, escapeHTML bool) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(v) // the API's own types and decoded JSON: nothing that cannot encode
	return b.Bytes()
}
