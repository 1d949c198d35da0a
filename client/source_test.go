package client_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/client"
	"github.com/clawmem/clawmem/engine/portable"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/testkit"
	"github.com/clawmem/clawmem/schemas"
)

// storeDir writes mems into a new clawmem store directory (embedded with a
// 256-dimension model) and closes it, so that it can be read as a source.
func storeDir(t *testing.T, mems []schemas.Memory) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	eng, closeStore := testkit.Engine(t, dir, testkit.LocalEmbedder(t, 256))
	recs := make([]portable.Record, len(mems))
	for i, m := range mems {
		recs[i] = portable.Record{Memory: m}
	}
	b := &client.LocalBulk{Dir: dir, Store: eng.Backend(), Engine: eng}
	res, err := b.ImportBatch(context.Background(), recs, client.ImportOptions{NoDedup: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Status != portable.Imported {
			t.Fatalf("fixture row %+v", r)
		}
	}
	closeStore()
	return dir
}

// readAll reads every row of src.
func readAll(t *testing.T, src client.Source) []portable.Record {
	t.Helper()
	var out []portable.Record
	if err := src.Rows(context.Background(), func(r portable.Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKindOf tells the sources apart by what is on disk.
func TestKindOf(t *testing.T) {
	root := t.TempDir()
	file := writeJSONL(t, sampleMemories()[:1])
	store := storeDir(t, sampleMemories()[:1])
	lance := filepath.Join(root, "lancedb")
	unknown := filepath.Join(root, "empty")
	for _, d := range []string{filepath.Join(lance, "memories.lance"), unknown} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]client.SourceKind{
		filepath.Join(root, "nothing"): client.KindMissing,
		file:                           client.KindFile,
		store:                          client.KindStore,
		filepath.Join(store, sqlitestore.FileName): client.KindStore, // the database file stands for its store
		lance:   client.KindLance,
		unknown: client.KindUnknown,
	}
	for path, want := range cases {
		if got := client.KindOf(path); got != want {
			t.Errorf("KindOf(%s) = %d, want %d", path, got, want)
		}
	}
	if !client.IsStoreDir(store) || client.IsStoreDir(unknown) || client.IsStoreDir(file) {
		t.Error("IsStoreDir told the store wrong")
	}
}

// TestOpenSource opens each kind of source: an export file, a clawmem
// store (by its directory or its database file, history included, vectors
// kept or dropped, scope replaced), and says clearly what is wrong with a
// path that is none.
func TestOpenSource(t *testing.T) {
	ctx := context.Background()
	want := sampleMemories()
	file := writeJSONL(t, want)
	store := storeDir(t, want)

	src, err := client.OpenSource(ctx, file, "")
	if err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, src)
	if len(recs) != len(want) || recs[0].Line != 1 || recs[0].Memory.ID != want[0].ID || !strings.HasSuffix(src.Describe(), "memories.jsonl (JSONL)") {
		t.Fatalf("file source %q read %d rows, first %+v", src.Describe(), len(recs), recs[0])
	}
	if n, bytes := src.Size(ctx); !bytes || src.Position() != n {
		t.Errorf("file source at %d of %d bytes (%v) after reading", src.Position(), n, bytes)
	}
	src.Close()

	for _, path := range []string{store, filepath.Join(store, sqlitestore.FileName)} {
		src, err := client.OpenSource(ctx, path, "custom:moved")
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if n, bytes := src.Size(ctx); n != int64(len(want)) || bytes {
			t.Errorf("store source size %d (%v), want %d rows with history", n, bytes, len(want))
		}
		recs := readAll(t, src)
		if len(recs) != len(want) || src.Position() != int64(len(want)) || src.Note() != "" {
			t.Fatalf("store source read %d rows", len(recs))
		}
		for _, r := range recs {
			if r.Memory.Scope != "custom:moved" || len(r.Memory.Vector) != 256 || r.Line != 0 {
				t.Fatalf("store row %+v", r.Memory)
			}
		}
		if !strings.Contains(src.Describe(), "clawmem store at "+store+" (256 dimensions)") {
			t.Errorf("described as %q", src.Describe())
		}
		src.Close()
	}
	noVectors, err := client.OpenStoreSource(ctx, store, "", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range readAll(t, noVectors) {
		if r.Memory.Vector != nil || r.Memory.Scope == "custom:moved" {
			t.Fatalf("a re-embed source offered %+v", r.Memory)
		}
	}
	noVectors.Close()

	lance := filepath.Join(t.TempDir(), "lancedb")
	if err := os.MkdirAll(filepath.Join(lance, "memories.lance"), 0o755); err != nil {
		t.Fatal(err)
	}
	errs := map[string]string{
		filepath.Join(t.TempDir(), "nothing"): "does not exist",
		t.TempDir():                           "is no clawmem store (no " + sqlitestore.FileName + " in it) and no LanceDB database",
		lance:                                 "-tags lancedb",
	}
	for path, want := range errs {
		if _, err := client.OpenSource(ctx, path, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenSource(%s) = %v, want %q", path, err, want)
		}
	}
	if _, err := client.OpenFileSource(t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "is a directory, not an export file") {
		t.Errorf("a directory as a file: %v", err)
	}
}

// TestFileSourceNote: a JSON document whose count disagrees with its rows
// says so.
func TestFileSourceNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.json")
	doc := `{"version":"1.0","memories":[{"text":"Lunch is at noon sharp"},{"text":"The cat refuses food after midnight"}],"count":3}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := client.OpenFileSource(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if recs := readAll(t, src); len(recs) != 2 {
		t.Fatalf("%d rows", len(recs))
	}
	if note := src.Note(); !strings.Contains(note, "says it holds 3 memories; 2 rows were read") {
		t.Fatalf("note %q", note)
	}
	if !strings.Contains(src.Describe(), "JSON export document") {
		t.Fatalf("described as %q", src.Describe())
	}
}

// TestChainCheckedStdin: standard input cannot be read twice, so its rows
// go in unchecked rather than not at all.
func TestChainCheckedStdin(t *testing.T) {
	b := bulks(t)["local"]
	defer b.Close()
	src, err := client.OpenFileSource("-", "")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	checked, err := client.ChainChecked(context.Background(), src, b)
	if err != nil || checked != client.Source(src) {
		t.Fatalf("ChainChecked(stdin) = %v, %v; want the source itself", checked, err)
	}
}

func TestSameDir(t *testing.T) {
	store := storeDir(t, sampleMemories()[:1])
	if !client.SameDir(store, store+"/") || !client.SameDir(filepath.Join(store, sqlitestore.FileName), store) {
		t.Error("a store and its database file are not the same directory")
	}
	if client.SameDir(store, t.TempDir()) {
		t.Error("two directories are the same")
	}
	missing := filepath.Join(t.TempDir(), "new")
	if !client.SameDir(missing, missing+"/.") {
		t.Error("two spellings of a path that does not exist yet differ")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	if !client.SameDir("~/store", filepath.Join(home, "store")) {
		t.Error("~ is not the home directory")
	}
}
