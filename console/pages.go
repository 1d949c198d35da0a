package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
	"github.com/clawmem/clawmem/workers"
	"github.com/clawmem/clawmem/workers/query"
)

// requestTimeout bounds one page's calls.
const requestTimeout = 15 * time.Second

// Bounds of the pages' inputs.
const (
	defaultLimit = 50
	maxLimit     = 200
	maxInput     = 1024  // a filter or query string, in bytes
	maxText      = 64000 // an edited memory's text
	chartDays    = 30
)

// httpError is a failure with the status and message a page shows.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// call runs one client operation; an error reply becomes an httpError with
// the status its code means, and a client that gets no answer 503.
func (s *Server) call(ctx context.Context, op, agent string, req, out any) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	res, err := s.o.Client.Call(ctx, op, agent, req)
	if err != nil {
		if errors.Is(err, client.ErrDown) {
			return &httpError{http.StatusServiceUnavailable, "clawmem is not answering: " + err.Error()}
		}
		return &httpError{http.StatusServiceUnavailable, "The request got no answer: " + err.Error()}
	}
	raw, _ := json.Marshal(res.Details)
	if res.IsError {
		var d schemas.ErrorDetails
		_ = json.Unmarshal(raw, &d)
		msg := cmp.Or(d.Error, firstText(res))
		switch d.Code {
		case query.CodeInvalid, query.CodeNoIdentity, query.CodeAmbiguous, query.CodeRejected:
			return &httpError{http.StatusBadRequest, msg}
		case query.CodeNotFound:
			return &httpError{http.StatusNotFound, msg}
		case query.CodeDenied:
			return &httpError{http.StatusForbidden, msg}
		case query.CodeTimeout, query.CodeUnavailable, query.CodeStale:
			return &httpError{http.StatusServiceUnavailable, msg}
		}
		s.o.Log.Error("console: operation failed", "op", op, "err", msg)
		return &httpError{http.StatusInternalServerError, "The operation failed on the server; it is in the log."}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("unexpected %s reply: %w", op, err)
		}
	}
	return nil
}

func firstText(res schemas.ToolResult) string {
	if len(res.Content) > 0 {
		return res.Content[0].Text
	}
	return "error"
}

// failWith shows err: an httpError with its status, anything else as 500.
func (s *Server) failWith(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(err, &he) {
		s.fail(w, r, he.status, he.msg)
		return
	}
	s.o.Log.Error("console: page failed", "path", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, "Something went wrong on the server; it is in the log.")
}

// fail renders the error page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", errorView{Status: status, Title: http.StatusText(status), Message: msg})
}

type errorView struct {
	Status         int
	Title, Message string
}

// params reads a page's query string: each value at most maxInput bytes
// of valid UTF-8.
type params struct {
	q   url.Values
	err error
}

func paramsOf(r *http.Request) *params { return &params{q: r.URL.Query()} }

func (p *params) str(name string) string {
	v := strings.TrimSpace(p.q.Get(name))
	if p.err == nil && (len(v) > maxInput || !utf8.ValidString(v) || strings.ContainsRune(v, 0)) {
		p.err = badRequest("%s: at most %d bytes of text, without NUL", name, maxInput)
	}
	return v
}

// agent is an agent id, or "" for every agent (as an admin).
func (p *params) agent() string {
	a := p.str("agent")
	if a != "" && p.err == nil {
		if err := schemas.ValidateAgentID(a); err != nil {
			p.err = badRequest("agent %q: %v", a, err)
		}
	}
	return a
}

func (p *params) category() string {
	c := p.str("category")
	if c != "" && p.err == nil && !schemas.Category(c).Valid() {
		p.err = badRequest("category %q is not one of %s", c, strings.Join(categoryNames(), ", "))
	}
	return c
}

