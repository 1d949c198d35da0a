package console

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/schemas"
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
		case schemas.CodeInvalid, schemas.CodeNoIdentity, schemas.CodeAmbiguous, schemas.CodeRejected:
			return &httpError{http.StatusBadRequest, msg}
		case schemas.CodeNotFound:
			return &httpError{http.StatusNotFound, msg}
		case schemas.CodeDenied:
			return &httpError{http.StatusForbidden, msg}
		case schemas.CodeTimeout, schemas.CodeUnavailable, schemas.CodeStale:
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
	var d schemas.ListDetails
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
