package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// show prints a memory for a person, one field a line (importance and
// metadata included) and the facts around it; an unknown id is said once,
// on stderr, with a non-zero exit.
func TestShowReadsAsFieldsAndFailsOnce(t *testing.T) {
	dir := t.TempDir()
	const (
		tea    = "c1000000-0000-4000-8000-000000000001"
		coffee = "c2000000-0000-4000-8000-000000000002"
	)
	rows := []string{
		`{"id":"` + coffee + `","text":"I drink coffee","category":"preference","scope":"agent:main","importance":0.4,"timestamp":1700000000000,"supersededBy":"` + tea + `","invalidatedAt":1710000000000}`,
		`{"id":"` + tea + `","text":"I drink tea now","category":"preference","scope":"agent:main","importance":0.8,"timestamp":1710000000000,` +
			`"metadata":{"source":"chat","turn":3}}`,
	}
	file := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(rows, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "store")
	if rep := portImport(t, 0, "import", file, "--data-dir", dir, "--db", db); rep.Imported != 2 {
		t.Fatalf("import: %+v", rep.Report)
	}
	code, out, errOut := runCLI(t, "show", tea[:8], "--data-dir", dir, "--db", db)
	want := []string{
		"id:         " + tea + "\n",
		"text:       I drink tea now\n",
		"category:   preference\n",
		"scope:      agent:main\n",
		"importance: 0.80\n",
		"created:    2024-03-09 16:00 UTC\n",
		"status:     current\n",
		"metadata:   source: chat\n            turn: 3\n",
		"replaced [" + coffee[:8] + "] 2023-11-14  I drink coffee\n",
	}
	for _, w := range want {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("show (exit %d) lacks %q:\n%s%s", code, w, out, errOut)
		}
	}
	code, out, _ = runCLI(t, "show", coffee, "--data-dir", dir, "--db", db)
	if code != 0 || !strings.Contains(out, "status:     superseded by "+tea[:8]+" 2024-03-09 16:00 UTC\n") ||
		!strings.Contains(out, "replaced by ["+tea[:8]+"] 2024-03-09  I drink tea now\n") || strings.Contains(out, "metadata:") {
		t.Fatalf("show of the replaced fact (exit %d):\n%s", code, out)
	}

	code, out, errOut = runCLI(t, "show", "d0000000-0000-4000-8000-000000000009", "--data-dir", dir, "--db", db)
	if code != 1 || out != "" || strings.Count(errOut, "not found") != 1 {
		t.Fatalf("unknown id: exit %d, stdout %q, stderr %q; want exit 1 and one message on stderr", code, out, errOut)
	}
}
