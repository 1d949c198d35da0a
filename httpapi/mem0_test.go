package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/httpapi"
	"github.com/clawmem/clawmem/schemas"
)

// m0 sends a request as mem0's clients do (Authorization: Token) and
// decodes the reply into out when it is not nil.
func (r *rig) m0(t *testing.T, method, path, token, body string, out any) (int, []byte) {
	t.Helper()
	auth := ""
	if token != "" {
		auth = "Token " + token
	}
	// mem0's clients declare JSON on every request, a body or not.
	code, raw := r.send(t, method, path, auth, body, "Content-Type", "application/json")
	if out != nil && code == http.StatusOK {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
	return code, raw
}

// m0ok sends a request that must succeed.
func (r *rig) m0ok(t *testing.T, method, path, token, body string, out any) {
	t.Helper()
	if code, raw := r.m0(t, method, path, token, body, out); code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
}

func TestMem0EveryRoute(t *testing.T) {
	r := newRig(t, true)
	var ping httpapi.Mem0Ping
	r.m0ok(t, "GET", "/v1/ping/", r.alice, "", &ping)
	if ping.Status != "ok" || ping.Agent != "alice" {
		t.Fatalf("ping: %+v", ping)
	}

	// add keeps what the capture rules keep of the user's messages: not
	// the assistant's, not a question.
	var added []httpapi.Mem0Event
	r.m0ok(t, "POST", "/v3/memories/add/", r.alice, `{"messages":[
		{"role":"user","content":"I am allergic to peanuts and shellfish"},
		{"role":"assistant","content":"Noted, I will remember your allergies to peanuts and shellfish"},
		{"role":"user","content":"What should I cook tonight?"}],
		"user_id":"u1","agent_id":"chef","run_id":"run-1","metadata":{"kitchen":"home"},"output_format":"v1.1","version":"v2"}`, &added)
	if len(added) != 1 || added[0].Event != "ADD" || !strings.Contains(added[0].Memory, "peanuts") || added[0].Data.Memory != added[0].Memory {
		t.Fatalf("add: %+v", added)
	}
	allergy := added[0].ID
	// infer:false stores every message as said, but what memory_store
	// rejects as noise ("ok").
	r.m0ok(t, "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"ok"},{"role":"user","content":"My brother Tom works as an airline pilot"},
		{"role":"assistant","content":"Your sister Carol lives in Lisbon"}],
		"user_id":"u2","infer":false}`, &added)
	if len(added) != 2 || added[1].Memory != "Your sister Carol lives in Lisbon" {
		t.Fatalf("add infer:false: %+v", added)
	}
	carol := added[1].ID

	// The labels are in the memory's metadata, run_id also as its session.
	d := r.ok(t, "GET", "/v1/memories/"+allergy, r.alice, "")
	md, _ := json.Marshal(d["memory"].(map[string]any)["metadata"])
	for _, want := range []string{`"user_id":"u1"`, `"agent_id":"chef"`, `"run_id":"run-1"`, `"sessionKey":"run-1"`, `"kitchen":"home"`} {
		if !strings.Contains(string(md), want) {
			t.Errorf("metadata %s: no %s", md, want)
		}
	}
	d = r.ok(t, "GET", "/v1/memories?session=run-1", r.alice, "")
	if d["count"].(float64) != 1 {
		t.Errorf("session run-1 lists %v", d)
	}

	var got httpapi.Mem0Memory
	r.m0ok(t, "GET", "/v1/memories/"+allergy+"/", r.alice, "", &got)
	if got.ID != allergy || *got.UserID != "u1" || *got.AgentID != "chef" || *got.RunID != "run-1" || got.AppID != nil ||
		string(got.Metadata) != `{"kitchen":"home"}` || len(got.Categories) != 1 || !strings.HasSuffix(got.CreatedAt, "Z") {
		t.Fatalf("get: %+v", got)
	}

	var found httpapi.Mem0Results
	r.m0ok(t, "POST", "/v3/memories/search/", r.alice, `{"query":"food allergies","filters":{"user_id":"u1"},"top_k":5,"output_format":"v1.1"}`, &found)
	if len(found.Results) != 1 || found.Results[0].ID != allergy || found.Results[0].Score == nil || *found.Results[0].Score <= 0 {
		t.Fatalf("search u1: %+v", found)
	}
	r.m0ok(t, "POST", "/v3/memories/search/", r.alice, `{"query":"food allergies","filters":{"AND":[{"user_id":"u1"},{"run_id":"run-2"}]}}`, &found)
	if len(found.Results) != 0 {
		t.Fatalf("search u1 AND run-2: %+v", found)
	}
	r.m0ok(t, "POST", "/v3/memories/search/", r.alice, `{"query":"where does my sister live","user_id":"u2","top_k":1}`, &found)
	if len(found.Results) != 1 || found.Results[0].ID != carol {
		t.Fatalf("search u2 top_k 1: %+v", found)
	}

	var page httpapi.Mem0Page
	r.m0ok(t, "POST", "/v3/memories/", r.alice, `{"filters":{"user_id":"u2"}}`, &page)
	if page.Count != 2 || len(page.Results) != 2 || page.Next != nil {
		t.Fatalf("get all u2: %+v", page)
	}
	r.m0ok(t, "POST", "/v3/memories/?page=2&page_size=1", r.alice, `{"filters":{"user_id":"*"}}`, &page)
	if page.Count != 3 || len(page.Results) != 1 || page.Next == nil || page.Previous == nil {
		t.Fatalf("get all page 2 of 1: %+v", page)
	}
	r.m0ok(t, "POST", "/v3/memories/", r.alice, `{"filters":{"AND":[{"user_id":"u1"},{"agent_id":"chef"}]}}`, &page)
	if page.Count != 1 || page.Results[0].ID != allergy {
		t.Fatalf("get all u1 AND chef: %+v", page)
	}

	var updated httpapi.Mem0Memory
	r.m0ok(t, "PUT", "/v1/memories/"+carol+"/", r.alice, `{"text":"Your sister Carol lives in Porto"}`, &updated)
	if updated.ID != carol || updated.Memory != "Your sister Carol lives in Porto" || *updated.UserID != "u2" {
		t.Fatalf("update: %+v", updated)
	}
	var hist []httpapi.Mem0History
	r.m0ok(t, "GET", "/v1/memories/"+carol+"/history/", r.alice, "", &hist)
	// memory_update keeps the id and the old text as the version it replaced.
	if len(hist) != 2 || hist[0].Event != "ADD" || !strings.Contains(*hist[0].NewMemory, "Lisbon") || hist[1].Event != "UPDATE" ||
		!strings.Contains(*hist[1].OldMemory, "Lisbon") || *hist[1].NewMemory != updated.Memory || hist[1].ID != carol || hist[0].MemoryID != carol {
		t.Fatalf("history: %+v", hist)
	}

	var msg struct {
		Message string `json:"message"`
		Deleted int    `json:"deleted"`
	}
	r.m0ok(t, "DELETE", "/v1/memories/"+allergy+"/", r.alice, "", &msg)
	if code, raw := r.m0(t, "GET", "/v1/memories/"+allergy+"/", r.alice, "", nil); code != http.StatusNotFound {
		t.Fatalf("get after delete: %d %s", code, raw)
	}
	r.m0ok(t, "DELETE", "/v1/memories/?user_id=u2", r.alice, "", &msg)
	if msg.Deleted != 2 {
		t.Fatalf("delete all u2: %+v", msg)
	}
	r.m0ok(t, "POST", "/v3/memories/", r.alice, `{}`, &page)
	if page.Count != 0 {
		t.Fatalf("left after deleting: %+v", page)
	}
}

// A memory replaced by a newer one has a history of two versions.
func TestMem0HistoryIsTheSupersedeChain(t *testing.T) {
	r := newRig(t, true)
	old := r.ok(t, "POST", "/v1/memories", r.alice, `{"text":"My office is on the third floor of building A","category":"fact"}`)["id"].(string)
	cur := r.ok(t, "POST", "/v1/memories", r.alice, fmt.Sprintf(`{"text":"My office moved to the fifth floor of building B","category":"fact","supersedes":%q}`, old))["id"].(string)
	for _, id := range []string{old, cur} {
		var hist []httpapi.Mem0History
		r.m0ok(t, "GET", "/v1/memories/"+id+"/history/", r.alice, "", &hist)
		if len(hist) != 2 || hist[0].ID != old || hist[0].Event != "ADD" || hist[0].OldMemory != nil ||
			hist[1].ID != cur || hist[1].Event != "UPDATE" || !strings.Contains(*hist[1].OldMemory, "third") ||
			!strings.Contains(*hist[1].NewMemory, "fifth") || hist[1].MemoryID != id {
			t.Fatalf("history of %s: %+v", id, hist)
		}
	}
}

// The token chooses the agent; a body's agent_id is only a label, and
// another agent's memory is not found.
func TestMem0AgentIsTheTokens(t *testing.T) {
	r := newRig(t, true)
	var added []httpapi.Mem0Event
	r.m0ok(t, "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"My favourite colour is teal"}],"agent_id":"bob","user_id":"u1","infer":false}`, &added)
	if len(added) != 1 {
		t.Fatalf("add: %+v", added)
	}
	id := added[0].ID
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/memories/" + id + "/", ""},
		{"PUT", "/v1/memories/" + id + "/", `{"text":"My favourite colour is red"}`},
		{"GET", "/v1/memories/" + id + "/history/", ""},
		{"DELETE", "/v1/memories/" + id + "/", ""},
	} {
		if code, raw := r.m0(t, c.method, c.path, r.bob, c.body, nil); code != http.StatusNotFound || !strings.Contains(string(raw), `"code":"not_found"`) {
			t.Errorf("bob %s %s: %d %s", c.method, c.path, code, raw)
		}
	}
	var found httpapi.Mem0Results
	r.m0ok(t, "POST", "/v3/memories/search/", r.bob, `{"query":"favourite colour","filters":{"agent_id":"bob"}}`, &found)
	if len(found.Results) != 0 {
		t.Fatalf("bob finds alice's memory: %+v", found)
	}
	var page httpapi.Mem0Page
	r.m0ok(t, "POST", "/v3/memories/", r.bob, `{"filters":{"user_id":"u1"}}`, &page)
	if page.Count != 0 {
		t.Fatalf("bob lists alice's memory: %+v", page)
	}
	var msg struct{ Deleted int }
	r.m0ok(t, "DELETE", "/v1/memories/?user_id=u1", r.bob, "", &msg)
	r.m0ok(t, "GET", "/v1/memories/"+id+"/", r.alice, "", nil)
	if msg.Deleted != 0 {
		t.Fatalf("bob's delete all deleted %d", msg.Deleted)
	}
}

