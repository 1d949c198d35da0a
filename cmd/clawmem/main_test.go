package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clawmem/clawmem/config"
	"github.com/clawmem/clawmem/engine/memory"
	"github.com/clawmem/clawmem/internal/storeopen"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb}
	root := a.rootCmd()
	root.SetArgs(args)
	code := 0
	if err := root.Execute(); err != nil {
		code = 1
		if _, silent := err.(errSilent); !silent {
			errb.WriteString(err.Error())
		}
	}
	return code, out.String(), errb.String()
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version", "--json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] != Version {
		t.Fatalf("version: %d %q", code, out)
	}
}

func TestDoctorOnDefaults(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "doctor", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("doctor failed: %s %s", out, errOut)
	}
	for _, want := range []string{"[ok  ] config", "[ok  ] embedder  local-lexical answers with 384 dimensions", "[ok  ] store", "full-text search on"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestDoctorReportsProblems(t *testing.T) {
	dir := t.TempDir()
	// A store of 384 dimensions, for the mismatch: doctor makes none, an
	// in-process command on the data dir's store does.
	if code, _, errOut := runCLI(t, "stats", "--data-dir", dir); code != 0 {
		t.Fatalf("stats: %s", errOut)
	}
	cases := []struct {
		name, config, want string
	}{
		{"dimension mismatch", `{"embedding":{"provider":"local","dimensions":512}}`, "vector dimension mismatch: table=384, config=512"},
		{"dead endpoint", `{"embedding":{"baseURL":"http://127.0.0.1:1/v1","model":"nomic-embed-text"}}`, "check embedding.baseURL"},
		{"unknown model", `{"embedding":{"baseURL":"http://127.0.0.1:1/v1","model":"mystery-model"}}`, "embedding.dimensions"},
		{"unset env", `{"embedding":{"apiKey":"${CLAWMEM_TEST_UNSET_KEY}","model":"nomic-embed-text"}}`, "CLAWMEM_TEST_UNSET_KEY"},
		{"unknown key", `{"embeding":{}}`, "did you mean"},
		{"bad json", `{`, "config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(cfg, []byte(c.config), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI(t, "doctor", "--data-dir", dir, "--config", cfg, "--json")
			if code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			if !strings.Contains(out+errOut, c.want) {
				t.Fatalf("output lacks %q:\n%s%s", c.want, out, errOut)
			}
		})
	}
}

func TestSearchExplain(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Load("", dir)
	if err != nil {
		t.Fatal(err)
	}
	eng, st, err := storeopen.Engine(context.Background(), cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"We deploy with Docker compose on the build server", "I prefer oolong tea in the morning", "Set JINA_API_KEY in the systemd unit"} {
		if _, err := eng.Store(context.Background(), memory.Admin(), memory.StoreRequest{Text: text}, memory.DedupTool); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errOut := runCLI(t, "search", "docker compose", "--data-dir", dir, "--explain")
	if code != 0 {
		t.Fatalf("search failed: %s", errOut)
	}
	for _, want := range []string{"1. [", "Docker compose", "vector ", "bm25 ", "fused ", "reranked ", "final "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "search", "JINA_API_KEY", "--data-dir", dir, "--json")
	var res struct {
		Details struct {
			Memories []struct {
				Text    string
				Sources struct{ BM25Hit bool }
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Details.Memories) == 0 ||
		!strings.Contains(res.Details.Memories[0].Text, "JINA_API_KEY") || !res.Details.Memories[0].Sources.BM25Hit {
		t.Fatalf("json search: %d %s", code, out)
	}
	if code, _, errOut := runCLI(t, "search", "x", "--data-dir", dir, "--agent", "a.b"); code != 1 || !strings.Contains(errOut, "agent id") {
		t.Fatalf("bad agent: %d %s", code, errOut)
	}
}

// search --explain names the superseded memory a result was found through,
// in the text and the JSON.
func TestSearchExplainShowsReplaced(t *testing.T) {
	dir := t.TempDir()
	ms := seedTexts(t, dir, "Remember that my dog is called Rex", "I prefer oolong tea in the morning", "I live in Paris", "I moved to Berlin")
	paris := ms[2].ID
	code, out, errOut := runCLI(t, "search", "where do I live", "--data-dir", dir, "--explain")
	if code != 0 {
		t.Fatalf("search: %s", errOut)
	}
	first, _, _ := strings.Cut(strings.SplitN(out, "\n", 2)[1], "\n      ")
	if !strings.Contains(first, "I moved to Berlin") || !strings.Contains(out, "  replaced "+paris[:8]) {
		t.Errorf("explain lacks Berlin first, replaced %s:\n%s", paris[:8], out)
	}
	code, out, _ = runCLI(t, "search", "where do I live", "--data-dir", dir, "--json")
	var res struct {
		Details struct {
			Memories []struct {
				Text    string
				Sources struct{ Replaced string }
			}
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Details.Memories) == 0 ||
		res.Details.Memories[0].Text != "I moved to Berlin" || res.Details.Memories[0].Sources.Replaced != paris {
		t.Fatalf("json search: %d %s", code, out)
	}
}
