package portable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/schemas"
)

const testDims = 384

func testStore(t testing.TB) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{Dimensions: testDims})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// countingEmbedder is the local embedder, counting the texts it embeds and
// refusing any text containing "REFUSE" (as a model refuses bad input).
type countingEmbedder struct {
	embed.Embedder
	texts atomic.Int64
	down  atomic.Bool
}

func newCountingEmbedder(t testing.TB) *countingEmbedder {
	emb, err := embed.New(embed.Config{Provider: "local", Dimensions: testDims})
	if err != nil {
		t.Fatal(err)
	}
	return &countingEmbedder{Embedder: emb}
}

func (e *countingEmbedder) EmbedPassages(ctx context.Context, texts []string) ([][]float32, error) {
	if e.down.Load() {
		return nil, errors.New("connection refused")
	}
	for _, s := range texts {
		if strings.Contains(s, "REFUSE") {
			return nil, errors.New("input rejected by the model")
		}
	}
	e.texts.Add(int64(len(texts)))
	return e.Embedder.EmbedPassages(ctx, texts)
}

func readFixture(t testing.TB, name string, o ReadOptions) []Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, recs := readAll(t, data, o)
	return recs
}

func statuses(res []Result) string {
	var b strings.Builder
	for _, r := range res {
		b.WriteString(string(r.Status[0]))
	}
	return b.String()
}

func TestImportFixtures(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		file   string
		scope  string
		scopes []string
		cats   []schemas.Category
		imps   []float64
	}{
		{"memory-lancedb-pro-export.json", "", []string{"global", "agent:main", "project:billing", "custom:work", "global"},
			[]schemas.Category{"preference", "fact", "decision", "entity", "preference"}, []float64{0.8, 0.7, 0.9, 0.6, 0.7}},
		{"memory-lancedb-rows.jsonl", "", []string{"global", "global", "global", "global"},
			[]schemas.Category{"preference", "entity", "decision", "fact"}, []float64{0.7, 0.9, 0.7, 0.7}},
		{"memory-lancedb-rows.json", "agent:main", []string{"agent:main", "agent:main", "agent:main", "agent:main"},
			[]schemas.Category{"preference", "entity", "decision", "fact"}, []float64{0.7, 0.9, 0.7, 0.7}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			st := testStore(t)
			emb := newCountingEmbedder(t)
			recs := readFixture(t, c.file, ReadOptions{Scope: c.scope})
			res, err := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup}).Import(ctx, recs)
			if err != nil {
				t.Fatal(err)
			}
			if s := statuses(res); s != strings.Repeat("i", len(recs)) {
				t.Fatalf("statuses %s: %+v", s, res)
			}
			// The legacy rows' 8-dimensional vectors belong to another model.
			if emb.texts.Load() != int64(len(recs)) {
				t.Fatalf("embedded %d texts, want %d", emb.texts.Load(), len(recs))
			}
			for i, r := range recs {
				got, err := st.Get(ctx, r.Memory.ID, engine.AllScopes())
				if err != nil {
					t.Fatal(err)
				}
				if got.Scope != c.scopes[i] || got.Timestamp != r.Memory.Timestamp || got.Category != c.cats[i] ||
					got.Importance != c.imps[i] || got.Text != r.Memory.Text || len(got.Vector) != testDims {
					t.Errorf("row %d stored as %+v", i, got)
				}
			}
			again, err := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup}).Import(ctx, recs)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range again {
				if r.Status != Skipped || r.Reason != ReasonExists {
					t.Fatalf("second import: %+v", r)
				}
			}
		})
	}
	st := testStore(t)
	recs := readFixture(t, "memory-lancedb-pro-export.json", ReadOptions{})
	if _, err := NewImporter(st, newCountingEmbedder(t), ImportOptions{}).Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	got, _ := st.Get(ctx, recs[1].Memory.ID, engine.AllScopes())
	if string(got.Metadata) != `{"source":"auto-capture","sessionKey":"s-42"}` {
		t.Fatalf("the plugin's metadata string came out as %s", got.Metadata)
	}
}

