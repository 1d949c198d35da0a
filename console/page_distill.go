package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clawmem/clawmem/workers/lessons"
)

type distillView struct {
	Agent, Session string
	Jobs           []lessons.Distillation
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
