package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/rules"
	"github.com/clawmem/clawmem/internal/natsembed"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

const queryTestDims = 256

func queryLocalEmbedder(t testing.TB) embed.Embedder {
	return testkit.LocalEmbedder(t, queryTestDims)
}

// queryTestEngine opens a real SQLite store in a temp dir with default
// scopes. Its clock advances 1 ms per reading so that memories stored one
// after another list in a fixed order.
func queryTestEngine(t testing.TB, emb embed.Embedder) *memory.Engine {
	t.Helper()
	if emb == nil {
		emb = queryLocalEmbedder(t)
	}
	e, _ := testkit.Engine(t, "", emb)
	return e
}

// queryStart serves eng on a fresh embedded NATS server and returns a
// client connection to it.
func queryStart(t testing.TB, eng *memory.Engine, cfg Config) (*nats.Conn, *Service) {
	t.Helper()
	_, nc, _ := natsembed.StartTest(t)
	svc := New(nc, eng, cfg, prometheus.NewRegistry(), queryTestLog(t))
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Stop)
	return nc, svc
}

// queryTestLog shows the service's log only for failing or verbose tests.
func queryTestLog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// queryReply is a decoded schemas.ToolResult.
type queryReply struct {
	Content []schemas.TextContent `json:"content"`
	Details json.RawMessage       `json:"details"`
	IsError bool                  `json:"isError"`
}

func (r queryReply) text() string {
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		return fmt.Sprintf("<malformed content %+v>", r.Content)
	}
	return r.Content[0].Text
}

func (r queryReply) errorDetails(t testing.TB) schemas.ErrorDetails {
	t.Helper()
	var d schemas.ErrorDetails
	if err := json.Unmarshal(r.Details, &d); err != nil {
		t.Fatalf("error details %s: %v", r.Details, err)
	}
	return d
}

// queryAsk sends body (raw bytes or a value to encode) to subject and
// decodes the reply.
func queryAsk(t testing.TB, nc *nats.Conn, subject string, body any) queryReply {
	t.Helper()
	var data []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		data = b
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(b); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := nc.Request(subject, data, 10*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	var r queryReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		t.Fatalf("reply to %s is not a tool result: %v: %s", subject, err, msg.Data)
	}
	return r
}

// queryOKReply asks and fails the test on an error reply.
func queryOKReply[D any](t testing.TB, nc *nats.Conn, subject string, body any) (queryReply, D) {
	t.Helper()
	r := queryAsk(t, nc, subject, body)
	if r.IsError {
		t.Fatalf("%s: error reply %q %s", subject, r.text(), r.Details)
	}
	var d D
	if err := json.Unmarshal(r.Details, &d); err != nil {
		t.Fatalf("%s: details %s: %v", subject, r.Details, err)
	}
	return r, d
}

// queryWantError asks and checks that the reply is an error with code.
func queryWantError(t testing.TB, nc *nats.Conn, subject string, body any, code string) schemas.ErrorDetails {
	t.Helper()
	r := queryAsk(t, nc, subject, body)
	if !r.IsError {
		t.Fatalf("%s %.80s: reply %q is no error, want %s", subject, fmt.Sprint(body), r.text(), code)
	}
	d := r.errorDetails(t)
	if d.Code != code {
		t.Fatalf("%s %.80s: code %s (%s), want %s", subject, fmt.Sprint(body), d.Code, d.Error, code)
	}
	if d.Error == "" || r.text() != d.Error {
		t.Fatalf("error reply text %q, details error %q", r.text(), d.Error)
	}
	return d
}

func querySubj(agent, op string) string { return schemas.ServiceSubject(agent, op) }

var queryCorpus = []string{
	"The staging database password rotates every ninety days",
	"Our team retro happens on the last Friday of each month",
	"The mobile app release checklist lives in the wiki under releases",
	"I prefer green tea over coffee in the afternoon",
}

