package query

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/schemas"
)

func TestQueryAdminEndpoints(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, Config{}) // the zero value serves no admin endpoints
	if _, err := nc.Request(schemas.AdminSubject("stats"), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("admin stats with admin disabled: %v", err)
	}

	eng = queryTestEngine(t, nil)
	nc, _ = queryStart(t, eng, DefaultConfig())
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("alice", "store"), schemas.StoreRequest{Text: queryCorpus[0]})
	queryOKReply[schemas.StoreDetails](t, nc, querySubj("bob", "store"), schemas.StoreRequest{Text: queryCorpus[1]})
	_, sd := queryOKReply[schemas.StoreDetails](t, nc, schemas.AdminSubject("store"), schemas.StoreRequest{Text: queryCorpus[2], Scope: "agent:carol"})
	if sd.Scope != "agent:carol" {
		t.Fatalf("admin store: %+v", sd)
	}
	_, st := queryOKReply[memory.Stats](t, nc, schemas.AdminSubject("stats"), nil)
	if st.Total != 3 || st.ByScope["agent:alice"] != 1 || st.ByScope["agent:bob"] != 1 {
		t.Fatalf("admin stats %+v", st)
	}
	_, rd := queryOKReply[schemas.RecallDetails](t, nc, schemas.AdminSubject("recall"), schemas.RecallRequest{Query: queryCorpus[1]})
	if rd.Count == 0 || rd.Memories[0].Scope != "agent:bob" {
		t.Fatalf("admin recall %+v", rd)
	}
	_, fd := queryOKReply[schemas.ForgetDetails](t, nc, schemas.AdminSubject("forget"), schemas.ForgetRequest{MemoryID: sd.ID})
	if fd.ID != sd.ID {
		t.Fatalf("admin forget %+v", fd)
	}
}

// queryExportAll pages through an admin export with the given page limit.
func queryExportAll(t *testing.T, nc *nats.Conn, req schemas.ExportRequest) ([]schemas.Memory, int) {
	t.Helper()
	var out []schemas.Memory
	pages := 0
	for {
		_, d := queryOKReply[schemas.ExportDetails](t, nc, schemas.AdminSubject(schemas.OpExport), req)
		pages++
		if d.Page != pages || d.Count != len(d.Memories) {
			t.Fatalf("page %d: %+v", pages, d)
		}
		for _, raw := range d.Memories {
			var m schemas.Memory
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatalf("export row %s: %v", raw, err)
			}
			out = append(out, m)
		}
		if d.NextCursor == "" {
			return out, pages
		}
		req = schemas.ExportRequest{Cursor: d.NextCursor, Limit: req.Limit}
	}
}

// queryFill stores n distinct memories through the engine, spread over
// three scopes.
func queryFill(t *testing.T, eng *memory.Engine, n int) map[string]schemas.Memory {
	t.Helper()
	texts := queryBenchTexts(n)
	byID := map[string]schemas.Memory{}
	for i, text := range texts {
		scope := []string{"global", "agent:main", "custom:work"}[i%3]
		res, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{Text: text, Scope: scope,
			Metadata: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}, 0)
		if err != nil {
			t.Fatal(err)
		}
		byID[res.Memory.ID] = res.Memory
	}
	return byID
}