// day reads a YYYY-MM-DD date as the epoch ms of its start (UTC), or of
// the next day's start when end.
func (p *params) day(name string, end bool) int64 {
	v := p.str(name)
	if v == "" || p.err != nil {
		return 0
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		p.err = badRequest("%s %q is not a date (YYYY-MM-DD)", name, v)
		return 0
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t.UnixMilli()
}

func (p *params) limit() int {
	v := p.str("limit")
	if v == "" || p.err != nil {
		return defaultLimit
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		p.err = badRequest("limit %q: a number from 1 to %d", v, maxLimit)
		return defaultLimit
	}
	return n
}

func categoryNames() []string {
	var out []string
	for _, c := range schemas.Categories {
		out = append(out, string(c))
	}
	return out
}

// knownAgent checks that agent has memories of its own (holding or in
// history): a page for an agent clawmem never heard of is more likely a
// typing mistake than a question worth an empty answer.
func (s *Server) knownAgent(ctx context.Context, agent string) error {
	if agent == "" {
		return nil
	}
	var d query.ListDetails
	if err := s.call(ctx, schemas.OpList, agent, schemas.ListRequest{Scope: "agent:" + agent, Limit: 1, IncludeSuperseded: true}, &d); err != nil {
		return err
	}
	if d.Count > 0 {
		return nil
	}
	return &httpError{http.StatusNotFound, fmt.Sprintf("No agent %q: it has no memories of its own. (Agents appear once they store one; leave the agent empty to see every scope.)", agent)}
}

// knownScope checks a scope filter: one of the built-in kinds, or a scope
// that holds memories (a defined custom scope, or one an import brought).
// Anything else is more likely a typing mistake than an empty answer.
func (s *Server) knownScope(ctx context.Context, scope string) error {
	if typ, _ := scopes.Parse(scope); scope == "" || typ != "" {
		return nil
	}
	var st struct {
		ByScope map[string]int `json:"byScope"`
	}
	if err := s.call(ctx, schemas.OpStats, "", schemas.StatsRequest{}, &st); err != nil {
		return err
	}
	if st.ByScope[scope] > 0 {
		return nil
	}
	return badRequest("unknown scope %q: use global, agent:<id>, custom:<name>, project:<id>, user:<id> or a scope that holds memories", scope)
}

// ---- overview ----

type overviewView struct {
	Live   liveView
	Agents []count
	Scopes []count
	Cats   []count
	Chart  chart
}

type count struct {
	Name string
	N    int
}

type liveView struct {
	At        string
	Total     int
	History   int
	Status    *client.Status
	StatusErr string
	Waiting   uint64
	Handling  int
	Jobs      []workers.DistillJob
	Checks    []StartupCheck
	ChecksAt  string
	HasChecks bool
	Index     *engine.IndexState
	Err       string
}

// adminStats is the part of an admin stats reply the overview shows.
type adminStats struct {
	engine.Stats
	ByDay map[string]int     `json:"byDay"`
	Index *engine.IndexState `json:"index"`
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	var st adminStats
	if err := s.call(r.Context(), schemas.OpStats, "", schemas.StatsRequest{Days: chartDays}, &st); err != nil {
		s.failWith(w, r, err)
		return
	}
	v := overviewView{Live: s.liveState(r.Context(), &st), Chart: dayChart(st.ByDay, s.o.Now(), chartDays)}
	for scope, n := range st.ByScope {
		if a, ok := strings.CutPrefix(scope, "agent:"); ok {
			v.Agents = append(v.Agents, count{a, n})
		}
	}
	v.Agents, v.Scopes, v.Cats = sortCounts(v.Agents), countsOf(st.ByScope), countsOf(st.ByCategory)
	s.render(w, r, http.StatusOK, "overview", v)
}

func countsOf(m map[string]int) []count {
	var out []count
	for k, n := range m {
		out = append(out, count{k, n})
	}
	return sortCounts(out)
}

func sortCounts(cs []count) []count {
	slices.SortFunc(cs, func(a, b count) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Name, b.Name)) })
	return cs
}