func TestMem0BadInput(t *testing.T) {
	r := newRig(t, true)
	var added []httpapi.Mem0Event
	r.m0ok(t, "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"My dog is called Biscuit"}],"infer":false}`, &added)
	id := added[0].ID
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", schemas.MaxRequestBytes) + `"}]}`
	for _, c := range []struct {
		name, method, path, token, body string
		code                            int
		says                            string
	}{
		{"no token", "GET", "/v1/ping/", "", "", 401, "unknown token"},
		{"wrong token", "POST", "/v3/memories/search/", "not-a-token-of-anyone", `{"query":"x"}`, 401, "unknown token"},
		{"malformed", "POST", "/v3/memories/add/", r.alice, `{"messages":[`, 400, "not a JSON object"},
		{"not an object", "POST", "/v3/memories/search/", r.alice, `["query"]`, 400, "not a JSON object"},
		{"unknown field", "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"hi there"}],"expiration_date":"2030-01-01"}`, 400, "expiration_date"},
		{"unknown search field", "POST", "/v3/memories/search/", r.alice, `{"query":"x","rank_by":"date"}`, 400, "rank_by"},
		{"unknown update field", "PUT", "/v1/memories/" + id + "/", r.alice, `{"text":"x y z","metadata":{}}`, 400, "text only"},
		{"oversized", "POST", "/v3/memories/add/", r.alice, big, 413, "over"},
		{"no messages", "POST", "/v3/memories/add/", r.alice, `{"messages":[]}`, 400, "messages"},
		{"bad role", "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"tool","content":"x"}]}`, 400, "role"},
		{"image", "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":{"type":"image_url","image_url":{"url":"http://x"}}}]}`, 400, "no images"},
		{"metadata not an object", "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"hi"}],"metadata":[1]}`, 400, "metadata"},
		{"long label", "POST", "/v3/memories/add/", r.alice, `{"messages":[{"role":"user","content":"hi"}],"user_id":"` + strings.Repeat("u", 300) + `"}`, 400, "user_id"},
		{"no query", "POST", "/v3/memories/search/", r.alice, `{"filters":{"user_id":"u"}}`, 400, "query"},
		{"top_k 0", "POST", "/v3/memories/search/", r.alice, `{"query":"x","top_k":0}`, 400, "top_k"},
		{"OR filter", "POST", "/v3/memories/search/", r.alice, `{"query":"x","filters":{"OR":[{"user_id":"a"}]}}`, 400, "not supported"},
		{"operator filter", "POST", "/v3/memories/", r.alice, `{"filters":{"user_id":{"in":["a","b"]}}}`, 400, "non-empty string"},
		{"metadata filter", "POST", "/v3/memories/", r.alice, `{"filters":{"metadata":{"a":1}}}`, 400, "not supported"},
		{"filters disagree", "POST", "/v3/memories/search/", r.alice, `{"query":"x","user_id":"a","filters":{"user_id":"b"}}`, 400, "disagrees"},
		{"bad page", "POST", "/v3/memories/?page=0", r.alice, `{}`, 400, "page"},
		{"huge page_size", "POST", "/v3/memories/?page_size=5000", r.alice, `{}`, 400, "page_size"},
		{"unknown param", "POST", "/v3/memories/?sort=asc", r.alice, `{}`, 400, "sort"},
		{"delete all without ids", "DELETE", "/v1/memories/", r.alice, "", 400, "at least one"},
		{"delete all unknown param", "DELETE", "/v1/memories/?user=u", r.alice, "", 400, "user"},
		{"empty update", "PUT", "/v1/memories/" + id + "/", r.alice, `{"text":" "}`, 400, "text"},
		{"unknown id", "GET", "/v1/memories/00000000-0000-4000-8000-000000000000/", r.alice, "", 404, "not_found"},
		{"another agent's id", "GET", "/v1/memories/" + id + "/history/", r.bob, "", 404, "not_found"},
	} {
		code, raw := r.m0(t, c.method, c.path, c.token, c.body, nil)
		var e schemas.ErrorDetails
		if code != c.code || json.Unmarshal(raw, &e) != nil || e.Error == "" || !strings.Contains(string(raw), c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, truncate(raw), c.code, c.says)
		}
	}
	r.m0ok(t, "GET", "/v1/memories/"+id+"/", r.alice, "", nil) // nothing above changed it
}