func TestQueryToolsOverNATS(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())

	// store
	var ids []string
	stored := map[string]bool{} // the categories capture gave the corpus
	for i, text := range queryCorpus {
		r, d := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: text})
		if d.Action != "created" || !schemas.IsUUID(d.ID) || d.Scope != "agent:main" || d.ExistingID != "" {
			t.Fatalf("store %d details %+v", i, d)
		}
		want := fmt.Sprintf("Stored memory %s [%s:agent:main]: %q", d.ID[:8], d.Category, text)
		if r.text() != want {
			t.Fatalf("store text %q, want %q", r.text(), want)
		}
		ids = append(ids, d.ID)
		stored[string(d.Category)] = true
		// List orders by creation time (ms); two stores in one
		// millisecond would make the page order below a coin toss.
		time.Sleep(2 * time.Millisecond)
	}
	imp := 0.9
	r, sd := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{
		Text: "Deploys to production need two approvals", Category: "decision", Scope: "global", Importance: &imp,
		Metadata: json.RawMessage(`{"source":"test"}`)})
	if sd.Scope != "global" || sd.Category != schemas.CategoryDecision {
		t.Fatalf("store into global: %+v", sd)
	}
	globalID := sd.ID
	if m, err := eng.Backend().Get(context.Background(), globalID, engine.AllScopes()); err != nil ||
		m.Importance != 0.9 || string(m.Metadata) != `{"source":"test"}` {
		t.Fatalf("stored %+v, %v", m, err)
	}
	r, sd = queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: queryCorpus[1]})
	if sd.Action != "duplicate" || sd.ExistingID != ids[1] || sd.ID != ids[1] || sd.Similarity < memory.DedupTool {
		t.Fatalf("duplicate store details %+v", sd)
	}
	if !strings.HasPrefix(r.text(), "Similar memory already exists (") || !strings.Contains(r.text(), "\n"+rules.FrameNotice+"\n["+ids[1][:8]+"] ") {
		t.Fatalf("duplicate store text %q", r.text())
	}

	// recall
	r, rd := queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "staging database password"})
	if rd.Count == 0 || rd.Count != len(rd.Memories) || rd.Memories[0].ID != ids[0] {
		t.Fatalf("recall details %+v", rd)
	}
	top := rd.Memories[0]
	if top.Score <= 0 || top.Sources == nil || top.Text != queryCorpus[0] {
		t.Fatalf("recall top memory %+v", top)
	}
	// Replies carry scores to retrieve.ScorePlaces decimals, the score
	// and every one of its sources.
	for _, m := range rd.Memories {
		src, _ := m.Sources.(map[string]any)
		if m.Score != retrieve.RoundScore(m.Score) || src == nil || src["final"] != m.Score {
			t.Fatalf("recalled memory's score %v, sources %v: want it to %d decimals, as final", m.Score, m.Sources, retrieve.ScorePlaces)
		}
		numbers := 0
		for k, v := range src {
			if f, ok := v.(float64); ok {
				numbers++
				if f != retrieve.RoundScore(f) {
					t.Fatalf("source %s = %v: want %d decimals", k, f, retrieve.ScorePlaces)
				}
			}
		}
		if numbers < 10 {
			t.Fatalf("sources %v: want every stage's score", src)
		}
	}
	wantLine := fmt.Sprintf("1. [%s:agent:main] %s (%.0f%%, vector", top.Category, queryCorpus[0], top.Score*100)
	if !strings.HasPrefix(r.text(), fmt.Sprintf("Found %d ", rd.Count)) || !strings.Contains(r.text(), ":\n"+rules.FrameNotice+"\n") ||
		!strings.Contains(r.text(), "\n"+wantLine) || !strings.HasSuffix(r.text(), "\n"+rules.FrameEnd) {
		t.Fatalf("recall text %q, want a line %q", r.text(), wantLine)
	}
	// A category no stored memory has: nothing, though the words match.
	empty := ""
	for _, c := range []string{"entity", "other", "fact"} {
		if !stored[c] {
			empty = c
			break
		}
	}
	if empty == "" {
		t.Fatalf("the corpus took every category: %v", stored)
	}
	r, rd = queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "green tea", Category: empty})
	if rd.Count != 0 || r.text() != "No relevant memories found." {
		t.Fatalf("recall in category %s, which no memory has: %q %+v", empty, r.text(), rd)
	}
	_, rd = queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "production approvals deploys", Scope: "global", Category: "decision"})
	if rd.Count != 1 || rd.Memories[0].ID != globalID {
		t.Fatalf("recall in global/decision: %+v", rd)
	}

	// list
	r, ld := queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), nil)
	if ld.Count != 5 || ld.Memories[0].ID != globalID || ld.Memories[4].ID != ids[0] {
		t.Fatalf("list details %+v", ld)
	}
	if !strings.HasPrefix(r.text(), "Recent memories (5, newest first):\n"+rules.FrameNotice+"\n1. ["+globalID[:8]+"] [decision:global] Deploys") ||
		!strings.HasSuffix(r.text(), "\n"+rules.FrameEnd) {
		t.Fatalf("list text %q", r.text())
	}
	r, ld = queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), schemas.ListRequest{Scope: "agent:main", Limit: 2, Offset: 1})
	if ld.Count != 2 || ld.Memories[0].ID != ids[2] || !strings.Contains(r.text(), "\n2. ["+ids[2][:8]+"]") {
		t.Fatalf("list page: %q %+v", r.text(), ld)
	}

	// stats
	r, st := queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), "")
	if st.Total != 5 || st.ByScope["agent:main"] != 4 || st.ByScope["global"] != 1 || !st.FullText || st.Retrieval.Mode != "hybrid" {
		t.Fatalf("stats %+v", st)
	}
	// One answer for the rerank that runs: the seed's default cross-encoder
	// without an endpoint is the cosine fallback, and stats says so.
	if st.Rerank != retrieve.RerankCosineFallback || st.Retrieval.Rerank != retrieve.RerankCrossEncoder {
		t.Fatalf("stats rerank %q (configured %q)", st.Rerank, st.Retrieval.Rerank)
	}
	for _, want := range []string{"Total: 5", "agent:main: 4", "global: 1", "decision: 1", "Retrieval: hybrid", "full-text search on",
		"rerank cosine similarity (the default without a cross-encoder: set retrieval.rerankApiKey, or retrieval.rerankProvider tei, for one)"} {
		if !strings.Contains(r.text(), want) {
			t.Fatalf("stats text %q lacks %q", r.text(), want)
		}
	}
	_, st = queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), schemas.StatsRequest{Scope: "global"})
	if st.Total != 1 {
		t.Fatalf("stats in global: %+v", st)
	}

	// update: by id, by prefix, by query
	newText := "The staging database password rotates every thirty days"
	r, ud := queryOKReply[schemas.UpdateDetails](t, nc, querySubj("main", "update"), schemas.UpdateRequest{MemoryID: ids[0], Text: &newText})
	if ud.Action != "updated" || ud.ID != ids[0] || ud.Memory == nil || ud.Memory.Text != newText || r.text() != "Memory "+ids[0][:8]+" updated." {
		t.Fatalf("update by id: %q %+v", r.text(), ud)
	}
	cat := "fact"
	_, ud = queryOKReply[schemas.UpdateDetails](t, nc, querySubj("main", "update"), schemas.UpdateRequest{MemoryID: ids[2][:8], Category: &cat})
	if ud.ID != ids[2] || ud.Memory.Category != schemas.CategoryFact {
		t.Fatalf("update by prefix: %+v", ud)
	}
	low := 0.2
	_, ud = queryOKReply[schemas.UpdateDetails](t, nc, querySubj("main", "update"), schemas.UpdateRequest{MemoryID: queryCorpus[3], Importance: &low})
	if ud.Action != "updated" || ud.ID != ids[3] || ud.Memory.Importance != 0.2 {
		t.Fatalf("update by query: %+v", ud)
	}

	// forget: by id, by prefix, by query (one confident match, then several)
	r, fd := queryOKReply[schemas.ForgetDetails](t, nc, querySubj("main", "forget"), schemas.ForgetRequest{MemoryID: ids[0]})
	// A tool stored it: no stream message holds it, and the reply says so.
	if fd.Action != "deleted" || fd.ID != ids[0] || !strings.HasPrefix(r.text(), "Memory "+ids[0][:8]+" forgotten. Note: 1 memory comes from no conversation") ||
		fd.Purged != 0 {
		t.Fatalf("forget by id: %q %+v", r.text(), fd)
	}
	queryWantError(t, nc, querySubj("main", "forget"), schemas.ForgetRequest{MemoryID: ids[0]}, schemas.CodeNotFound)
	_, fd = queryOKReply[schemas.ForgetDetails](t, nc, querySubj("main", "forget"), schemas.ForgetRequest{MemoryID: strings.ToUpper(ids[2][:10])})
	if fd.ID != ids[2] {
		t.Fatalf("forget by prefix: %+v", fd)
	}
	_, fd = queryOKReply[schemas.ForgetDetails](t, nc, querySubj("main", "forget"), schemas.ForgetRequest{Query: queryCorpus[1]})
	if fd.Action != "deleted" || fd.ID != ids[1] {
		t.Fatalf("forget by query: %+v", fd)
	}
	for _, text := range []string{
		"The production database password rotates every thirty days",
		"The analytics database password is shared with the data team",
	} {
		queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: text})
	}
	r, fd = queryOKReply[schemas.ForgetDetails](t, nc, querySubj("main", "forget"), schemas.ForgetRequest{Query: "database password"})
	if fd.Action != "candidates" || len(fd.Candidates) < 2 || fd.ID != "" {
		t.Fatalf("vague forget: %+v", fd)
	}
	if !strings.HasPrefix(r.text(), fmt.Sprintf("Found %d candidates; specify memoryId:\n%s\n- [%s] ", len(fd.Candidates), rules.FrameNotice, fd.Candidates[0].ID[:8])) {
		t.Fatalf("candidates text %q", r.text())
	}
	// The local embedder scores any text against any other, so "no match"
	// needs an agent with no memories (global holds the one above).
	queryOKReply[schemas.ForgetDetails](t, nc, schemas.AdminSubject("forget"), schemas.ForgetRequest{MemoryID: globalID})
	r, fd = queryOKReply[schemas.ForgetDetails](t, nc, querySubj("nobody", "forget"), schemas.ForgetRequest{Query: "green tea"})
	if fd.Action != "candidates" || len(fd.Candidates) != 0 || r.text() != "No matching memories found." {
		t.Fatalf("forget with no match: %q %+v", r.text(), fd)
	}
	_, st = queryOKReply[memory.Stats](t, nc, schemas.AdminSubject("stats"), nil)
	if st.Total != 3 {
		t.Fatalf("%d memories left, want 3", st.Total)
	}
}