// liveState is the part of the overview that refreshes itself: counts,
// the pipeline's lag, the dead letters, distillation, start-up checks and
// the index. st, when given, is stats already read.
func (s *Server) liveState(ctx context.Context, st *adminStats) liveView {
	v := liveView{At: s.o.Now().UTC().Format("15:04:05 UTC")}
	if st == nil {
		st = &adminStats{}
		if err := s.call(ctx, schemas.OpStats, "", schemas.StatsRequest{}, st); err != nil {
			v.Err = err.Error()
		}
	}
	v.Total, v.History, v.Index = st.Total, st.History, st.Index
	pctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if status, err := s.o.Pipeline.Status(pctx); err != nil {
		v.StatusErr = err.Error()
	} else {
		v.Status = &status
	}
	v.Waiting, v.Handling, _ = s.o.Pipeline.DistillQueue(pctx)
	if jobs, err := s.o.Pipeline.DistillJobs(pctx, "", ""); err == nil {
		v.Jobs = jobs[:min(len(jobs), 5)]
	}
	if s.o.StartupChecks != nil {
		var at time.Time
		v.Checks, at, v.HasChecks = s.o.StartupChecks()
		v.ChecksAt = "Ran " + at.UTC().Format("2006-01-02 15:04 UTC")
	}
	return v
}

// live streams the overview's live part every few seconds (server-sent
// events) until the browser goes.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.fail(w, r, http.StatusInternalServerError, "Streaming is not supported here.")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	t := time.NewTicker(liveEvery)
	defer t.Stop()
	for {
		var b strings.Builder
		if err := s.pages["overview"].ExecuteTemplate(&b, "live", s.liveState(r.Context(), nil)); err != nil {
			s.o.Log.Error("console: live render", "err", err)
			return
		}
		for line := range strings.SplitSeq(b.String(), "\n") {
			fmt.Fprintf(w, "data: %s\n", line)
		}
		fmt.Fprint(w, "\n")
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
}

// liveEvery is how often the overview refreshes itself.
var liveEvery = 5 * time.Second

// chart is a bar chart of memories added per day, drawn as SVG.
type chart struct {
	Bars      []bar
	Max       int
	Width     int
	Height    int
	FirstDay  string
	LastDay   string
	TotalDays int
	Total     int
}

type bar struct {
	X, Y, W, H int
	Day        string
	N          int
}

func dayChart(byDay map[string]int, now time.Time, days int) chart {
	c := chart{Width: 8 * days, Height: 80, TotalDays: days}
	today := now.UTC().Truncate(24 * time.Hour)
	for _, n := range byDay {
		c.Max = max(c.Max, n)
		c.Total += n
	}
	for i := range days {
		day := today.AddDate(0, 0, i-days+1).Format(time.DateOnly)
		n := byDay[day]
		h := 0
		if c.Max > 0 {
			h = (n*(c.Height-2) + c.Max - 1) / c.Max
		}
		c.Bars = append(c.Bars, bar{X: 8 * i, Y: c.Height - h, W: 6, H: h, Day: day, N: n})
	}
	c.FirstDay, c.LastDay = c.Bars[0].Day, c.Bars[len(c.Bars)-1].Day
	return c
}

// ---- memories ----

type memoriesView struct {
	Agent, Scope, Category, Since, Until, Text, Session string
	Limit                                               int
	Categories                                          []string
	Memories                                            []schemas.MemoryView
	Next                                                string // the next page's URL
	First                                               string // the first page's URL, when not on it
	History                                             bool
}

