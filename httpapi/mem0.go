package httpapi

// mem0 compatibility: the subset of mem0's platform API that its clients
// (the npm package mem0ai 3.x, MemoryClient({apiKey, host})) call, served
// over the same query-service operations as the native routes, so that an
// app written for mem0 runs against clawmem with only its host and key
// changed.
//
// The mapping:
//   - The clawmem agent is the token's, always. mem0's user_id, agent_id,
//     app_id and run_id are labels kept in each memory's metadata under
//     "mem0" (with the caller's own metadata as mem0.metadata); run_id is
//     also the memory's sessionKey, so clawmem's session filter
//     (memory_list's session) finds a run's memories. The labels filter
//     within the agent's memories and are not a security boundary: give
//     each end user of an app its own agent token for that.
//   - add runs clawmem's capture rules (rules.ShouldCapture, the rules
//     the capture pipeline applies to a user's messages) over the user
//     messages and stores each kept text with memory_store; infer:false
//     stores every message verbatim, except what memory_store itself
//     rejects (noise, prompt injection). The reply lists what was stored.
//   - search recalls schemas.MaxRecallLimit memories, keeps those whose
//     labels match the filters and returns the first top_k; get-all and
//     delete-all read every page of memory_list and keep the matches.
//   - get, update and delete by id are memory_show, memory_update and
//     memory_forget; history is the memory's supersede chain.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/schemas"
)

// mem0Paths are the URL prefixes of mem0's routes that Paths does not
// hold already (/v1/memories/ is the native API's too).
var mem0Paths = []string{"/v1/ping/", "/v3/memories/"}

// Bounds of mem0 requests besides the body's size.
const (
	mem0MaxMessages = 100  // messages of one add
	mem0MaxLabel    = 256  // bytes of a user_id, agent_id, app_id or run_id
	mem0DefaultTopK = 10   // mem0's default top_k
	mem0DefaultPage = 100  // get-all's default page_size
	mem0MaxPage     = 1000 // get-all's largest page_size
)

// mem0Route is one of mem0's routes: it answers a JSON body to encode
// with status 200, or an error (*mem0Error for a client's mistake).
type mem0Route struct {
	pattern string
	run     func(a *API, ctx context.Context, r *http.Request, agent string) (any, error)
}

var mem0Routes = []mem0Route{
	{"GET /v1/ping/{$}", mem0Ping},
	{"POST /v3/memories/add/{$}", mem0Add},
	{"POST /v3/memories/search/{$}", mem0Search},
	{"POST /v3/memories/{$}", mem0GetAll},
	{"DELETE /v1/memories/{$}", mem0DeleteAll},
	{"GET /v1/memories/{id}/{$}", mem0Get},
	{"PUT /v1/memories/{id}/{$}", mem0Update},
	{"DELETE /v1/memories/{id}/{$}", mem0Delete},
	{"GET /v1/memories/{id}/history/{$}", mem0History},
}

// mem0Error is a request the API refuses: its status, clawmem's error
// code and what to change.
type mem0Error struct {
	status int
	code   string
	msg    string
}

func (e *mem0Error) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &mem0Error{status: http.StatusBadRequest, code: schemas.CodeInvalid, msg: fmt.Sprintf(format, args...)}
}

