package console

import (
	"cmp"
	"net/http"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/schemas"
)

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
		var c schemas.ContextDetails
		if err := s.call(r.Context(), schemas.OpContext, v.Agent, schemas.ContextRequest{Prompt: v.Query}, &c); err != nil {
			v.ContextNote = "auto-recall failed: " + err.Error()
		} else {
			v.Context, v.ContextNote = c.PrependContext, c.Skipped
		}
	}
	s.render(w, r, http.StatusOK, "search", v)
}

// ---- dead letters ----