func (s *Server) memories(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	v := memoriesView{Agent: p.agent(), Scope: p.str("scope"), Category: p.category(), Since: p.str("since"), Until: p.str("until"),
		Text: p.str("text"), Session: p.str("session"), Limit: p.limit(), Categories: categoryNames(), History: p.q.Get("history") == "1"}
	req := schemas.ListRequest{Scope: v.Scope, Category: v.Category, Limit: v.Limit, Text: v.Text, Session: v.Session,
		Since: p.day("since", false), Until: p.day("until", true), Cursor: p.str("cursor"), IncludeSuperseded: v.History}
	if p.err == nil && req.Until != 0 && req.Until <= req.Since {
		p.err = badRequest("until (%s) is before since (%s)", v.Until, v.Since)
	}
	if p.err != nil {
		s.failWith(w, r, p.err)
		return
	}
	if err := cmp.Or(s.knownAgent(r.Context(), v.Agent), s.knownScope(r.Context(), v.Scope)); err != nil {
		s.failWith(w, r, err)
		return
	}
	var d query.ListDetails
	if err := s.call(r.Context(), schemas.OpList, v.Agent, req, &d); err != nil {
		s.failWith(w, r, err)
		return
	}
	v.Memories = d.Memories
	q := r.URL.Query()
	if d.NextCursor != "" {
		q.Set("cursor", d.NextCursor)
		v.Next = "/memories?" + q.Encode()
	}
	if req.Cursor != "" {
		q.Del("cursor")
		v.First = "/memories?" + q.Encode()
	}
	s.render(w, r, http.StatusOK, "memories", v)
}

type memoryView struct {
	Agent      string
	Memory     schemas.MemoryView
	Metadata   []kv
	Replaced   []schemas.MemoryView
	ReplacedBy []schemas.MemoryView
	Categories []string
	Saved      bool
}

type kv struct{ K, V string }

func (s *Server) memory(w http.ResponseWriter, r *http.Request) {
	agent, d, ok := s.show(w, r)
	if !ok {
		return
	}
	v := memoryView{Agent: agent, Memory: d.Memory, Replaced: d.Replaced, ReplacedBy: d.ReplacedBy, Categories: categoryNames(),
		Metadata: metadataOf(d.Memory.Metadata), Saved: r.URL.Query().Get("saved") == "1"}
	s.render(w, r, http.StatusOK, "memory", v)
}

// show reads the memory the path names, as the agent the query names;
// false: it failed and the page says why.
func (s *Server) show(w http.ResponseWriter, r *http.Request) (string, query.ShowDetails, bool) {
	p := paramsOf(r)
	agent := p.agent()
	id := r.PathValue("id")
	if p.err == nil && !validID(id) {
		p.err = badRequest("%q is not a memory id (8 to 36 characters of hex and dashes)", shortText(id))
	}
	var d query.ShowDetails
	err := p.err
	if err == nil {
		err = s.call(r.Context(), schemas.OpShow, agent, schemas.ShowRequest{MemoryID: id}, &d)
	}
	if err != nil {
		s.failWith(w, r, err)
		return "", d, false
	}
	return agent, d, true
}

// formTarget is the memory id of a change's path and the agent of its
// form, both checked; false: the page says what is wrong.
func (s *Server) formTarget(w http.ResponseWriter, r *http.Request) (id, agent string, ok bool) {
	id = r.PathValue("id")
	if agent, ok = s.formAgent(w, r); ok && !validID(id) {
		s.fail(w, r, http.StatusBadRequest, "Not a memory id.")
		ok = false
	}
	return id, agent, ok
}

// formAgent is a form's agent ("" for admin), checked; false: it is not
// an agent id and the page says so.
func (s *Server) formAgent(w http.ResponseWriter, r *http.Request) (string, bool) {
	agent := strings.TrimSpace(r.PostForm.Get("agent"))
	if agent != "" {
		if err := schemas.ValidateAgentID(agent); err != nil {
			s.fail(w, r, http.StatusBadRequest, "agent: "+err.Error())
			return "", false
		}
	}
	return agent, true
}

// validID: a full id or a prefix of one, as the tools take them.
func validID(id string) bool {
	if len(id) < 8 || len(id) > 36 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '-') {
			return false
		}
	}
	return true
}

