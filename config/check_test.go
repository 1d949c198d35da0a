package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckReportsEveryProblemAsData(t *testing.T) {
	dir := t.TempDir()
	ok := Check(Options{DataDir: dir})
	if !ok.OK || len(ok.Errors) != 0 || ok.File != "" {
		t.Fatalf("no file: %+v", ok)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, []byte(`{"embedding": {"dimensions": "many"}, "retrievl": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := Check(Options{Path: path, DataDir: dir})
	if bad.OK || bad.File != path || len(bad.Errors) < 2 {
		t.Fatalf("bad file: %+v", bad)
	}
	var text strings.Builder
	bad.WriteText(&text)
	if !strings.Contains(text.String(), "error(s)") || strings.Count(text.String(), "error:") != len(bad.Errors) {
		t.Fatalf("text:\n%s", text.String())
	}
}