func TestQueryAdminExport(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, svc := queryStart(t, eng, DefaultConfig())
	stored := queryFill(t, eng, 25)

	got, pages := queryExportAll(t, nc, schemas.ExportRequest{Limit: 4})
	if len(got) != 25 || pages != 7 {
		t.Fatalf("exported %d memories in %d pages, want 25 in 7", len(got), pages)
	}
	seen := map[string]bool{}
	for _, m := range got {
		want, ok := stored[m.ID]
		if !ok || seen[m.ID] || m.Text != want.Text || m.Scope != want.Scope || m.Timestamp != want.Timestamp ||
			m.Category != want.Category || string(m.Metadata) != string(want.Metadata) || m.Vector != nil {
			t.Fatalf("exported %+v, stored %+v (seen %v)", m, want, seen[m.ID])
		}
		seen[m.ID] = true
	}

	scoped, _ := queryExportAll(t, nc, schemas.ExportRequest{Scope: "custom:work", WithVectors: true})
	if len(scoped) == 0 || len(scoped) >= 25 {
		t.Fatalf("scoped export: %d", len(scoped))
	}
	for _, m := range scoped {
		if m.Scope != "custom:work" || len(m.Vector) != queryTestDims {
			t.Fatalf("scoped export row %+v", m)
		}
	}

	// A lost reply: asking with the same cursor again gives the same page.
	_, first := queryOKReply[schemas.ExportDetails](t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Limit: 5})
	_, second := queryOKReply[schemas.ExportDetails](t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Cursor: first.NextCursor, Limit: 5})
	_, again := queryOKReply[schemas.ExportDetails](t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Cursor: first.NextCursor, Limit: 5})
	if second.Page != 2 || again.Page != 2 || string(second.Memories[0]) != string(again.Memories[0]) || again.NextCursor != second.NextCursor {
		t.Fatalf("repeated page: %+v vs %+v", second, again)
	}
	id, _, _ := strings.Cut(first.NextCursor, ".")
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Cursor: id + ".9"}, schemas.CodeInvalid)
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Cursor: "0123abcd.2"}, schemas.CodeNotFound)
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Cursor: "nope"}, schemas.CodeInvalid)
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Scope: "bad scope"}, schemas.CodeInvalid)
	queryWantError(t, nc, schemas.AdminSubject(schemas.OpExport), schemas.ExportRequest{Limit: -1}, schemas.CodeInvalid)

	// Agents have no bulk endpoints, and the in-process path refuses them.
	if _, err := nc.Request(querySubj("main", schemas.OpExport), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("agent export endpoint: %v", err)
	}
	res := svc.Answer(context.Background(), memory.Agent("main"), schemas.OpExport, nil)
	if !res.IsError || !strings.Contains(res.Content[0].Text, "admin") {
		t.Fatalf("agent export in-process: %+v", res)
	}

	// Stop ends the unfinished export's iteration.
	svc.Stop()
	svc.exportsMu.Lock()
	open := len(svc.exports)
	svc.exportsMu.Unlock()
	if open != 0 {
		t.Fatalf("%d exports open after Stop", open)
	}
}

func TestQueryAdminExportPagesFitThePayloadLimit(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := smallPayloadService(t, eng)
	queryFill(t, eng, 40)
	// 256 components of about 10 bytes each: a few rows fill 16 KB.
	got, pages := queryExportAll(t, nc, schemas.ExportRequest{WithVectors: true})
	if len(got) != 40 || pages < 5 {
		t.Fatalf("%d memories in %d pages", len(got), pages)
	}
}