func shortText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// metadataOf lists a memory's metadata, values as compact JSON.
func metadataOf(raw json.RawMessage) []kv {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		if len(raw) > 0 && string(raw) != "null" {
			return []kv{{"(metadata)", string(raw)}}
		}
		return nil
	}
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := string(m[k])
		var s string
		if json.Unmarshal(m[k], &s) == nil {
			v = s
		}
		out = append(out, kv{k, v})
	}
	return out
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	id, agent, ok := s.formTarget(w, r)
	if !ok {
		return
	}
	req := schemas.UpdateRequest{MemoryID: id, Scope: strings.TrimSpace(f.Get("scope"))}
	text := strings.TrimSpace(strings.ReplaceAll(f.Get("text"), "\r\n", "\n"))
	switch {
	case text == "":
		s.fail(w, r, http.StatusBadRequest, "The text must not be empty.")
		return
	case len(text) > maxText || !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The text must be valid UTF-8 of at most %d bytes, without NUL.", maxText))
		return
	}
	req.Text = &text
	if c := f.Get("category"); c != "" {
		if !schemas.Category(c).Valid() {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("category %q is not one of %s", c, strings.Join(categoryNames(), ", ")))
			return
		}
		req.Category = &c
	}
	if imp := f.Get("importance"); imp != "" {
		x, err := strconv.ParseFloat(imp, 64)
		if err != nil || x < 0 || x > 1 {
			s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("importance %q: a number from 0 to 1", shortText(imp)))
			return
		}
		req.Importance = &x
	}
	var d struct {
		ID string `json:"id"`
	}
	if err := s.call(r.Context(), schemas.OpUpdate, agent, req, &d); err != nil {
		s.failWith(w, r, err)
		return
	}
	q := url.Values{"saved": {"1"}}
	if agent != "" {
		q.Set("agent", agent)
	}
	http.Redirect(w, r, "/memories/"+url.PathEscape(cmp.Or(d.ID, id))+"?"+q.Encode(), http.StatusSeeOther)
}

func (s *Server) deleteConfirm(w http.ResponseWriter, r *http.Request) {
	if agent, d, ok := s.show(w, r); ok {
		s.render(w, r, http.StatusOK, "delete", memoryView{Agent: agent, Memory: d.Memory})
	}
}

func (s *Server) deletePost(w http.ResponseWriter, r *http.Request) {
	id, agent, ok := s.formTarget(w, r)
	if !ok {
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		s.fail(w, r, http.StatusBadRequest, "Deleting needs the confirmation box ticked.")
		return
	}
	if err := s.call(r.Context(), schemas.OpForget, agent, schemas.ForgetRequest{MemoryID: id}, nil); err != nil {
		s.failWith(w, r, err)
		return
	}
	q := url.Values{"deleted": {id}}
	if agent != "" {
		q.Set("agent", agent)
	}
	http.Redirect(w, r, "/memories?"+q.Encode(), http.StatusSeeOther)
}

// ---- search ----

type searchView struct {
	Agent, Query, Scope string
	Limit               int
	History             bool
	Ran                 bool
	Mode, Rerank        string
	Results             []result
	Context             string
	ContextNote         string
}

type result struct {
	Memory schemas.MemoryView
	Stages []stage
}