// FuzzMem0Decoders: no body panics a decoder, and what one accepts is
// within its bounds.
func FuzzMem0Decoders(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"I like tea"}],"user_id":"u","metadata":{"a":1},"infer":false}`,
		`{"query":"tea","filters":{"AND":[{"user_id":"u"},{"run_id":"*"}]},"top_k":3,"threshold":0.2}`,
		`{"filters":{"agent_id":"a"},"org_id":"o","project_id":"p"}`,
		`{"text":"new text"}`, `{"messages":[{"role":"user","content":{"type":"image_url"}}]}`, `{"filters":{"AND":[{"AND":[]}]}}`,
		``, `null`, `[]`, `{"messages":null}`, "{\"query\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if r, texts, err := httpapi.DecodeMem0Add(body); err == nil && (len(r.Messages) == 0 || len(texts) != len(r.Messages)) {
			t.Fatalf("add accepted %q with %d messages", body, len(r.Messages))
		}
		if r, _, err := httpapi.DecodeMem0Search(body); err == nil && (strings.TrimSpace(r.Query) == "" || (r.TopK != nil && *r.TopK < 1)) {
			t.Fatalf("search accepted %q", body)
		}
		_, _ = httpapi.DecodeMem0GetAll(body)
		if r, err := httpapi.DecodeMem0Update(body); err == nil && strings.TrimSpace(r.Text) == "" {
			t.Fatalf("update accepted %q", body)
		}
		if fl, err := httpapi.ParseFilters(body); err == nil {
			for _, v := range []string{fl.UserID, fl.AgentID, fl.AppID, fl.RunID} {
				if len(v) > 256 {
					t.Fatalf("filters accepted a label of %d bytes", len(v))
				}
			}
		}
	})
}