// serveMem0 answers one mem0 route; errors are schemas.ErrorDetails, whose
// text mem0's clients put in the exception they throw.
func (a *API) serveMem0(rt mem0Route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// mem0's clients show the error text as sent: "<token>", not
		// "\u003ctoken\u003e".
		reply := func(code int, body any) { a.write(w, rt.pattern, code, encode(body, false)) }
		agent, ok := a.agent(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Token realm="clawmem"`)
			reply(http.StatusUnauthorized, schemas.ErrorDetails{Code: schemas.CodeNoIdentity,
				Error: "missing or unknown token: send Authorization: Token <token>, the agent's token (clawmem agent token AGENT)"})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
		defer cancel()
		body, err := rt.run(a, ctx, r, agent)
		var me *mem0Error
		switch {
		case err == nil:
			reply(http.StatusOK, body)
		case errors.As(err, &me):
			reply(me.status, schemas.ErrorDetails{Code: me.code, Error: me.msg})
		default:
			code, errCode := http.StatusServiceUnavailable, schemas.CodeUnavailable
			if errors.Is(err, context.DeadlineExceeded) {
				code, errCode = http.StatusGatewayTimeout, schemas.CodeTimeout
			}
			w.Header().Set("Retry-After", "1")
			a.log.Warn("http api: no answer", "route", rt.pattern, "agent", agent, "err", err)
			reply(code, schemas.ErrorDetails{Code: errCode, Error: "the query service did not answer: " + err.Error()})
		}
	}
}

// call runs op for agent and decodes its details into out; an error
// reply becomes a *mem0Error with the status the native routes give it.
func (a *API) call(ctx context.Context, op, agent string, req, out any) error {
	res, err := a.caller.Call(ctx, op, agent, req)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(res.Details)
	if err != nil {
		return fmt.Errorf("%s details: %w", op, err)
	}
	if res.IsError {
		var e schemas.ErrorDetails
		_ = json.Unmarshal(raw, &e)
		return &mem0Error{status: statusOf(res), code: e.Code, msg: e.Error}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s details: %w", op, err)
	}
	return nil
}

// mem0Params reads the URL's query parameters, each at most once; names
// lists those accepted.
func mem0Params(r *http.Request, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for name, vals := range r.URL.Query() {
		if !slices.Contains(names, name) {
			if len(names) == 0 {
				return nil, invalid("unknown query parameter %q: this route takes none", name)
			}
			return nil, invalid("unknown query parameter %q (want %s)", name, strings.Join(names, ", "))
		}
		if len(vals) != 1 {
			return nil, invalid("query parameter %q given %d times", name, len(vals))
		}
		out[name] = vals[0]
	}
	return out, nil
}

// Passthrough are fields mem0's clients send with every request that
// name mem0's hosted account or reply format; clawmem has neither, so
// they are accepted and have no effect.
type Passthrough struct {
	OutputFormat string `json:"output_format,omitempty"`
	Version      string `json:"version,omitempty"`
	OrgID        string `json:"org_id,omitempty"`
	ProjectID    string `json:"project_id,omitempty"`
}

// Mem0Message is one message of an add.
type Mem0Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name,omitempty"`
}

// Mem0AddRequest is POST /v3/memories/add/.
type Mem0AddRequest struct {
	Messages []Mem0Message `json:"messages"`
	Labels
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Infer false stores the messages verbatim; true (the default) keeps
	// what clawmem's capture rules keep of the user's messages.
	Infer *bool `json:"infer,omitempty"`
	// AsyncMode: clawmem always answers once the memories are stored.
	AsyncMode *bool `json:"async_mode,omitempty"`
	Passthrough
}

// DecodeMem0Add decodes and checks an add body: messages with a role and
// text content, labels within bounds, metadata an object.
func DecodeMem0Add(body []byte) (Mem0AddRequest, []string, error) {
	var r Mem0AddRequest
	if err := DecodeStrict(body, &r); err != nil {
		return r, nil, invalid("%v", err)
	}
	if len(r.Messages) == 0 || len(r.Messages) > mem0MaxMessages {
		return r, nil, invalid("messages: give 1 to %d messages (got %d)", mem0MaxMessages, len(r.Messages))
	}
	if err := r.Labels.check(); err != nil {
		return r, nil, err
	}
	if len(r.Metadata) > 0 && string(r.Metadata) != "null" {
		var obj map[string]any
		if json.Unmarshal(r.Metadata, &obj) != nil || obj == nil {
			return r, nil, invalid("metadata: want a JSON object")
		}
	}
	texts := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		switch m.Role {
		case "user", "assistant", "system":
		default:
			return r, nil, invalid("messages[%d].role: want user, assistant or system (got %q)", i, m.Role)
		}
		if err := json.Unmarshal(m.Content, &texts[i]); err != nil {
			return r, nil, invalid("messages[%d].content: want text (clawmem stores no images or files)", i)
		}
	}
	return r, texts, nil
}

// Mem0Event is one memory an add created, as mem0 reports it.
type Mem0Event struct {
	ID     string `json:"id"`
	Event  string `json:"event"`
	Memory string `json:"memory"`
	Data   struct {
		Memory string `json:"memory"`
	} `json:"data"`
}

