package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// sampleID is the i-th id of the sample memories.
func sampleID(i int) string { return fmt.Sprintf("c0000000-0000-4000-8000-%012x", i) }

// sampleTexts share almost no words, so that none is a near-duplicate of
// another.
var sampleTexts = []string{
	"The build server is called hephaestus",
	"Deploys happen on Tuesdays after the standup",
	"Coffee is brewed at nine in the kitchen",
	"Maria prefers dark mode in every editor",
	"The billing project ships invoices monthly",
	"Our VPN gateway runs WireGuard on port 51820",
	"Grandma's birthday falls on the twelfth of March",
	"Passwords rotate every ninety days by policy",
	"The cat refuses food after midnight",
	"Rust compile times dropped after splitting crates",
	"Quarterly planning uses a shared spreadsheet",
	"Tom drives a green bicycle to the office",
}

// sampleMemories are the sample texts over three scopes, the last one a
// history row superseded by the first.
func sampleMemories() []schemas.Memory {
	scopes := []string{"global", "agent:main", "custom:work"}
	out := make([]schemas.Memory, len(sampleTexts))
	for i, text := range sampleTexts {
		out[i] = schemas.Memory{ID: sampleID(i + 1), Text: text, Category: schemas.CategoryFact, Scope: scopes[i%len(scopes)],
			Importance: float64(i%10) / 10, Timestamp: 1_700_000_000_000 + int64(i)*1000}
	}
	last := &out[len(out)-1]
	last.SupersededBy, last.InvalidatedAt = out[0].ID, 1_710_000_000_000
	return out
}

