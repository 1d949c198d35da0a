package console

import (
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
	"unicode/utf8"

	"github.com/clawmem/clawmem/client"
)

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