func mem0Add(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	if _, err := mem0Params(r); err != nil {
		return nil, err
	}
	body, err := mem0ReadBody(r)
	if err != nil {
		return nil, err
	}
	req, texts, err := DecodeMem0Add(body)
	if err != nil {
		return nil, err
	}
	var md mem0Meta
	md.Source, md.SessionKey, md.Mem0.Labels = "mem0", req.RunID, req.Labels
	if string(req.Metadata) != "null" {
		md.Mem0.Metadata = req.Metadata
	}
	meta, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	infer := req.Infer == nil || *req.Infer
	out := []Mem0Event{}
	for i, text := range texts {
		if infer {
			// As the capture pipeline: the user's messages, without any
			// transport envelope, kept if the rules keep them.
			text = rules.StripEnvelope(text)
			if req.Messages[i].Role != "user" || !rules.ShouldCapture(text, rules.CaptureOptions{}) {
				continue
			}
		}
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		var d schemas.StoreDetails
		store := schemas.StoreRequest{Text: text, Category: string(rules.DetectCategory(text)), Metadata: meta}
		err := a.call(ctx, schemas.OpStore, agent, store, &d)
		var me *mem0Error
		if errors.As(err, &me) && me.code == schemas.CodeRejected {
			continue // noise or injection, which clawmem stores for no one; the reply lists what was stored
		}
		if err != nil {
			return nil, err
		}
		if d.Action != "created" {
			continue // a duplicate of a memory the agent has: nothing changed
		}
		ev := Mem0Event{ID: d.ID, Event: "ADD", Memory: text}
		ev.Data.Memory = text
		out = append(out, ev)
	}
	return out, nil
}

// mem0ReadBody reads a request's body, at most schemas.MaxRequestBytes.
func mem0ReadBody(r *http.Request) ([]byte, error) {
	body, err := readBody(nil, r) // no ResponseWriter: the refusal is ours to write
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &mem0Error{status: http.StatusRequestEntityTooLarge, code: schemas.CodeInvalid,
			msg: fmt.Sprintf("the body is over %d bytes", schemas.MaxRequestBytes)}
	case err != nil:
		return nil, invalid("read body: %v", err)
	}
	return body, nil
}

// Mem0Memory is a memory as mem0 returns it.
type Mem0Memory struct {
	ID         string          `json:"id"`
	Memory     string          `json:"memory"`
	UserID     *string         `json:"user_id"`
	AgentID    *string         `json:"agent_id"`
	AppID      *string         `json:"app_id"`
	RunID      *string         `json:"run_id"`
	Metadata   json.RawMessage `json:"metadata"`
	Categories []string        `json:"categories"`
	CreatedAt  string          `json:"created_at"`
	UpdatedAt  string          `json:"updated_at"`
	Score      *float64        `json:"score,omitempty"`
}

func mem0View(v schemas.MemoryView, withScore bool) Mem0Memory {
	l, md := labelsOf(v.Metadata)
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	if len(md) == 0 {
		md = json.RawMessage("null")
	}
	at := isoTime(v.Timestamp)
	m := Mem0Memory{ID: v.ID, Memory: v.Text, UserID: opt(l.UserID), AgentID: opt(l.AgentID), AppID: opt(l.AppID),
		RunID: opt(l.RunID), Metadata: md, Categories: []string{string(v.Category)}, CreatedAt: at, UpdatedAt: at}
	if withScore {
		m.Score = &v.Score
	}
	return m
}

func isoTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// Mem0SearchRequest is POST /v3/memories/search/.
type Mem0SearchRequest struct {
	Query   string          `json:"query"`
	Filters json.RawMessage `json:"filters,omitempty"`
	// The labels at the top level, as mem0's older clients send them,
	// join the filters.
	Labels
	TopK      *int     `json:"top_k,omitempty"`
	Threshold *float64 `json:"threshold,omitempty"`
	// Rerank: clawmem's recall reranks as configured.
	Rerank *bool `json:"rerank,omitempty"`
	Passthrough
}

// DecodeMem0Search decodes and checks a search body.
func DecodeMem0Search(body []byte) (Mem0SearchRequest, Filter, error) {
	var r Mem0SearchRequest
	if err := DecodeStrict(body, &r); err != nil {
		return r, Filter{}, invalid("%v", err)
	}
	if strings.TrimSpace(r.Query) == "" {
		return r, Filter{}, invalid("query: give the text to search for")
	}
	if r.TopK != nil && *r.TopK < 1 {
		return r, Filter{}, invalid("top_k: want at least 1 (got %d)", *r.TopK)
	}
	f, err := filterWith(r.Filters, r.Labels)
	return r, f, err
}

// Mem0Results is search's reply.
type Mem0Results struct {
	Results []Mem0Memory `json:"results"`
}

func mem0Search(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	if _, err := mem0Params(r); err != nil {
		return nil, err
	}
	body, err := mem0ReadBody(r)
	if err != nil {
		return nil, err
	}
	req, f, err := DecodeMem0Search(body)
	if err != nil {
		return nil, err
	}
	var d schemas.RecallDetails
	if err := a.call(ctx, schemas.OpRecall, agent, schemas.RecallRequest{Query: req.Query, Limit: schemas.MaxRecallLimit}, &d); err != nil {
		return nil, err
	}
	topK := mem0DefaultTopK
	if req.TopK != nil {
		topK = *req.TopK
	}
	out := Mem0Results{Results: []Mem0Memory{}}
	for _, v := range d.Memories {
		if len(out.Results) == topK {
			break
		}
		if l, _ := labelsOf(v.Metadata); !f.matches(l) || (req.Threshold != nil && v.Score < *req.Threshold) {
			continue
		}
		out.Results = append(out.Results, mem0View(v, true))
	}
	return out, nil
}