// writeJSONL writes mems as an export file, then the raw lines extra.
func writeJSONL(t *testing.T, mems []schemas.Memory, extra ...string) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := portable.NewWriter(&buf, portable.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range extra {
		buf.WriteString(l + "\n")
	}
	path := filepath.Join(t.TempDir(), "memories.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stored is every memory of b by id.
func stored(t *testing.T, b client.Bulk) map[string]schemas.Memory {
	t.Helper()
	out := map[string]schemas.Memory{}
	if err := b.Export(context.Background(), "", false, func(m schemas.Memory) error {
		out[m.ID] = m
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameMemories fails unless got holds exactly want, field by field.
func sameMemories(t *testing.T, want []schemas.Memory, got map[string]schemas.Memory) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d memories stored, want %d", len(got), len(want))
	}
	for _, w := range want {
		g, ok := got[w.ID]
		if !ok {
			t.Fatalf("memory %s (%q) is missing", w.ID, w.Text)
		}
		if g.Text != w.Text || g.Scope != w.Scope || g.Category != w.Category || g.Importance != w.Importance ||
			g.Timestamp != w.Timestamp || g.SupersededBy != w.SupersededBy || g.InvalidatedAt != w.InvalidatedAt {
			t.Fatalf("memory %s:\n got  %+v\n want %+v", w.ID, g, w)
		}
	}
}

// importFile imports the file at path into b with job, chains checked.
func importFile(t *testing.T, b client.Bulk, path string, job client.ImportJob) (client.ImportOutcome, error) {
	t.Helper()
	ctx := context.Background()
	src, err := client.OpenFileSource(path, job.Options.Scope)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	checked, err := client.ChainChecked(ctx, src, b)
	if err != nil {
		t.Fatal(err)
	}
	return client.Import(ctx, b, checked, job)
}

// progressLog records the progress calls of one operation.
type progressLog []client.Progress

func (l *progressLog) add(p client.Progress) { *l = append(*l, p) }

// check fails unless the calls start at 0, never go back, and end with
// one Final call at done.
func (l progressLog) check(t *testing.T, done int64) {
	t.Helper()
	if len(l) < 2 || l[0].Done != 0 || l[0].Final {
		t.Fatalf("progress %+v: want a start at 0", l)
	}
	for i := 1; i < len(l); i++ {
		if l[i].Done < l[i-1].Done || l[i].Total != l[0].Total || l[i-1].Final {
			t.Fatalf("progress %+v: call %d", l, i)
		}
	}
	if last := l[len(l)-1]; !last.Final || last.Done != done {
		t.Fatalf("progress ends with %+v, want Final at %d", last, done)
	}
}

// TestExportImportRoundTrip: a file goes into one store, out again as
// JSONL (whole, and one scope as the JSON document), and into a fresh
// store unchanged, history included — on both targets, with progress
// reported from 0 to the end.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	want := sampleMemories()
	file := writeJSONL(t, want)
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	from, to := bulks(t), bulks(t)
	for name, src := range from {
		t.Run(name, func(t *testing.T) {
			dst := to[name]
			defer src.Close()
			defer dst.Close()
			var ip progressLog
			out, err := importFile(t, src, file, client.ImportJob{BatchSize: 5, Progress: ip.add})
			if err != nil || out.Imported != len(want) || out.Failed != 0 || out.Error != "" {
				t.Fatalf("import: %+v, %v", out, err)
			}
			if !strings.Contains(out.Source, "memories.jsonl (JSONL)") || out.Note != "" {
				t.Errorf("outcome names %q, note %q", out.Source, out.Note)
			}
			ip.check(t, fi.Size())
			if r := ip[len(ip)-1].Report; r == nil || r.Imported != len(want) || !ip[0].Bytes || ip[0].Total != fi.Size() {
				t.Errorf("import progress %+v", ip)
			}

			var ep progressLog
			path := filepath.Join(t.TempDir(), "out.jsonl")
			n, err := client.ExportFile(ctx, src, path, client.ExportOptions{Progress: ep.add})
			if err != nil || n != len(want) {
				t.Fatalf("export: %d, %v", n, err)
			}
			ep.check(t, int64(len(want)))
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("the export left %d files behind", len(entries))
			}
			if out, err := importFile(t, dst, path, client.ImportJob{}); err != nil || out.Imported != len(want) {
				t.Fatalf("re-import: %+v, %v", out, err)
			}
			sameMemories(t, want, stored(t, dst))

			var doc bytes.Buffer
			n, err = client.Export(ctx, src, &doc, client.ExportOptions{Scope: "custom:work", Format: portable.JSON})
			if err != nil || n != 4 || !strings.Contains(doc.String(), `"filters": {"scope":"custom:work"}`) || !strings.Contains(doc.String(), `"count": 4`) {
				t.Fatalf("scope export: %d, %v\n%s", n, err, doc.String())
			}
		})
	}
}

// TestExportFileFailure: an export that cannot be written leaves nothing
// where the file was to be.
func TestExportFileFailure(t *testing.T) {
	b := bulks(t)["local"]
	defer b.Close()
	if _, err := client.ExportFile(context.Background(), b, filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"), client.ExportOptions{}); err == nil {
		t.Fatal("an export into a missing directory succeeded")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if _, err := client.ExportFile(context.Background(), b, path, client.ExportOptions{Format: "xml"}); err == nil {
		t.Fatal("an unknown format was written")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed export left %v", entries)
	}
}

// TestImportDryRunSkipExisting: a dry run reports every row and stores
// nothing; a second import finds every id stored, listing each skip unless
// SkipExisting says they are expected.
func TestImportDryRunSkipExisting(t *testing.T) {
	want := sampleMemories()
	file := writeJSONL(t, want)
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			ctx := context.Background()
			dry, err := importFile(t, b, file, client.ImportJob{Options: client.ImportOptions{DryRun: true}})
			if err != nil || dry.Imported != len(want) || !dry.DryRun {
				t.Fatalf("dry run: %+v, %v", dry, err)
			}
			if n, err := b.Count(ctx, ""); err != nil || n != 0 {
				t.Fatalf("a dry run stored %d memories (%v)", n, err)
			}
			var text bytes.Buffer
			dry.WriteText(&text, 50, "")
			if !strings.HasPrefix(text.String(), fmt.Sprintf("would import %d of %d rows from ", len(want), len(want))) {
				t.Errorf("dry-run text: %s", text.String())
			}

			if out, err := importFile(t, b, file, client.ImportJob{}); err != nil || out.Imported != len(want) {
				t.Fatalf("import: %+v, %v", out, err)
			}
			again, err := importFile(t, b, file, client.ImportJob{})
			if err != nil || again.Exists != len(want) || len(again.Skips) != len(want) || again.Imported != 0 {
				t.Fatalf("import again: %+v, %v", again.Report, err)
			}
			resumed, err := importFile(t, b, file, client.ImportJob{SkipExisting: true, BatchSize: 3})
			if err != nil || resumed.Exists != len(want) || len(resumed.Skips) != 0 {
				t.Fatalf("resumed import: %+v, %v", resumed.Report, err)
			}
			sameMemories(t, want, stored(t, b))
		})
	}
}