func TestQueryDiscovery(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	queryOKReply[memory.Stats](t, nc, querySubj("main", "stats"), nil)

	subj, err := micro.ControlSubject(micro.PingVerb, schemas.ServiceName, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := nc.Request(subj, nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var ping micro.Ping
	if err := json.Unmarshal(msg.Data, &ping); err != nil || ping.Name != schemas.ServiceName || ping.Version != schemas.ServiceVersion || ping.ID == "" {
		t.Fatalf("ping %s: %v", msg.Data, err)
	}

	msg, err = nc.Request("$SRV.INFO."+schemas.ServiceName, nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info micro.Info
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, e := range info.Endpoints {
		subjects = append(subjects, e.Subject)
		if e.QueueGroup != "clawmem-query" {
			t.Errorf("endpoint %s queue group %q", e.Name, e.QueueGroup)
		}
	}
	for _, op := range schemas.Ops {
		for _, want := range []string{"clawmem.v1.*." + op, schemas.AdminSubject(op)} {
			if !slices.Contains(subjects, want) {
				t.Errorf("INFO lacks %s: %v", want, subjects)
			}
		}
	}
	for _, op := range schemas.AdminOps {
		if !slices.Contains(subjects, schemas.AdminSubject(op)) || slices.Contains(subjects, "clawmem.v1.*."+op) {
			t.Errorf("admin-only %s: endpoints %v", op, subjects)
		}
	}
	if len(subjects) != 2*len(schemas.Ops)+len(schemas.AdminOps) {
		t.Errorf("%d endpoints, want %d", len(subjects), 2*len(schemas.Ops)+len(schemas.AdminOps))
	}

	subj, _ = micro.ControlSubject(micro.StatsVerb, schemas.ServiceName, ping.ID)
	msg, err = nc.Request(subj, nil, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	for _, e := range stats.Endpoints {
		if e.Name != "stats" {
			continue
		}
		var data schemas.EndpointStats
		if err := json.Unmarshal(e.Data, &data); err != nil {
			t.Fatal(err)
		}
		if e.Subject != "clawmem.v1.*.stats" || data.Handled != 1 || data.AverageProcessingTime <= 0 {
			t.Fatalf("stats endpoint: %+v, data %+v", e, data)
		}
		return
	}
	t.Fatalf("STATS lacks the stats endpoint: %s", msg.Data)
}

// memory_recall shows a memory's relative dates resolved against when it
// was said, so the agent can answer "when" without guessing the week.
func TestQueryRecallShowsResolvedDates(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	said := time.Date(2025, 3, 3, 9, 30, 0, 0, time.UTC)
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{
		Text:     "The plumber replaced the boiler valve yesterday",
		Metadata: json.RawMessage(fmt.Sprintf(`{"saidAt":%d}`, said.UnixMilli()))})
	r, rd := queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "When did the plumber replace the boiler valve?"})
	if rd.Count == 0 || !strings.Contains(r.text(), "The plumber replaced the boiler valve yesterday [yesterday = 2025-03-02] (") {
		t.Fatalf("recall text %q lacks the resolved date", r.text())
	}
}

// Facts that change, over the wire: a new fact supersedes the old one,
// which list and recall hide unless includeSuperseded, and show prints the
// chain.
func TestQuerySupersede(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	_, paris := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "I live in Paris"})
	time.Sleep(2 * time.Millisecond)
	r, berlin := queryOKReply[schemas.StoreDetails](t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "I moved to Berlin"})
	if !slices.Equal(berlin.Superseded, []string{paris.ID}) || !strings.Contains(r.text(), "It supersedes "+paris.ID[:8]) {
		t.Fatalf("store Berlin: %q %+v", r.text(), berlin)
	}
	_, ld := queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), schemas.ListRequest{})
	if ld.Count != 1 || ld.Memories[0].ID != berlin.ID {
		t.Fatalf("list: %+v", ld)
	}
	r, ld = queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), schemas.ListRequest{IncludeSuperseded: true})
	if ld.Count != 2 || !strings.Contains(r.text(), "I live in Paris (") || !strings.Contains(r.text(), "; superseded by "+berlin.ID[:8]) {
		t.Fatalf("list with history: %q", r.text())
	}
	_, rd := queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "Paris"})
	for _, m := range rd.Memories {
		if m.ID == paris.ID {
			t.Fatalf("recall returned the superseded fact")
		}
	}
	r, rd = queryOKReply[schemas.RecallDetails](t, nc, querySubj("main", "recall"), schemas.RecallRequest{Query: "Paris", IncludeSuperseded: true})
	if rd.Count == 0 || rd.Memories[0].ID != paris.ID || rd.Memories[0].SupersededBy != berlin.ID || !strings.Contains(r.text(), "; superseded by") {
		t.Fatalf("recall with history: %q %+v", r.text(), rd)
	}
	r, sd := queryOKReply[schemas.ShowDetails](t, nc, querySubj("main", "show"), schemas.ShowRequest{MemoryID: paris.ID[:8]})
	if sd.Memory.ID != paris.ID || len(sd.ReplacedBy) != 1 || sd.ReplacedBy[0].ID != berlin.ID ||
		!strings.Contains(r.text(), "\nreplaced by ["+berlin.ID[:8]+"]") || !strings.HasPrefix(r.text(), rules.FrameNotice+"\n") {
		t.Fatalf("show Paris: %q %+v", r.text(), sd)
	}
	_, sd = queryOKReply[schemas.ShowDetails](t, nc, querySubj("main", "show"), schemas.ShowRequest{MemoryID: berlin.ID})
	if len(sd.Replaced) != 1 || sd.Replaced[0].ID != paris.ID {
		t.Fatalf("show Berlin: %+v", sd)
	}
	// Explicit supersedes: another agent's memory is not found; bad types
	// are refused; nothing is stored.
	_, other := queryOKReply[schemas.StoreDetails](t, nc, querySubj("other", "store"), schemas.StoreRequest{Text: "Other agent's note on the deploy window"})
	queryWantError(t, nc, querySubj("main", "store"), schemas.StoreRequest{Text: "The deploy window is Friday", Supersedes: other.ID}, schemas.CodeNotFound)
	queryWantError(t, nc, querySubj("main", "show"), schemas.ShowRequest{MemoryID: other.ID}, schemas.CodeNotFound)
	queryWantError(t, nc, querySubj("main", "list"), json.RawMessage(`{"includeSuperseded":"yes"}`), schemas.CodeInvalid)
	queryWantError(t, nc, querySubj("main", "show"), json.RawMessage(`{}`), schemas.CodeInvalid)
	if _, ld := queryOKReply[schemas.ListDetails](t, nc, querySubj("main", "list"), schemas.ListRequest{IncludeSuperseded: true}); ld.Count != 2 {
		t.Fatalf("a refused request stored something: %+v", ld)
	}
}

