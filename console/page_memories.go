package console

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/clawmem/clawmem/internal/textutil"
	"github.com/clawmem/clawmem/schemas"
)

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
	var d schemas.ListDetails
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
func (s *Server) show(w http.ResponseWriter, r *http.Request) (string, schemas.ShowDetails, bool) {
	p := paramsOf(r)
	agent := p.agent()
	id := r.PathValue("id")
	if p.err == nil && !validID(id) {
		p.err = badRequest("%q is not a memory id (8 to 36 characters of hex and dashes)", shortText(id))
	}
	var d schemas.ShowDetails
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

// shortText is s for an error message: one line, at most 80 characters,
// never a character cut in half.
func shortText(s string) string {
	return textutil.OneLine(s, 80)
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