// Mem0GetAllRequest is POST /v3/memories/ (get all).
type Mem0GetAllRequest struct {
	Filters json.RawMessage `json:"filters,omitempty"`
	Labels
	Passthrough
}

// DecodeMem0GetAll decodes and checks a get-all body; an empty body asks
// for every memory.
func DecodeMem0GetAll(body []byte) (Filter, error) {
	var r Mem0GetAllRequest
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := DecodeStrict(body, &r); err != nil {
			return Filter{}, invalid("%v", err)
		}
	}
	return filterWith(r.Filters, r.Labels)
}

// Mem0Page is get-all's reply: one page of the matches, numbered from 1.
type Mem0Page struct {
	Count    int          `json:"count"`
	Next     *string      `json:"next"`
	Previous *string      `json:"previous"`
	Results  []Mem0Memory `json:"results"`
}

// matching reads every page of the agent's memories that hold and keeps
// those f matches, newest first.
func (a *API) matching(ctx context.Context, agent string, f Filter) ([]schemas.MemoryView, error) {
	var out []schemas.MemoryView
	cursor := ""
	for {
		var d schemas.ListDetails
		req := schemas.ListRequest{Limit: mem0MaxPage, Cursor: cursor, Session: f.RunID}
		if f.RunID == "*" {
			req.Session = ""
		}
		if err := a.call(ctx, schemas.OpList, agent, req, &d); err != nil {
			return nil, err
		}
		for _, v := range d.Memories {
			if l, _ := labelsOf(v.Metadata); f.matches(l) {
				out = append(out, v)
			}
		}
		if d.NextCursor == "" {
			return out, nil
		}
		cursor = d.NextCursor
	}
}

func mem0GetAll(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	params, err := mem0Params(r, "page", "page_size")
	if err != nil {
		return nil, err
	}
	page, size := 1, mem0DefaultPage
	for name, p := range map[string]*int{"page": &page, "page_size": &size} {
		s, ok := params[name]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || (name == "page_size" && n > mem0MaxPage) {
			return nil, invalid("%s: want a whole number, at least 1 (page_size at most %d); got %q", name, mem0MaxPage, s)
		}
		*p = n
	}
	body, err := mem0ReadBody(r)
	if err != nil {
		return nil, err
	}
	f, err := DecodeMem0GetAll(body)
	if err != nil {
		return nil, err
	}
	all, err := a.matching(ctx, agent, f)
	if err != nil {
		return nil, err
	}
	out := Mem0Page{Count: len(all), Results: []Mem0Memory{}}
	from := min((page-1)*size, len(all))
	to := min(from+size, len(all))
	for _, v := range all[from:to] {
		out.Results = append(out.Results, mem0View(v, false))
	}
	link := func(p int) *string {
		s := fmt.Sprintf("/v3/memories/?page=%d&page_size=%d", p, size)
		return &s
	}
	if to < len(all) {
		out.Next = link(page + 1)
	}
	if page > 1 {
		out.Previous = link(page - 1)
	}
	return out, nil
}

// mem0Message is the reply of a delete.
type mem0Message struct {
	Message string `json:"message"`
	Deleted int    `json:"deleted,omitempty"`
}

func mem0DeleteAll(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	params, err := mem0Params(r, "user_id", "agent_id", "app_id", "run_id", "org_id", "project_id")
	if err != nil {
		return nil, err
	}
	f := Filter{UserID: params["user_id"], AgentID: params["agent_id"], AppID: params["app_id"], RunID: params["run_id"]}
	if err := Labels(f).check(); err != nil {
		return nil, err
	}
	if f.empty() {
		return nil, invalid("give at least one of user_id, agent_id, app_id or run_id: clawmem does not delete all of an agent's memories in one request")
	}
	ms, err := a.matching(ctx, agent, f)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, v := range ms {
		var d schemas.ForgetDetails
		err := a.call(ctx, schemas.OpForget, agent, schemas.ForgetRequest{MemoryID: v.ID}, &d)
		var me *mem0Error
		if errors.As(err, &me) && me.status == http.StatusNotFound {
			continue // forgotten meanwhile
		}
		if err != nil {
			return nil, err
		}
		n++
	}
	return mem0Message{Message: "Memories deleted successfully!", Deleted: n}, nil
}