type stage struct {
	Name  string
	Score float64
	Off   bool // the candidate was not in this list (vector or BM25)
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	v := searchView{Agent: p.agent(), Query: p.str("q"), Scope: p.str("scope"), Limit: p.limit(), History: p.q.Get("history") == "1"}
	if p.err == nil && v.Limit > 50 {
		p.err = badRequest("limit %d: a search returns at most 50", v.Limit)
	}
	if p.err != nil {
		s.failWith(w, r, p.err)
		return
	}
	if p.q.Get("limit") == "" {
		v.Limit = 10
	}
	if v.Query == "" {
		s.render(w, r, http.StatusOK, "search", v)
		return
	}
	if err := cmp.Or(s.knownAgent(r.Context(), v.Agent), s.knownScope(r.Context(), v.Scope)); err != nil {
		s.failWith(w, r, err)
		return
	}
	var d client.RecallReply
	if err := s.call(r.Context(), schemas.OpRecall, v.Agent, schemas.RecallRequest{Query: v.Query, Scope: v.Scope, Limit: v.Limit, IncludeSuperseded: v.History}, &d); err != nil {
		s.failWith(w, r, err)
		return
	}
	v.Ran, v.Mode, v.Rerank = true, d.Mode, d.Rerank
	for _, m := range d.Memories {
		res := result{Memory: m.MemoryView}
		if src := m.Sources; src != nil {
			res.Stages = []stage{
				{"vector", src.Vector, !src.VectorHit}, {"BM25", src.BM25, !src.BM25Hit}, {"fusion", src.Fused, false},
				{"rerank (" + src.Rerank + ")", src.Reranked, false}, {"recency", src.AfterRecency, false},
				{"importance", src.AfterImportance, false}, {"length", src.AfterLengthNorm, false},
				{"time decay", src.AfterTimeDecay, false}, {"final", src.Final, false}, {"cosine", src.Cosine, false},
			}
		}
		v.Results = append(v.Results, res)
	}
	// The auto-recall block is only an agent's: it is what the agent's
	// before_agent_start hook would prepend.
	if v.Agent != "" {
		var c query.ContextDetails
		if err := s.call(r.Context(), schemas.OpContext, v.Agent, schemas.ContextRequest{Prompt: v.Query}, &c); err != nil {
			v.ContextNote = "auto-recall failed: " + err.Error()
		} else {
			v.Context, v.ContextNote = c.PrependContext, c.Skipped
		}
	}
	s.render(w, r, http.StatusOK, "search", v)
}

// ---- dead letters ----

type dlqView struct {
	Stage   string
	Letters []client.DeadLetter
	Done    string
}

func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	stage := p.str("stage")
	if p.err == nil {
		if err := client.CheckStage(stage); err != nil {
			p.err = badRequest("%v", err)
		}
	}
	if p.err != nil {
		s.failWith(w, r, p.err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	letters, err := s.o.Pipeline.DeadLetters(ctx, stage)
	if err != nil {
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "The dead letters could not be read: " + err.Error()})
		return
	}
	slices.Reverse(letters) // newest first
	s.render(w, r, http.StatusOK, "dlq", dlqView{Stage: stage, Letters: letters, Done: p.q.Get("done")})
}

type letterView struct {
	Letter  client.DeadLetterMessage
	Headers []kv
	Body    string
}

func (s *Server) deadLetter(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 64)
	if err != nil || seq == 0 {
		s.fail(w, r, http.StatusBadRequest, "Not a dead letter's sequence number.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	m, err := s.o.Pipeline.DeadLetter(ctx, seq)
	switch {
	case errors.Is(err, client.ErrNoDeadLetter):
		s.fail(w, r, http.StatusNotFound, fmt.Sprintf("The DLQ holds no dead letter %d.", seq))
		return
	case err != nil:
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "The dead letter could not be read: " + err.Error()})
		return
	}
	v := letterView{Letter: m, Body: string(m.Body)}
	var pretty json.RawMessage
	if json.Unmarshal(m.Body, &pretty) == nil {
		if b, err := json.MarshalIndent(pretty, "", "  "); err == nil {
			v.Body = string(b)
		}
	}
	if !utf8.ValidString(v.Body) {
		v.Body = strings.ToValidUTF8(v.Body, "\uFFFD")
	}
	for _, k := range slices.Sorted(maps.Keys(m.Headers)) {
		v.Headers = append(v.Headers, kv{k, strings.Join(m.Headers[k], ", ")})
	}
	s.render(w, r, http.StatusOK, "letter", v)
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	stage := r.PostForm.Get("stage")
	if err := client.CheckStage(stage); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	var seq uint64
	if v := r.PostForm.Get("seq"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			s.fail(w, r, http.StatusBadRequest, "Not a dead letter's sequence number.")
			return
		}
		seq = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*requestTimeout)
	defer cancel()
	res, err := s.o.Pipeline.Replay(ctx, stage, seq)
	if errors.Is(err, client.ErrNoDeadLetter) {
		s.fail(w, r, http.StatusNotFound, err.Error())
		return
	}
	if err != nil {
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "Replay failed: " + err.Error()})
		return
	}
	failed := 0
	for _, x := range res {
		if x.Error != "" {
			failed++
		}
	}
	done := fmt.Sprintf("Replayed %d dead letter(s)", len(res)-failed)
	if failed > 0 {
		done += fmt.Sprintf("; %d failed and stay in the DLQ", failed)
	}
	http.Redirect(w, r, "/dlq?"+url.Values{"done": {done}, "stage": {stage}}.Encode(), http.StatusSeeOther)
}

