package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/node"
)

// TestUpStartsWhileTheEmbedderHangs: with an embedding endpoint that never
// answers, clawmem up is serving before the self-tests have given up, and
// doctor then reports both as timed out.
func TestUpStartsWhileTheEmbedderHangs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs clawmem up in process")
	}
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	prev := node.CheckTimeout
	node.CheckTimeout = 4 * time.Second
	t.Cleanup(func() { node.CheckTimeout = prev })

	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf(`,"embedding":{"baseURL":%q,"model":"nomic-embed-text","apiKey":"k"}`, hang.URL+"/v1"))
	started := time.Now()
	logs, _ := serveInProcess(t, dir, node.RoleStore, node.RoleQuery)
	report := filepath.Join(dir, node.StartupChecksFile)
	if _, err := os.Stat(report); err == nil {
		t.Fatalf("start-up waited %v for the self-tests", time.Since(started))
	}
	// Serving already: a query answers while the embedder check hangs.
	if code, out, errOut := runCLI(t, "stats", "--data-dir", dir); code != 0 {
		t.Fatalf("stats while the checks run: %d %s %s", code, out, errOut)
	}
	code, out, _ := runCLI(t, "doctor", "--data-dir", dir)
	if code != 1 || !strings.Contains(out, "[ok  ] store     "+filepath.Join(dir, "store")+" is open in a running clawmem") {
		t.Fatalf("doctor while running: %d\n%s", code, out)
	}
	waitUntil(t, 20*time.Second, func() error {
		_, err := os.Stat(report)
		return err
	})
	if !strings.Contains(logs.String(), "startup check failed") {
		t.Fatalf("log lacks the failed checks:\n%s", logs.String())
	}
	code, out, _ = runCLI(t, "doctor", "--data-dir", dir)
	// The embedder check fails; the retrieval check answers all the same,
	// from BM25 alone (recall's fallback while the embedder is down).
	for _, want := range []string{"[FAIL] startup   embedder: timed out after 4s", "[ok  ] startup   retrieval: a test recall answered: mode bm25"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, out)
		}
	}
}