func mem0Show(a *API, ctx context.Context, r *http.Request, agent string) (schemas.ShowDetails, error) {
	var d schemas.ShowDetails
	if _, err := mem0Params(r); err != nil {
		return d, err
	}
	err := a.call(ctx, schemas.OpShow, agent, schemas.ShowRequest{MemoryID: r.PathValue("id")}, &d)
	return d, err
}

func mem0Get(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	d, err := mem0Show(a, ctx, r, agent)
	if err != nil {
		return nil, err
	}
	return mem0View(d.Memory, false), nil
}

// Mem0UpdateRequest is PUT /v1/memories/{id}/: the new text. mem0's
// metadata, timestamp and expiration_date are refused as unknown fields:
// clawmem's memory_update changes neither.
type Mem0UpdateRequest struct {
	Text string `json:"text"`
}

// DecodeMem0Update decodes and checks an update body.
func DecodeMem0Update(body []byte) (Mem0UpdateRequest, error) {
	var r Mem0UpdateRequest
	if err := DecodeStrict(body, &r); err != nil {
		return r, invalid("%v (clawmem updates a memory's text only)", err)
	}
	if strings.TrimSpace(r.Text) == "" {
		return r, invalid("text: give the memory's new text")
	}
	return r, nil
}

func mem0Update(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	if _, err := mem0Params(r); err != nil {
		return nil, err
	}
	body, err := mem0ReadBody(r)
	if err != nil {
		return nil, err
	}
	req, err := DecodeMem0Update(body)
	if err != nil {
		return nil, err
	}
	var d schemas.UpdateDetails
	if err := a.call(ctx, schemas.OpUpdate, agent, schemas.UpdateRequest{MemoryID: r.PathValue("id"), Text: &req.Text}, &d); err != nil {
		return nil, err
	}
	if d.Memory == nil {
		return nil, &mem0Error{status: http.StatusConflict, code: schemas.CodeAmbiguous, msg: "the id matches more than one memory: give it in full"}
	}
	return mem0View(*d.Memory, false), nil
}

func mem0Delete(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	if _, err := mem0Params(r); err != nil {
		return nil, err
	}
	var d schemas.ForgetDetails
	if err := a.call(ctx, schemas.OpForget, agent, schemas.ForgetRequest{MemoryID: r.PathValue("id")}, &d); err != nil {
		return nil, err
	}
	return mem0Message{Message: "Memory deleted successfully!"}, nil
}

// Mem0History is one entry of a memory's history.
type Mem0History struct {
	ID         string   `json:"id"`
	MemoryID   string   `json:"memory_id"`
	OldMemory  *string  `json:"old_memory"`
	NewMemory  *string  `json:"new_memory"`
	Event      string   `json:"event"`
	Categories []string `json:"categories"`
	UserID     *string  `json:"user_id"`
	CreatedAt  string   `json:"created_at"`
	UpdatedAt  string   `json:"updated_at"`
}

// mem0History is the memory's supersede chain, oldest first: its first
// version ADD, each that replaced the one before it UPDATE. memory_update
// (PUT) keeps the id and the text it replaced as an older version, so an
// edit is an UPDATE too.
func mem0History(a *API, ctx context.Context, r *http.Request, agent string) (any, error) {
	d, err := mem0Show(a, ctx, r, agent)
	if err != nil {
		return nil, err
	}
	chain := slices.Clone(d.Replaced)
	slices.Reverse(chain)
	chain = append(append(chain, d.Memory), d.ReplacedBy...)
	out := make([]Mem0History, len(chain))
	for i, v := range chain {
		text := v.Text
		l, _ := labelsOf(v.Metadata)
		h := Mem0History{ID: v.ID, MemoryID: d.Memory.ID, NewMemory: &text, Event: "ADD",
			Categories: []string{string(v.Category)}, CreatedAt: isoTime(v.Timestamp), UpdatedAt: isoTime(v.Timestamp)}
		if l.UserID != "" {
			h.UserID = &l.UserID
		}
		if i > 0 {
			old := chain[i-1].Text
			h.OldMemory, h.Event = &old, "UPDATE"
		}
		out[i] = h
	}
	return out, nil
}

// Mem0Ping is GET /v1/ping/'s reply: mem0's clients need status "ok"
// before they send anything else. No org or project: clawmem has none.
type Mem0Ping struct {
	Status string `json:"status"`
	Agent  string `json:"agent"`
}

func mem0Ping(_ *API, _ context.Context, r *http.Request, agent string) (any, error) {
	if _, err := mem0Params(r); err != nil {
		return nil, err
	}
	return Mem0Ping{Status: "ok", Agent: agent}, nil
}