func (s *Server) purge(w http.ResponseWriter, r *http.Request) {
	stage := r.PostForm.Get("stage")
	if err := client.CheckStage(stage); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		s.fail(w, r, http.StatusBadRequest, "Purging needs the confirmation box ticked.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	n, err := s.o.Pipeline.PurgeDeadLetters(ctx, stage)
	if err != nil {
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "Purge failed: " + err.Error()})
		return
	}
	http.Redirect(w, r, "/dlq?"+url.Values{"done": {fmt.Sprintf("Purged %d dead letter(s)", n)}}.Encode(), http.StatusSeeOther)
}

// ---- distillation ----

type distillView struct {
	Agent, Session string
	Jobs           []workers.DistillJob
	Waiting        uint64
	Handling       int
	CanRun         bool
	Done           string
}

func (s *Server) distillPage(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	v := distillView{Agent: p.agent(), Session: p.str("session"), CanRun: s.o.Distill != nil, Done: p.str("done")}
	if p.err != nil {
		s.failWith(w, r, p.err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	jobs, err := s.o.Pipeline.DistillJobs(ctx, v.Agent, v.Session)
	if err != nil {
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "The distillation jobs could not be read: " + err.Error()})
		return
	}
	v.Jobs = jobs[:min(len(jobs), 200)]
	v.Waiting, v.Handling, _ = s.o.Pipeline.DistillQueue(ctx)
	s.render(w, r, http.StatusOK, "distill", v)
}

func (s *Server) distillRun(w http.ResponseWriter, r *http.Request) {
	if s.o.Distill == nil {
		s.fail(w, r, http.StatusNotImplemented, "Re-running a distillation is not available in this console (run it with clawmem up, or use clawmem distill run).")
		return
	}
	session := strings.TrimSpace(r.PostForm.Get("session"))
	agent, ok := s.formAgent(w, r)
	if !ok {
		return
	}
	if session == "" || len(session) > maxInput || !utf8.ValidString(session) || strings.ContainsAny(session, "\x00\n") {
		s.fail(w, r, http.StatusBadRequest, "Name the session to distil.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Minute)
	defer cancel()
	rep, err := s.o.Distill(ctx, agent, session)
	if err != nil {
		s.failWith(w, r, &httpError{http.StatusServiceUnavailable, "Distillation failed: " + err.Error()})
		return
	}
	done := fmt.Sprintf("%d range(s) distilled, %d lesson(s) handed to the store", rep.Distilled, rep.Lessons)
	if len(rep.Errors) > 0 {
		done += "; errors: " + strings.Join(rep.Errors, "; ")
	}
	if rep.Sessions == 0 {
		done = "Nothing to distil in session " + session + ": no transcript messages not yet distilled."
	}
	http.Redirect(w, r, "/distill?"+url.Values{"done": {done}, "session": {session}}.Encode(), http.StatusSeeOther)
}

// ---- configuration ----

type configView struct {
	Available bool
	Report    config.CheckReport
	Effective string
	Err       string
}

func (s *Server) configPage(w http.ResponseWriter, r *http.Request) {
	v := configView{Available: s.o.ConfigFile != nil}
	if v.Available {
		v.Report = config.Check(*s.o.ConfigFile)
		if f, err := config.Read(*s.o.ConfigFile); err != nil {
			v.Err = err.Error()
		} else if eff, err := f.Effective(false); err != nil {
			v.Err = err.Error()
		} else {
			b, _ := json.MarshalIndent(eff, "", "  ")
			v.Effective = string(b)
		}
	}
	s.render(w, r, http.StatusOK, "config", v)
}
