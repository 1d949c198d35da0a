package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
)

// stuckEmbedder never answers and ignores its context, like a client with
// no deadline on a dead connection.
type stuckEmbedder struct {
	embed.Embedder
	release chan struct{}
}

func (s stuckEmbedder) EmbedQuery(context.Context, string) ([]float32, error) {
	<-s.release
	return nil, fmt.Errorf("released")
}

func (s stuckEmbedder) Test(context.Context) embed.TestResult {
	<-s.release
	return embed.TestResult{Error: "released"}
}

func TestStartupChecksTimeOutOnAStuckEmbedder(t *testing.T) {
	local, err := embed.New(embed.Config{Provider: "local", Dimensions: 64})
	if err != nil {
		t.Fatal(err)
	}
	emb := stuckEmbedder{Embedder: local, release: make(chan struct{})}
	defer close(emb.release)
	st, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{Dimensions: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ret, err := retrieve.New(st, retrieve.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sm, _ := scopes.New(scopes.Config{})
	eng := memory.New(st, emb, ret, sm)

	logs := &lockedBuffer{}
	start := time.Now()
	checks := startupChecks(context.Background(), eng, 200*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
	// Both run at once, each within its own bound.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("checks took %v with a 200ms bound each", took)
	}
	if len(checks) != 2 {
		t.Fatalf("checks: %+v", checks)
	}
	for i, name := range []string{"embedder", "retrieval"} {
		if c := checks[i]; c.Name != name || c.OK || c.Detail != "timed out after 200ms" {
			t.Errorf("check %d: %+v", i, c)
		}
	}
	if !strings.Contains(logs.String(), "startup check failed") || !strings.Contains(logs.String(), "timed out after 200ms") {
		t.Fatalf("log: %s", logs.String())
	}

	// A working engine passes both.
	ok := memory.New(st, local, ret, sm)
	for _, c := range selfTests(context.Background(), ok, 5*time.Second) {
		if !c.OK {
			t.Errorf("%+v", c)
		}
	}
}

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
	prev := checkTimeout
	checkTimeout = 4 * time.Second
	t.Cleanup(func() { checkTimeout = prev })

	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf(`,"embedding":{"baseURL":%q,"model":"nomic-embed-text","apiKey":"k"}`, hang.URL+"/v1"))
	started := time.Now()
	logs, _ := serveInProcess(t, dir, roleStore, roleQuery)
	report := filepath.Join(dir, startupChecksFile)
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
	for _, want := range []string{"embedder: timed out after 4s", "retrieval: timed out after 4s"} {
		if code != 1 || !strings.Contains(out, "[FAIL] startup   "+want) {
			t.Fatalf("doctor lacks %q:\n%s", want, out)
		}
	}
}
