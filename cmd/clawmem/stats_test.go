package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A fresh install's stats says what rerank runs and which setting changes
// it, not that a cross-encoder it never asked for lacks an endpoint.
func TestStatsSaysTheDefaultRerankPlainly(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "")
	code, out, errOut := runCLI(t, "stats", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("stats: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "rerank cosine similarity (the default without a cross-encoder: set retrieval.rerankApiKey") ||
		strings.Contains(out, "endpoint") {
		t.Fatalf("stats:\n%s", out)
	}
}

// doctor and stats count a stopped clawmem's store alike: the memories
// that hold, and the history besides, said the same way.
func TestDoctorAndStatsCountAlike(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "")
	rows := `{"id":"c1000000-0000-4000-8000-000000000001","text":"I drink tea now","scope":"global","timestamp":1710000000000}
{"id":"c2000000-0000-4000-8000-000000000002","text":"I walk to work","scope":"global","timestamp":1710000000000}
{"id":"c3000000-0000-4000-8000-000000000003","text":"I drink coffee","scope":"global","timestamp":1700000000000,"supersededBy":"c1000000-0000-4000-8000-000000000001","invalidatedAt":1710000000000}
`
	file := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(file, []byte(rows), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := portImport(t, 0, "import", file, "--data-dir", dir); rep.Imported != 3 {
		t.Fatalf("import: %+v", rep.Report)
	}
	const want = "2 memories (plus 1 in history: superseded or archived)"
	code, out, errOut := runCLI(t, "stats", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, "Total: "+want+"\n") {
		t.Fatalf("stats (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
	}
	code, out, errOut = runCLI(t, "doctor", "--data-dir", dir)
	if code != 0 || !strings.Contains(out, ": "+want+", ") {
		t.Fatalf("doctor (exit %d) does not say %q:\n%s%s", code, want, out, errOut)
	}
}