func rec(line int, id, text, scope string, vec []float32) Record {
	return Record{Line: line, Memory: schemas.Memory{ID: id, Text: text, Scope: scope, Vector: vec, Timestamp: 1700000000000 + int64(line)}}
}

func uuidN(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func TestImportOutcomes(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	emb := newCountingEmbedder(t)
	stored := rec(1, uuidN(1), "The staging database lives on db-stage-2", "global", nil)
	if _, err := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup}).Import(ctx, []Record{stored}); err != nil {
		t.Fatal(err)
	}
	onlyDefined := func(s string) error {
		if strings.HasPrefix(s, "team:") {
			return errors.New("unknown scope " + s)
		}
		return nil
	}
	batch := []Record{
		rec(2, uuidN(1), "a different text under a stored id", "global", nil),                // exists
		rec(3, uuidN(3), "The staging database lives on db-stage-2", "global", nil),          // duplicate of the stored one
		rec(4, uuidN(4), "The staging database lives on db-stage-2", "agent:main", nil),      // same text, other scope: kept
		rec(5, uuidN(5), "We deploy with docker compose on the build server", "global", nil), // new
		rec(6, uuidN(6), "We deploy with docker compose on the build server", "global", nil), // duplicate of line 5
		rec(7, uuidN(5), "the same id again", "global", nil),                                 // id repeats line 5
		{Line: 8, Err: rowError("malformed JSON")},                                           // bad row
		rec(9, uuidN(9), "a scope the manager refuses", "team:x", nil),                       // scope check
		rec(10, "not-a-uuid", "ids must be UUIDs by now", "global", nil),                     // bad id
		rec(11, uuidN(11), "REFUSE this one", "global", nil),                                 // the model refuses it
		rec(12, "", "no id at all gets a derived one", "global", nil),                        // derived id
	}
	res, err := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup, ValidateScope: onlyDefined}).Import(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if s := statuses(res); s != "ssiissffffi" {
		t.Fatalf("statuses %s: %+v", s, res)
	}
	want := []struct{ reason, dupOf string }{
		{ReasonExists, ""}, {ReasonDuplicate, uuidN(1)}, {"", ""}, {"", ""}, {ReasonDuplicate, uuidN(5)}, {ReasonExists, ""},
		{"malformed JSON", ""}, {"unknown scope team:x", ""}, {`id "not-a-uuid" is not a UUID`, ""}, {"embed: input rejected by the model", ""}, {"", ""},
	}
	for i, w := range want {
		if res[i].Reason != w.reason || res[i].DuplicateOf != w.dupOf || res[i].Line != batch[i].Line {
			t.Errorf("line %d: %+v, want reason %q duplicate of %q", batch[i].Line, res[i], w.reason, w.dupOf)
		}
	}
	if res[1].Similarity < DefaultDedup {
		t.Errorf("duplicate similarity %v", res[1].Similarity)
	}
	derived := DerivedID("global", "no id at all gets a derived one", batch[10].Memory.Timestamp)
	if res[10].ID != derived {
		t.Errorf("derived id %s, want %s", res[10].ID, derived)
	}
	if st.Len() != 4 {
		t.Fatalf("%d memories stored, want 4", st.Len())
	}
	got, _ := st.Get(ctx, uuidN(1), engine.AllScopes())
	if got.Text != stored.Memory.Text {
		t.Fatalf("an existing memory was overwritten: %q", got.Text)
	}
}

func TestImportKeepsFittingVectors(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	emb := newCountingEmbedder(t)
	vec := make([]float32, testDims)
	vec[7] = 1
	res, err := NewImporter(st, emb, ImportOptions{Dedup: DefaultDedup}).Import(ctx, []Record{
		rec(1, uuidN(1), "carries a vector of the store's size", "global", vec),
		rec(2, uuidN(2), "carries another model's vector", "global", []float32{1, 2, 3}),
	})
	if err != nil || statuses(res) != "ii" {
		t.Fatalf("%v %+v", err, res)
	}
	if emb.texts.Load() != 1 {
		t.Fatalf("embedded %d texts, want only the one without a fitting vector", emb.texts.Load())
	}
	got, _ := st.Get(ctx, uuidN(1), engine.AllScopes())
	if got.Vector[7] != 1 {
		t.Fatalf("the row's own vector was replaced")
	}
}

func TestImportDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	emb := newCountingEmbedder(t)
	recs := readFixture(t, "memory-lancedb-pro-export.json", ReadOptions{})
	res, err := NewImporter(st, emb, ImportOptions{DryRun: true, Dedup: DefaultDedup}).Import(ctx, append(recs, Record{Line: 99, Err: rowError("bad")}))
	if err != nil || statuses(res) != "iiiiif" {
		t.Fatalf("%v %s", err, statuses(res))
	}
	if st.Len() != 0 || emb.texts.Load() != 0 {
		t.Fatalf("dry run stored %d and embedded %d", st.Len(), emb.texts.Load())
	}
}

func TestImportScopeOverride(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	recs := readFixture(t, "memory-lancedb-pro-export.json", ReadOptions{})
	if _, err := NewImporter(st, newCountingEmbedder(t), ImportOptions{Scope: "custom:restored"}).Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	s, _ := st.Stats(ctx, engine.AllScopes())
	if s.Total != 5 || s.ByScope["custom:restored"] != 5 {
		t.Fatalf("stats %+v", s)
	}
}

func TestImportEmbedderDown(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	emb := newCountingEmbedder(t)
	emb.down.Store(true)
	_, err := NewImporter(st, emb, ImportOptions{}).Import(ctx, readFixture(t, "memory-lancedb-rows.jsonl", ReadOptions{}))
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("want the embedder's error, got %v", err)
	}
	if st.Len() != 0 {
		t.Fatal("a failed batch wrote rows")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	emb.down.Store(false)
	if _, err := NewImporter(st, emb, ImportOptions{}).Import(cctx, readFixture(t, "memory-lancedb-rows.jsonl", ReadOptions{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled import: %v", err)
	}
}

func TestReport(t *testing.T) {
	var r Report
	r.QuietExists = true
	r.Add([]Result{{Status: Imported}, {Status: Skipped, Reason: ReasonExists}, {Status: Skipped, Reason: ReasonDuplicate}, {Status: Failed, Line: 4, Reason: "x"}})
	if r.Imported != 1 || r.Skipped != 2 || r.Exists != 1 || r.Duplicates != 1 || r.Failed != 1 || len(r.Failures) != 1 || len(r.Skips) != 1 || r.Total() != 4 {
		t.Fatalf("%+v", r)
	}
}

// An import marks core facts as a write through the engine does, from the
// text: a file's own mark is not trusted.
func TestImportMarksCoreFacts(t *testing.T) {
	ctx := context.Background()
	st := testStore(t)
	recs := []Record{
		{Line: 1, Memory: schemas.Memory{Text: "My name is Anna", Scope: "agent:main"}},
		{Line: 2, Memory: schemas.Memory{Text: "Lunch with the design team is every Friday at noon", Scope: "agent:main", Metadata: []byte(`{"core":true,"source":"x"}`)}},
	}
	if _, err := NewImporter(st, newCountingEmbedder(t), ImportOptions{}).Import(ctx, recs); err != nil {
		t.Fatal(err)
	}
	core, err := st.List(ctx, engine.ListOptions{Scopes: engine.AllScopes(), Core: true})
	if err != nil || len(core) != 1 || core[0].Text != "My name is Anna" {
		t.Fatalf("core memories after the import: %+v (%v)", core, err)
	}
	all, _ := st.List(ctx, engine.ListOptions{Scopes: engine.AllScopes()})
	for _, m := range all {
		if m.Text != "My name is Anna" && string(m.Metadata) != `{"source":"x"}` {
			t.Errorf("%q keeps metadata %s", m.Text, m.Metadata)
		}
	}
}
