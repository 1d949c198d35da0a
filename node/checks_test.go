package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/embed"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/engine/retrieve"
	"github.com/clawmem/clawmem/engine/scopes"
	"github.com/clawmem/clawmem/engine/sqlitestore"
	"github.com/clawmem/clawmem/internal/storeopen"
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

	logs := &strings.Builder{}
	start := time.Now()
	checks := StartupChecks(context.Background(), eng, 200*time.Millisecond, slog.New(slog.NewTextHandler(logs, nil)))
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

// doctor's store checks say where the vectors came from: the segment after
// a clean close, the database with the reason when the segment is damaged.
func TestStoreChecksReportTheVectorSource(t *testing.T) {
	ctx := context.Background()
	cfg, err := config.Load("", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	vectors := func() string {
		t.Helper()
		for _, c := range StoreChecks(ctx, cfg) {
			if c.Name == "vectors" {
				return c.Detail
			}
		}
		t.Fatal("no vectors check")
		return ""
	}
	// No store yet: the checks run on a scratch one, new, and make none.
	if got := vectors(); !strings.Contains(got, "from the database") || !strings.Contains(got, "(a new store: normal on a first start)") {
		t.Fatalf("a new store: %q", got)
	}
	if _, err := os.Stat(cfg.DBPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the checks made a store at %s (%v)", cfg.DBPath, err)
	}
	_, st, err := storeopen.Engine(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	// That open closed cleanly: the next reads the segment.
	if got := vectors(); !strings.Contains(got, "from the segment") {
		t.Fatalf("after a clean close: %q", got)
	}
	path := filepath.Join(cfg.DBPath, sqlitestore.SegmentFile)
	if err := os.WriteFile(path, []byte("not a segment at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := vectors(); !strings.Contains(got, "from the database") || !strings.Contains(got, "bad segment") {
		t.Fatalf("a damaged segment: %q", got)
	}
}

// The vectors check names the int8 mode and whether the vectors are
// mapped yet, and fails with a fix when moving them to the segment failed.
func TestVectorsCheckInt8(t *testing.T) {
	base := sqlitestore.VectorSource{From: "segment", Memory: "int8", Mapped: true}
	if c := VectorsCheck(base); !c.OK || !strings.Contains(c.Detail, "int8 memory mode, float32 vectors mapped from the segment") {
		t.Fatalf("mapped: %+v", c)
	}
	unmapped := base
	unmapped.Mapped = false
	if c := VectorsCheck(unmapped); !c.OK || !strings.Contains(c.Detail, "NOT yet mapped") {
		t.Fatalf("not mapped: %+v", c)
	}
	failed := unmapped
	failed.SpillError = "no space left on device"
	if c := VectorsCheck(failed); c.OK || !strings.Contains(c.Detail, "no space left on device") || c.Fix == "" {
		t.Fatalf("spill failed: %+v", c)
	}
	if c := VectorsCheck(sqlitestore.VectorSource{From: "segment", Memory: "float32", Mapped: true}); strings.Contains(c.Detail, "int8") {
		t.Fatalf("float32: %+v", c)
	}
}