func TestQueryAdminImport(t *testing.T) {
	src := queryTestEngine(t, nil)
	srcNC, _ := queryStart(t, src, DefaultConfig())
	stored := queryFill(t, src, 12)
	rows, _ := queryExportAll(t, srcNC, schemas.ExportRequest{WithVectors: true})

	emb := &queryCountingEmbedder{Embedder: queryLocalEmbedder(t)}
	dst := queryTestEngine(t, emb)
	nc, _ := queryStart(t, dst, DefaultConfig())
	subj := schemas.AdminSubject(schemas.OpImport)

	_, d := queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: rows, DryRun: true})
	if d.Imported != 12 || !d.DryRun || queryCount(t, dst) != 0 {
		t.Fatalf("dry run: %+v", d)
	}
	r, d := queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: rows})
	if d.Imported != 12 || d.Skipped != 0 || d.Failed != 0 || len(d.Results) != 0 || !strings.HasPrefix(r.text(), "Imported 12 of 12") {
		t.Fatalf("import: %q %+v", r.text(), d)
	}
	if emb.texts.Load() != 0 {
		t.Fatalf("rows with vectors of the store's size were re-embedded (%d texts)", emb.texts.Load())
	}
	for id, want := range stored {
		got, err := dst.Backend().Get(context.Background(), id, engine.AllScopes())
		if err != nil || got.Text != want.Text || got.Scope != want.Scope || got.Timestamp != want.Timestamp {
			t.Fatalf("%s: %+v %v", id, got, err)
		}
	}

	// Again: every id exists. Reported, unless the caller expects it.
	_, d = queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: rows})
	if d.Skipped != 12 || d.Exists != 12 || len(d.Results) != 12 || d.Results[0].Reason != "exists" {
		t.Fatalf("re-import: %+v", d)
	}
	_, d = queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: rows, SkipExisting: true})
	if d.Skipped != 12 || len(d.Results) != 0 {
		t.Fatalf("re-import, skip existing: %+v", d)
	}

	// New ids: duplicates are skipped (in their own scope only), bad rows fail alone.
	dup := rows[0]
	dup.ID, dup.Vector = "", nil
	other := dup
	other.Scope = "project:elsewhere"
	bad := schemas.Memory{Text: "fine text", Scope: "no spaces"}
	fresh := schemas.Memory{Text: "The quarterly planning doc lives in the shared drive", Category: "fact"}
	_, d = queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: []schemas.Memory{dup, other, bad, fresh}})
	if d.Imported != 2 || d.Duplicates != 1 || d.Failed != 1 || len(d.Results) != 2 {
		t.Fatalf("mixed batch: %+v", d)
	}
	for _, res := range d.Results {
		switch res.Line {
		case 1:
			if res.Reason != "duplicate" || res.DuplicateOf != rows[0].ID {
				t.Fatalf("duplicate: %+v", res)
			}
		case 3:
			if res.Status != "failed" || !strings.Contains(res.Reason, "scope") {
				t.Fatalf("bad scope: %+v", res)
			}
		default:
			t.Fatalf("unexpected result %+v", res)
		}
	}
	_, d = queryOKReply[schemas.ImportDetails](t, nc, subj, schemas.ImportRequest{Memories: []schemas.Memory{dup}, NoDedup: true, Scope: "custom:copy"})
	if d.Imported != 1 {
		t.Fatalf("no dedup, scope override: %+v", d)
	}
	queryWantError(t, nc, subj, `{"memories":[{"text":"x","colour":"red"}]}`, schemas.CodeInvalid)
	queryWantError(t, nc, subj, schemas.ImportRequest{Memories: rows, Scope: "team:undefined"}, schemas.CodeInvalid)
	if _, err := nc.Request(querySubj("main", schemas.OpImport), nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("agent import endpoint: %v", err)
	}
}

type queryCountingEmbedder struct {
	embed.Embedder
	texts atomic.Int64
}

func (e *queryCountingEmbedder) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	return e.Embedder.EmbedPassages(ctx, texts)
}

func queryCount(t *testing.T, eng *memory.Engine) int {
	t.Helper()
	st, err := eng.Backend().Stats(context.Background(), engine.AllScopes())
	if err != nil {
		t.Fatal(err)
	}
	return st.Total
}

func TestQueryAdminDeleteBulk(t *testing.T) {
	eng := queryTestEngine(t, nil)
	nc, _ := queryStart(t, eng, DefaultConfig())
	queryFill(t, eng, 9)
	subj := schemas.AdminSubject(schemas.OpDeleteBulk)
	r, d := queryOKReply[schemas.DeleteBulkDetails](t, nc, subj, schemas.DeleteBulkRequest{Scope: "custom:work", DryRun: true})
	if d.Count != 3 || !d.DryRun || queryCount(t, eng) != 9 || !strings.Contains(r.text(), "Would delete 3 memories in custom:work") {
		t.Fatalf("dry run: %q %+v", r.text(), d)
	}
	_, d = queryOKReply[schemas.DeleteBulkDetails](t, nc, subj, schemas.DeleteBulkRequest{Scope: "custom:work"})
	if d.Count != 3 || queryCount(t, eng) != 6 {
		t.Fatalf("delete: %+v", d)
	}
	_, d = queryOKReply[schemas.DeleteBulkDetails](t, nc, subj, schemas.DeleteBulkRequest{Before: time.Now().Add(time.Hour).UnixMilli()})
	if d.Count != 6 || queryCount(t, eng) != 0 {
		t.Fatalf("delete before: %+v", d)
	}
	queryWantError(t, nc, subj, schemas.DeleteBulkRequest{}, schemas.CodeInvalid)
	queryWantError(t, nc, subj, schemas.DeleteBulkRequest{Before: -1, Scope: "global"}, schemas.CodeInvalid)
	queryWantError(t, nc, subj, schemas.DeleteBulkRequest{Scope: "a b"}, schemas.CodeInvalid)
}
