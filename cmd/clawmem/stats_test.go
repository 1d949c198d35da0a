package main

import (
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