// consolidate over NATS: admin only, a dry run changes nothing, a run
// merges and answers with what it did.
func TestQueryConsolidate(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	dims := eng.Backend().Dimensions()
	vec := func(tilt float32) []float32 { v := make([]float32, dims); v[0], v[1] = 1, tilt; return v }
	now := time.Now().UnixMilli()
	if err := eng.Backend().Import(context.Background(),
		schemas.Memory{ID: "d0000000-0000-4000-8000-000000000001", Text: "I prefer dark mode in every editor", Vector: vec(0), Scope: "agent:main", Category: schemas.CategoryPreference, Importance: 0.7, Timestamp: now - 1000},
		schemas.Memory{ID: "d0000000-0000-4000-8000-000000000002", Text: "I like dark mode in all my editors", Vector: vec(0.25), Scope: "agent:main", Category: schemas.CategoryPreference, Importance: 0.7, Timestamp: now},
	); err != nil {
		t.Fatal(err)
	}
	// Agents cannot reach it at all: their subjects serve no admin ops.
	if _, err := nc.Request(querySubj("main", schemas.OpConsolidate), []byte(`{}`), time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("agent subject: %v, want no responders", err)
	}
	r, d := queryOKReply[memory.ConsolidateReport](t, nc, schemas.AdminSubject(schemas.OpConsolidate), schemas.ConsolidateRequest{DryRun: true})
	if len(d.Merges) != 1 || !strings.Contains(r.text(), "would merge 1 group") {
		t.Fatalf("dry run: %q %+v", r.text(), d)
	}
	if st, _ := eng.Backend().Stats(context.Background(), engine.AllScopes()); st.Total != 2 || st.History != 0 {
		t.Fatalf("dry run changed the store: %+v", st)
	}
	r, d = queryOKReply[memory.ConsolidateReport](t, nc, schemas.AdminSubject(schemas.OpConsolidate), schemas.ConsolidateRequest{})
	if len(d.Merges) != 1 || !strings.Contains(r.text(), "merged 1 group") || !strings.Contains(r.text(), "I like dark mode in all my editors") {
		t.Fatalf("run: %q %+v", r.text(), d)
	}
	if st, _ := eng.Backend().Stats(context.Background(), engine.AllScopes()); st.Total != 1 || st.History != 2 {
		t.Fatalf("after the run: %+v", st)
	}
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpConsolidate), json.RawMessage(`{"mergeMin":3}`), schemas.CodeInvalid)
}