// TestImportBadLines: rows that cannot be read, or break their supersede
// chain, fail by line with their reason; every other row is stored, and
// the text report names them.
func TestImportBadLines(t *testing.T) {
	good := sampleMemories()[:4]
	file := writeJSONL(t, good,
		`{"text":"unterminated`,
		`{"text":42}`,
		`{"id":"`+sampleID(90)+`","text":"I worked at Siemens","scope":"global","timestamp":1700000000000,"supersededBy":"`+sampleID(99)+`","invalidatedAt":1710000000000}`,
		`{"id":"`+sampleID(91)+`","text":"The office is in Brno","scope":"global","timestamp":1700000000000,"supersededBy":"`+sampleID(92)+`","invalidatedAt":1710000000000}`,
		`{"id":"`+sampleID(92)+`","text":"The office is in Prague","scope":"global","timestamp":1700000000000,"supersededBy":"`+sampleID(91)+`","invalidatedAt":1710000000000}`,
		``,
		`{"id":"`+sampleID(93)+`","text":"Lunch is at noon sharp","scope":"global","timestamp":1700000000000}`,
	)
	wantReasons := map[int]string{5: "malformed JSON", 6: `field "text" must be a string`, 7: "missing link", 8: "cycle", 9: "cycle"}
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			out, err := importFile(t, b, file, client.ImportJob{BatchSize: 2})
			if err != nil || out.Imported != 5 || out.Failed != 5 || out.Total() != 10 {
				t.Fatalf("import: %+v, %v", out.Report, err)
			}
			for _, f := range out.Failures {
				if !strings.Contains(f.Reason, wantReasons[f.Line]) || wantReasons[f.Line] == "" {
					t.Errorf("failure %+v, want line %d to say %q", f, f.Line, wantReasons[f.Line])
				}
			}
			got := stored(t, b)
			sameMemories(t, good, map[string]schemas.Memory{good[0].ID: got[good[0].ID], good[1].ID: got[good[1].ID], good[2].ID: got[good[2].ID], good[3].ID: got[good[3].ID]})
			if _, ok := got[sampleID(93)]; !ok || len(got) != 5 {
				t.Fatalf("stored %d memories, want the 5 good rows", len(got))
			}
			var text bytes.Buffer
			out.WriteText(&text, 2, " (see the report)")
			for _, s := range []string{"imported 5 of 10 rows", "5 failed", "line 5: failed: malformed JSON", "  … and 3 more (see the report)"} {
				if !strings.Contains(text.String(), s) {
					t.Errorf("text report lacks %q:\n%s", s, text.String())
				}
			}
		})
	}
}

// TestImportRefused: an option the target refuses for every row stops the
// import before any row, as an ImportRefusedError.
func TestImportRefused(t *testing.T) {
	file := writeJSONL(t, sampleMemories())
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			var p progressLog
			_, err := importFile(t, b, file, client.ImportJob{Options: client.ImportOptions{Scope: "team:x"}, Progress: p.add})
			if _, ok := errors.AsType[client.ImportRefusedError](err); !ok || !strings.Contains(err.Error(), "team:x") {
				t.Fatalf("err %v, want the scope refused", err)
			}
			if n, _ := b.Count(context.Background(), ""); n != 0 || len(p) != 0 {
				t.Fatalf("a refused import stored %d memories, reported %+v", n, p)
			}
		})
	}
}

// failingBulk fails every import batch after the first ok ones.
type failingBulk struct {
	client.Bulk
	ok int
}

func (f *failingBulk) ImportBatch(ctx context.Context, recs []portable.Record, o client.ImportOptions) ([]portable.Result, error) {
	if f.ok == 0 {
		return nil, errors.New("the disk is full")
	}
	f.ok--
	return f.Bulk.ImportBatch(ctx, recs, o)
}

// TestImportStopsAtTargetError: the first batch the target cannot take
// stops the import with the report so far; the rows of earlier batches
// stay, and a rerun that skips existing ids stores the rest.
func TestImportStopsAtTargetError(t *testing.T) {
	want := sampleMemories()
	file := writeJSONL(t, want)
	for name, b := range bulks(t) {
		t.Run(name, func(t *testing.T) {
			defer b.Close()
			var p progressLog
			out, err := importFile(t, &failingBulk{Bulk: b, ok: 2}, file, client.ImportJob{BatchSize: 3, Progress: p.add})
			if err == nil || !strings.Contains(out.Error, "the disk is full") || out.Imported != 6 {
				t.Fatalf("import into a failing target: %+v, %v", out.Report, err)
			}
			if last := p[len(p)-1]; !last.Final || last.Report.Imported != 6 {
				t.Fatalf("last progress %+v", last)
			}
			if n, _ := b.Count(context.Background(), ""); n != 6 {
				t.Fatalf("%d stored, want the 6 rows of the first two batches", n)
			}
			again, err := importFile(t, b, file, client.ImportJob{SkipExisting: true})
			if err != nil || again.Exists != 6 || again.Imported != len(want)-6 {
				t.Fatalf("rerun: %+v, %v", again.Report, err)
			}
			sameMemories(t, want, stored(t, b))
		})
	}
}

func TestDescribeResult(t *testing.T) {
	cases := map[string]portable.Result{
		"line 3: failed: malformed JSON":                       {Line: 3, Status: portable.Failed, Reason: "malformed JSON"},
		"row: skipped: exists (id abc)":                        {Status: portable.Skipped, Reason: portable.ReasonExists, ID: "abc"},
		"line 7: skipped: duplicate of c0000000 (96% similar)": {Line: 7, Status: portable.Skipped, Reason: portable.ReasonDuplicate, DuplicateOf: sampleID(1), Similarity: 0.96},
		"row: skipped: duplicate of ab (100% similar)":         {Status: portable.Skipped, Reason: portable.ReasonDuplicate, DuplicateOf: "ab", Similarity: 1},
	}
	for want, r := range cases {
		if got := client.DescribeResult(r); got != want {
			t.Errorf("DescribeResult(%+v) = %q, want %q", r, got, want)
		}
	}
}

