package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSchemasUpToDate fails when a wire type changed without regenerating
// the committed JSON Schemas (go generate ./schemas/...).
func TestSchemasUpToDate(t *testing.T) {
	files, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "jsonschema")
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing: run `go generate ./schemas/...`", name)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if _, ok := files[e.Name()]; !ok {
			t.Errorf("%s has no Go type any more: delete it", e.Name())
		}
	}
}