// TestReembedInPlace: every memory, history included, gets the vector the
// store's model gives its text; the rest stays; a dry run changes nothing.
func TestReembedInPlace(t *testing.T) {
	ctx := context.Background()
	emb := testkit.LocalEmbedder(t, 256)
	eng, _ := testkit.Engine(t, "", emb)
	want := sampleMemories()
	stale := make([]float32, 256)
	stale[0] = 1
	mems := slices.Clone(want)
	for i := range mems {
		mems[i].Vector = stale
	}
	if err := eng.Backend().Import(ctx, mems...); err != nil {
		t.Fatal(err)
	}
	b := &client.LocalBulk{Dir: "test", Store: eng.Backend(), Engine: eng}
	vectors := func() map[string][]float32 {
		out := map[string][]float32{}
		if err := b.Store.Iterate(ctx, engine.IterateOptions{Scopes: engine.AllScopes(), WithVectors: true}, func(m schemas.Memory) error {
			out[m.ID] = m.Vector
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	done, total, err := client.ReembedInPlace(ctx, b, client.ReembedOptions{DryRun: true})
	if err != nil || done != 0 || total != len(want) {
		t.Fatalf("dry run: %d of %d, %v", done, total, err)
	}
	for id, v := range vectors() {
		if !slices.Equal(v, stale) {
			t.Fatalf("a dry run changed %s's vector", id)
		}
	}

	var p progressLog
	done, total, err = client.ReembedInPlace(ctx, b, client.ReembedOptions{BatchSize: 5, Progress: p.add})
	if err != nil || done != len(want) || total != len(want) {
		t.Fatalf("re-embed: %d of %d, %v", done, total, err)
	}
	p.check(t, int64(len(want)))
	texts := make([]string, len(want))
	for i, m := range want {
		texts[i] = m.Text
	}
	fresh, err := emb.EmbedPassages(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	got := vectors()
	for i, m := range want {
		if !slices.Equal(got[m.ID], fresh[i]) {
			t.Fatalf("%s was not re-embedded", m.ID)
		}
	}
	sameMemories(t, want, stored(t, b))

	if _, _, err := client.ReembedInPlace(ctx, &client.LocalBulk{Dir: "test", Store: eng.Backend()}, client.ReembedOptions{}); err == nil {
		t.Fatal("a store opened without its model was re-embedded")
	}
}

func TestParseBefore(t *testing.T) {
	cases := map[string]int64{
		"2025-01-01":           time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		"2025-01-01T10:00:00Z": time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"2025-01-01 10:00:00":  time.Date(2025, 1, 1, 10, 0, 0, 0, time.UTC).UnixMilli(),
		"1700000000000":        1700000000000,
	}
	for in, want := range cases {
		if got, err := client.ParseBefore(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "yesterday", "-5", "0"} {
		if _, err := client.ParseBefore(bad); !errors.Is(err, schemas.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
}

// FuzzParseBefore: any input is either refused as invalid or read as a
// time that reads back the same.
func FuzzParseBefore(f *testing.F) {
	for _, s := range []string{"2025-01-01", "2025-01-01T10:00:00.5+02:00", "2025-01-01 10:00:00", "1700000000000", "0", "-1", "", "9999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := client.ParseBefore(s)
		if err != nil {
			if !errors.Is(err, schemas.ErrInvalid) {
				t.Fatalf("%q: error %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := client.ParseBefore(fmt.Sprint(ms))
		if ms > 0 && (err != nil || again != ms) {
			t.Fatalf("%q = %d, which reads back as %d, %v", s, ms, again, err)
		}
	})
}

// TestDeleteBulkRequest: a bulk delete needs a filter, and reads its date.
func TestDeleteBulkRequest(t *testing.T) {
	if _, err := client.DeleteBulkRequest("", "", true); err == nil || !strings.Contains(err.Error(), "never deletes everything") {
		t.Fatalf("no filter: %v", err)
	}
	if _, err := client.DeleteBulkRequest("global", "soon", false); !errors.Is(err, schemas.ErrInvalid) {
		t.Fatalf("bad date: %v", err)
	}
	r, err := client.DeleteBulkRequest("custom:work", "2025-01-01", true)
	if err != nil || r != (schemas.DeleteBulkRequest{Scope: "custom:work", Before: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), DryRun: true}) {
		t.Fatalf("request %+v, %v", r, err)
	}
}
